package cri

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// TestIntegrationProjectedVolumes: configMap, secret and projected volumes
// in a CRI container, read-only, and a ConfigMap's change reaching a
// container that runs (RefreshVolumes).
func TestIntegrationProjectedVolumes(t *testing.T) {
	objs := &objectstest.Objects{}
	objs.Put(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "podward-test", Name: "cfg"}, Data: map[string]string{"greeting": "hello"}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "podward-test", Name: "pw"}, Data: map[string][]byte{"password": []byte("s3cret")}})
	r, err := New(context.Background(), Config{Endpoint: criEndpoint(t), Root: t.TempDir(), Logger: testLogger(), RelistPeriod: time.Second,
		Objects: runtime.Objects{Getter: objs, Tokens: objs}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	pod := realPod(t, "projected", map[string]string{
		"first": `cat /cm/greeting /secret/password /token/token /token/namespace; echo; if touch /cm/x 2>/dev/null; then echo writable; else echo read-only; fi`,
		"main":  `while [ "$(cat /cm/greeting)" != changed ]; do sleep 0.1; done; echo updated`,
	}, "first", "main")
	pod.Spec.Volumes = append(pod.Spec.Volumes,
		v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}},
		v1.Volume{Name: "secret", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "pw"}}},
		v1.Volume{Name: "token", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{Sources: []v1.VolumeProjection{
			{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token"}},
			{DownwardAPI: &v1.DownwardAPIProjection{Items: []v1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
		}}}})
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: "cm", MountPath: "/cm"}, v1.VolumeMount{Name: "secret", MountPath: "/secret"}, v1.VolumeMount{Name: "token", MountPath: "/token"})
	}
	setUp(t, r, pod)
	secretTmpfs, err1 := hostfs.IsTmpfs(r.volumeDir(pod.UID, "secret"))
	cmTmpfs, err2 := hostfs.IsTmpfs(r.volumeDir(pod.UID, "cm"))
	if err := errors.Join(err1, err2); err != nil {
		t.Fatal(err)
	}
	if !secretTmpfs || cmTmpfs {
		t.Error("want the secret volume on a tmpfs, the configMap one on disk")
	}

	first := startIn(t, r, pod, "first", 0)
	if ev := waitExit(t, r, first.ID, 20*time.Second); ev.Exit.ExitCode != 0 {
		t.Fatalf("first exit = %+v: %q", ev, readLog(t, first.LogPath))
	}
	if got, want := readLog(t, first.LogPath), []string{"stdout: hellos3crettoken-1podward-test", "stdout: read-only"}; !slices.Equal(got, want) {
		t.Errorf("first log = %q, want %q", got, want)
	}
	main := startIn(t, r, pod, "main", 0)
	objs.Put(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "podward-test", Name: "cfg"}, Data: map[string]string{"greeting": "changed"}})
	if err := r.RefreshVolumes(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if ev := waitExit(t, r, main.ID, 20*time.Second); ev.Exit.ExitCode != 0 {
		t.Fatalf("main exit = %+v: %q", ev, readLog(t, main.LogPath))
	}
	if got := readLog(t, main.LogPath); !slices.Equal(got, []string{"stdout: updated"}) {
		t.Errorf("main log = %q, want the change seen", got)
	}
}
