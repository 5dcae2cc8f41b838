package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

func configMap(name string, data map[string]string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}, Data: data}
}

// projectedPod mounts a configMap, a secret, a downwardAPI and a projected
// volume with a token under /podward-test-<suffix>/{cm,secret,down,token},
// and runs script.
func projectedPod(t *testing.T, script string) (*model.Pod, string) {
	return projectedPodTB(t, newPod(t, v1.Container{}).UID, randomSuffix(t), script)
}

func projectedPodTB(tb testing.TB, uid types.UID, suffix, script string) (*model.Pod, string) {
	top := "/podward-test-" + suffix
	tb.Cleanup(func() { _ = os.RemoveAll(top) })
	c := shell("main", strings.ReplaceAll(script, "$TOP", top))
	pod := &model.Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: uid},
		Spec:       v1.PodSpec{Containers: []v1.Container{c}},
	}}
	pod.Labels = map[string]string{"app": "web"}
	mounts := []v1.VolumeMount{}
	for _, name := range []string{"cm", "secret", "down", "token"} {
		mounts = append(mounts, v1.VolumeMount{Name: name, MountPath: top + "/" + name})
	}
	pod.Spec.Containers[0].VolumeMounts = mounts
	pod.Spec.Volumes = []v1.Volume{
		{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{
			LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
			Items:                []v1.KeyToPath{{Key: "greeting", Path: "conf/greeting", Mode: ptr.To[int32](0o600)}},
		}}},
		{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "pw"}}},
		{Name: "down", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		}}}},
		{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}},
	}
	return pod, top
}

func newObjects() *objectstest.Objects {
	objs := &objectstest.Objects{}
	objs.Put(configMap("cfg", map[string]string{"greeting": "hello"}),
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pw"}, Data: map[string][]byte{"password": []byte("s3cret")}})
	return objs
}

func TestProjectedVolumesInAContainer(t *testing.T) {
	requireRoot(t)
	objs := newObjects()
	h := newHarnessWith(t, Config{Root: t.TempDir(), Objects: runtime.Objects{Getter: objs, Tokens: objs}})
	pod, top := projectedPod(t, `cat $TOP/cm/conf/greeting $TOP/secret/password $TOP/down/labels $TOP/token/token $TOP/token/namespace; echo; stat -c %a $TOP/cm/conf/greeting; if touch $TOP/cm/new 2>/dev/null; then echo writable; else echo read-only; fi; cat $TOP/greeting`)
	// A subPath of a configMap volume: the file as written at the start.
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "cm", MountPath: top + "/greeting", SubPath: "conf/greeting"})
	if err := h.r.Check(pod); err != nil {
		t.Fatal(err)
	}
	h.prepare(pod)
	h.prepare(pod) // idempotent
	for vol, tmpfs := range map[string]bool{"cm": false, "down": false, "secret": true, "token": true} {
		got, err := hostfs.IsTmpfs(h.r.volumeDir(pod.UID, vol))
		if err != nil {
			t.Fatal(err)
		}
		if got != tmpfs {
			t.Errorf("volume %s on a tmpfs: %v, want %v", vol, got, tmpfs)
		}
	}
	c, ev := h.run(pod, 0)
	got := logLines(t, c.LogPath)
	want := []string{`stdout hellos3cretapp="web"token-1default`, "stdout 600", "stdout read-only", "stdout hello"}
	if ev.Exit.ExitCode != 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("exit %d, log %q; want %q", ev.Exit.ExitCode, got, want)
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h.r.volumesDir(pod.UID)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("volumes after CleanupPod: %v", err)
	}
}

func TestMissingObjectHoldsTheVolumeBack(t *testing.T) {
	objs := &objectstest.Objects{}
	h := newHarnessWith(t, Config{Root: t.TempDir(), Objects: runtime.Objects{Getter: objs}})
	pod := newPod(t, shell("main", "true"))
	pod.Spec.Volumes = []v1.Volume{
		{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		{Name: "opt", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "absent"}, Optional: ptr.To(true)}}},
	}
	err := h.r.PreparePod(context.Background(), pod)
	var ve *runtime.VolumeError
	if !errors.As(err, &ve) || ve.Error() != `MountVolume.SetUp failed for volume "cm" : configmap "cfg" not found` {
		t.Fatalf("PreparePod = %v, want the kubelet's FailedMount message", err)
	}
	objs.Put(configMap("cfg", map[string]string{"k": "v"}))
	h.prepare(pod)
	if data, err := os.ReadFile(filepath.Join(h.r.volumeDir(pod.UID, "cm"), "k")); err != nil || string(data) != "v" {
		t.Errorf("k = %q, %v", data, err)
	}
	if entries, err := os.ReadDir(h.r.volumeDir(pod.UID, "opt")); err != nil || len(entries) != 2 {
		t.Errorf("optional volume of a missing ConfigMap: %v, %v; want only ..data and its directory", entries, err)
	}
}

// TestRefreshVolumesReachesARunningContainer: a changed ConfigMap and a
// changed label are rewritten into the volumes a running container reads.
func TestRefreshVolumesReachesARunningContainer(t *testing.T) {
	requireRoot(t)
	objs := newObjects()
	h := newHarnessWith(t, Config{Root: t.TempDir(), Objects: runtime.Objects{Getter: objs, Tokens: objs}})
	pod, _ := projectedPod(t, `while :; do echo "$(cat $TOP/cm/conf/greeting) $(cat $TOP/down/labels)"; sleep 0.05; done`)
	h.prepare(pod)
	c := h.start(pod, 0)
	h.waitOutput("main", `hello app="web"`)
	objs.Put(configMap("cfg", map[string]string{"greeting": "changed"}))
	next := pod.DeepCopy()
	next.Labels["app"] = "api"
	if err := h.r.RefreshVolumes(context.Background(), &model.Pod{Pod: next, Defer: pod.Defer}); err != nil {
		t.Fatal(err)
	}
	h.waitOutput("main", `changed app="api"`)
	if len(objs.Requests) != 2 || objs.Requests[1].Current != "token-1" {
		t.Errorf("token requests %+v: want the refresh to pass the current token on", objs.Requests)
	}
	if err := h.r.Signal(context.Background(), c.ID, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.waitExit(c.ID)
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkRefreshVolumes(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	objs := newObjects()
	root := b.TempDir()
	r, err := New(Config{Root: root, Objects: runtime.Objects{Getter: objs, Tokens: objs}})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	pod, _ := projectedPodTB(b, "uid-bench", "bench", "true")
	if err := r.PreparePod(context.Background(), pod); err != nil {
		b.Fatal(err)
	}
	defer func() { _ = r.CleanupPod(context.Background(), pod) }()
	file := filepath.Join(r.volumeDir(pod.UID, "cm"), "conf", "greeting")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		want := fmt.Sprintf("v%d", i)
		objs.Put(configMap("cfg", map[string]string{"greeting": want}))
		if err := r.RefreshVolumes(context.Background(), pod); err != nil {
			b.Fatal(err)
		}
		if data, err := os.ReadFile(file); err != nil || string(data) != want {
			b.Fatalf("%s = %q, %v; want %q", file, data, err, want)
		}
	}
}
