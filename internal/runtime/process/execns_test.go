package process

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/process/launch"
)

// An exec in a running container runs in the container's own mount and
// UTS namespaces, as runc's exec joins its container's (and the kubelet
// runs hooks and probes through the runtime's exec, so they do too): it
// sees a tmpfs the container mounted itself over a directory of its
// emptyDir, finds its command on the container's PATH inside that mount,
// changes to a working directory there as the container sees it, and sees
// the host name the container set. So does an exec through an agent that
// restarted (a new Runtime on the root, which found the container's
// process in its instance directory).
func TestExecJoinsTheContainersNamespaces(t *testing.T) {
	if !launch.CanUnshareUTS() {
		t.Skip("needs mount and UTS namespaces (root)")
	}
	root := t.TempDir()
	h := newHarnessAt(t, root)
	data := filepath.Join(t.TempDir(), "data")
	own := filepath.Join(data, "own")
	c := shell("app", `mount -t tmpfs none `+own+` &&
printf '#!/bin/sh\necho tool-in-the-container-mount\n' > `+own+`/tool && chmod +x `+own+`/tool &&
echo seen-through-the-mount > `+own+`/f && hostname renamed-by-app && echo ready; exec sleep 100`)
	c.Env = []v1.EnvVar{{Name: "PATH", Value: own + ":/usr/bin:/bin"}}
	c.WorkingDir = own
	// It mounts and names its host: CAP_SYS_ADMIN.
	c.SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true)}
	pod := dataPod(t, c, data)
	h.prepare(pod)
	// The working directory exists before the container mounts over it.
	if err := os.Mkdir(filepath.Join(h.r.volumeDir(pod.UID, "data"), "own"), 0o755); err != nil {
		t.Fatal(err)
	}
	cont := h.start(pod, 0)
	h.waitOutput("app", "ready")
	ref := model.ContainerRef{Name: "app", Role: model.RoleMain}
	const script = `cat f; tool; cat /proc/sys/kernel/hostname`
	want := "seen-through-the-mount\ntool-in-the-container-mount\nrenamed-by-app\n"

	out, code, err := h.r.Exec(context.Background(), pod, ref, []string{"sh", "-c", script})
	if err != nil || code != 0 || string(out) != want {
		t.Errorf("Exec = %q, %d, %v; want %q", out, code, err, want)
	}
	var stdout, stderr strings.Builder
	code, err = h.r.ExecStream(context.Background(), pod, ref, []string{"sh", "-c", script}, runtime.ExecStreams{Stdout: &stdout, Stderr: &stderr})
	if err != nil || code != 0 || stdout.String() != want {
		t.Errorf("ExecStream = %q (stderr %q), %d, %v; want %q", stdout.String(), stderr.String(), code, err, want)
	}
	if _, err := os.Stat(filepath.Join(own, "f")); err == nil {
		t.Fatal("the container's tmpfs shows on the host: the test proves nothing")
	}

	// The agent restarts: the next Runtime joins the container it adopted.
	if err := h.r.Close(); err != nil {
		t.Fatal(err)
	}
	h = newHarnessAt(t, root)
	out, code, err = h.r.Exec(context.Background(), pod, ref, []string{"sh", "-c", script})
	if err != nil || code != 0 || string(out) != want {
		t.Errorf("Exec after a restart = %q, %d, %v; want %q", out, code, err, want)
	}
	if err := h.r.Signal(context.Background(), cont.ID, 9); err != nil {
		t.Fatal(err)
	}
	h.waitExit(cont.ID)
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// A container in the host's namespaces (no mounts, no host name of its
// own: what every container of an agent that is not root gets) has its
// execs in the host's too: there is nothing to join, and nothing to make.
func TestExecInAContainerWithoutNamespaces(t *testing.T) {
	h := newHarness(t)
	h.r.uts = false
	h.r.euid = func() int { return 1000 } // no termination-message mount
	pod := newPod(t, shell("app", "echo ready; exec sleep 100"))
	h.prepare(pod)
	cont := h.start(pod, 0)
	h.waitOutput("app", "ready")
	var want string
	for _, ns := range []string{"mnt", "uts"} {
		// This thread's: only a locked thread may be elsewhere.
		link, err := os.Readlink("/proc/thread-self/ns/" + ns)
		if err != nil {
			t.Fatal(err)
		}
		want += link + "\n"
	}
	ref := model.ContainerRef{Name: "app", Role: model.RoleMain}
	out, code, err := h.r.Exec(context.Background(), pod, ref, []string{"readlink", "/proc/self/ns/mnt", "/proc/self/ns/uts"})
	if err != nil || code != 0 || string(out) != want {
		t.Errorf("Exec = %q, %d, %v; want the host's namespaces %q", out, code, err, want)
	}
	if err := h.r.Signal(context.Background(), cont.ID, 9); err != nil {
		t.Fatal(err)
	}
	h.waitExit(cont.ID)
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkExec measures an exec (`true`) in a running container with a
// volume, what an exec probe costs: the CPU this process spends on it
// (agent-ms/op: opening and checking the container's namespaces, the
// fork, pipes and exec record) and its reaped children's (children-ms/op:
// the init helper, which joins the namespaces, and the command).
func BenchmarkExec(b *testing.B) {
	if !launch.CanUnshareUTS() {
		b.Skip("needs mount and UTS namespaces (root)")
	}
	r, err := New(Config{Root: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	c := shell("app", "exec sleep 1000")
	data := filepath.Join(b.TempDir(), "data")
	c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: data}}
	pod := &model.Pod{Pod: &v1.Pod{}}
	pod.Name, pod.Namespace, pod.UID = "bench", "default", "3c1c7f5e-0b5e-4c59-9a43-bench0000001"
	pod.Spec.Containers = []v1.Container{c}
	pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	ctx := context.Background()
	if err := r.PreparePod(ctx, pod); err != nil {
		b.Fatal(err)
	}
	ref := model.ContainerRef{Name: "app", Role: model.RoleMain}
	cont, err := r.StartContainer(ctx, pod, ref, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		_ = r.Signal(ctx, cont.ID, 9)
		for ev := range r.Events() {
			if ev.ID == cont.ID {
				break
			}
		}
		_ = r.CleanupPod(ctx, pod)
	}()
	var self0, kids0 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &self0)
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &kids0)
	b.ResetTimer()
	for b.Loop() {
		if _, code, err := r.Exec(ctx, pod, ref, []string{"true"}); err != nil || code != 0 {
			b.Fatalf("Exec = %d, %v", code, err)
		}
	}
	b.StopTimer()
	var self1, kids1 unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &self1)
	_ = unix.Getrusage(unix.RUSAGE_CHILDREN, &kids1)
	cpu := func(a, z unix.Rusage) float64 {
		d := (z.Utime.Nano() + z.Stime.Nano()) - (a.Utime.Nano() + a.Stime.Nano())
		return float64(d) / 1e6 / float64(b.N)
	}
	b.ReportMetric(cpu(self0, self1), "agent-ms/op")
	b.ReportMetric(cpu(kids0, kids1), "children-ms/op")
}

// dataPod is the pod of c with an emptyDir "data" mounted at dir, where
// the namespace tests' container mounts a tmpfs of its own.
func dataPod(t *testing.T, c v1.Container, dir string) *model.Pod {
	t.Helper()
	c.VolumeMounts = append(c.VolumeMounts, v1.VolumeMount{Name: "data", MountPath: dir})
	pod := newPod(t, c)
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
	return pod
}
