package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podspec"
)

// Integration tests against a real CRI runtime, at PODWARD_CRI_ENDPOINT,
// with the image PODWARD_CRI_TEST_IMAGE (a busybox; default
// docker.io/library/busybox:latest, which hack/cri-up.sh serves), pulled
// when missing. Without an endpoint they skip, or fail with
// PODWARD_REQUIRE_CRI=1 (hack/with-cri.sh sets both).

func criEndpoint(t testing.TB) string {
	t.Helper()
	ep := os.Getenv("PODWARD_CRI_ENDPOINT")
	if ep == "" {
		if os.Getenv("PODWARD_REQUIRE_CRI") == "1" {
			t.Fatal("PODWARD_CRI_ENDPOINT not set and PODWARD_REQUIRE_CRI=1: run the tests under hack/with-cri.sh")
		}
		t.Skip("PODWARD_CRI_ENDPOINT not set: run hack/cri-up.sh (root) to test against containerd")
	}
	return ep
}

func testImage() string {
	if img := os.Getenv("PODWARD_CRI_TEST_IMAGE"); img != "" {
		return img
	}
	return "docker.io/library/busybox:latest"
}

// outputLog collects Config.Output's lines.
type outputLog struct {
	mu    sync.Mutex
	lines map[string][]string // by container
}

func (o *outputLog) add(_ *model.Pod, container, stream string, line []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.lines == nil {
		o.lines = map[string][]string{}
	}
	o.lines[container] = append(o.lines[container], stream+": "+string(line))
}

func (o *outputLog) get(container string) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.lines[container])
}

// realRuntime opens a Runtime on the real CRI runtime, with a real clock.
func realRuntime(t testing.TB, root string, out *outputLog) *Runtime {
	t.Helper()
	cfg := Config{Endpoint: criEndpoint(t), Root: root, Logger: testLogger(), RelistPeriod: time.Second}
	if out != nil {
		cfg.Output = out.add
	}
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// realPod is a pod with a unique UID whose containers run script in sh.
func realPod(t testing.TB, name string, scripts map[string]string, order ...string) *model.Pod {
	p := &model.Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "podward-test", UID: types.UID(uuid.NewString())},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](5),
			Volumes:                       []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}}
	for _, n := range order {
		c := v1.Container{
			Name: n, Image: testImage(), Command: []string{"sh", "-c", scripts[n]},
			VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
		}
		if strings.HasPrefix(n, "init") {
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		} else {
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
	}
	model.Default(p)
	return p
}

// setUp pulls the image when missing, prepares the pod and cleans it up
// with r when the test ends (killing what still runs).
func setUp(t testing.TB, r *Runtime, pod *model.Pod) {
	t.Helper()
	prepare(t, r, pod)
	t.Cleanup(func() { cleanUp(t, r, pod) })
}

// prepare pulls the image when missing and prepares the pod.
func prepare(t testing.TB, r *Runtime, pod *model.Pod) {
	t.Helper()
	ctx := context.Background()
	if err := r.Check(pod); err != nil {
		t.Fatal(err)
	}
	present, err := r.ImagePresent(ctx, testImage())
	if err != nil {
		t.Fatal(err)
	}
	if !present {
		pulled, err := r.PullImage(ctx, pod, testImage())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("pulled %s: %+v", testImage(), pulled)
	}
	if err := r.PreparePod(ctx, pod); err != nil {
		t.Fatal(err)
	}
}

func cleanUp(t testing.TB, r *Runtime, pod *model.Pod) {
	ctx := context.Background()
	list, err := r.ListContainers(ctx, pod.UID)
	if err != nil {
		t.Errorf("cleanup: %v", err)
	}
	for _, c := range list {
		if c.Exit == nil {
			_ = r.Signal(ctx, c.ID, syscall.SIGKILL)
		}
	}
	if err := r.CleanupPod(ctx, pod); err != nil {
		t.Errorf("cleanup: %v", err)
	}
}

// waitExit waits for the exit event of id.
func waitExit(t testing.TB, r *Runtime, id string, within time.Duration) runtime.Event {
	t.Helper()
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		select {
		case ev := <-r.Events():
			if ev.ID == id {
				return ev
			}
			t.Logf("exit of another container: %+v", ev)
		case <-deadline.C:
			t.Fatalf("no exit event for %s within %v", id, within)
		}
	}
}

func startIn(t testing.TB, r *Runtime, pod *model.Pod, name string, attempt int) runtime.Container {
	t.Helper()
	c, err := r.StartContainer(context.Background(), pod, ref(pod, name), attempt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func readLog(t testing.TB, path string) []string {
	t.Helper()
	var lines []string
	err := crilog.ReadLog(context.Background(), path, crilog.ReadOptions{Tail: crilog.AllLines}, func(l crilog.Line) error {
		lines = append(lines, l.Stream+": "+string(l.Content))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func TestIntegrationPodLifecycle(t *testing.T) {
	out := &outputLog{}
	r := realRuntime(t, t.TempDir(), out)
	name, version, err := r.Version(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("CRI runtime %s %s", name, version)
	if err := r.Status(context.Background()); err != nil {
		t.Fatal(err)
	}
	pod := realPod(t, "lifecycle", map[string]string{
		"init": "echo init-ran > /data/msg; echo init says hi",
		"main": "cat /data/msg; echo pid=$$$$; echo to-stderr >&2; exit 3",
	}, "init", "main")
	setUp(t, r, pod)

	t0 := time.Now()
	init := startIn(t, r, pod, "init", 0)
	ev := waitExit(t, r, init.ID, 10*time.Second)
	t.Logf("init: started→event %v", time.Since(t0))
	if ev.Exit.ExitCode != 0 || ev.Exit.Reason != runtime.ReasonCompleted || ev.Container != "init" || ev.PodUID != pod.UID {
		t.Fatalf("init exit = %+v", ev)
	}
	if got, want := out.get("init"), []string{"stdout: init says hi"}; !slices.Equal(got, want) {
		t.Errorf("init output before its exit event = %q, want %q", got, want)
	}
	main := startIn(t, r, pod, "main", 0)
	ev = waitExit(t, r, main.ID, 10*time.Second)
	if ev.Exit.ExitCode != 3 || ev.Exit.Reason != runtime.ReasonError || ev.Exit.FinishedAt.Before(main.StartedAt) {
		t.Fatalf("main exit = %+v (started %v)", ev, main.StartedAt)
	}
	// stdout and stderr are two pipes: their lines may interleave
	// either way.
	want := []string{"stderr: to-stderr", "stdout: init-ran", "stdout: pid=1"}
	if got := out.get("main"); !slices.Equal(sortedStable(got), want) {
		t.Errorf("main output before its exit event = %q, want %q", got, want)
	}
	if main.LogPath != r.LogPath(pod.UID, "main", 0) {
		t.Errorf("LogPath %q != %q", main.LogPath, r.LogPath(pod.UID, "main", 0))
	}
	if got := readLog(t, main.LogPath); !slices.Equal(sortedStable(got), want) {
		t.Errorf("main log = %q, want %q", got, want)
	}
	list, err := r.ListContainers(context.Background(), pod.UID)
	if err != nil || len(list) != 2 || list[0].Container != "init" || list[1].Exit == nil || list[1].Exit.ExitCode != 3 {
		t.Fatalf("ListContainers = %+v, %v", list, err)
	}
	uids, err := r.ListPods()
	if err != nil || !slices.Contains(uids, pod.UID) {
		t.Fatalf("ListPods = %v, %v", uids, err)
	}

	if err := r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	sbs, err := r.rt.ListPodSandbox(context.Background(), &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{LabelPodUID: string(pod.UID)}},
	})
	if err != nil || len(sbs.Items) != 0 {
		t.Fatalf("sandboxes after CleanupPod: %v, %v", sbs.GetItems(), err)
	}
	matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/*", podspec.PodCgroup(r.cgroupParent, pod)))
	if len(matches) != 0 {
		t.Errorf("cgroups left after CleanupPod: %v", matches)
	}
	if _, err := os.Stat(main.LogPath); err != nil {
		t.Errorf("log gone after CleanupPod: %v", err)
	}
	if uids, _ := r.ListPods(); slices.Contains(uids, pod.UID) {
		t.Errorf("ListPods after CleanupPod still has the pod")
	}
	if logs, err := r.PodLogs(); err != nil || logs[pod.UID].IsZero() {
		t.Errorf("PodLogs after CleanupPod = %v, %v; want the pod's", logs, err)
	}
	if err := r.RemovePodLogs(context.Background(), pod.UID); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(r.podDir(pod.UID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the pod's directory is left after RemovePodLogs: %v", err)
	}
}

// A subPath on a real CRI runtime: the container sees the directory it
// names, through the bind mount on the pod's volume-subpaths (the
// kubelet's layout); one that a symlink a container planted leads out of
// the volume is refused, with nothing created on the host, as the kubelet
// does since CVE-2017-1002101 (pkg/volume/util/subpath/subpath_linux.go);
// CleanupPod leaves no mount behind.
func TestIntegrationSubPath(t *testing.T) {
	r := realRuntime(t, t.TempDir(), nil)
	escape := "podward-escape-" + uuid.NewString()
	pod := realPod(t, "subpath", map[string]string{
		"init":   "mkdir -p /data/sub && echo in-sub > /data/sub/file && ln -s / /data/evil",
		"main":   "cat /sub/file",
		"escape": "true",
	}, "init", "main", "escape")
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, v1.VolumeMount{Name: "data", MountPath: "/sub", SubPath: "sub"})
	pod.Spec.Containers[1].VolumeMounts = append(pod.Spec.Containers[1].VolumeMounts, v1.VolumeMount{Name: "data", MountPath: "/out", SubPath: "evil/" + escape})
	setUp(t, r, pod)

	init := startIn(t, r, pod, "init", 0)
	if ev := waitExit(t, r, init.ID, 10*time.Second); ev.Exit.ExitCode != 0 {
		t.Fatalf("init exit = %+v: %q", ev, readLog(t, init.LogPath))
	}
	main := startIn(t, r, pod, "main", 0)
	if ev := waitExit(t, r, main.ID, 10*time.Second); ev.Exit.ExitCode != 0 {
		t.Fatalf("main exit = %+v: %q", ev, readLog(t, main.LogPath))
	}
	if got, want := readLog(t, main.LogPath), []string{"stdout: in-sub"}; !slices.Equal(got, want) {
		t.Errorf("main log = %q, want %q", got, want)
	}
	_, err := r.StartContainer(context.Background(), pod, ref(pod, "escape"), 0)
	// The kubelet's makeMounts refusal: CreateContainerConfigError, with
	// its message; the cause stays in the error.
	var cfgErr *runtime.ContainerConfigError
	if !errors.As(err, &cfgErr) || cfgErr.Message != `failed to create subPath directory for volumeMount "data" of container "escape"` || !errors.Is(err, hostfs.ErrLeavesVolume) {
		t.Fatalf("StartContainer with a subPath through a symlink to / = %v, want it refused with a ContainerConfigError", err)
	}
	if _, err := os.Lstat("/" + escape); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("/%s was created on the host (%v)", escape, err)
		_ = os.Remove("/" + escape)
	}

	if err := r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if dir := filepath.Join(r.podDir(pod.UID), "volume-subpaths"); strings.Contains(string(mounts), dir) {
		t.Errorf("mounts left under %s after CleanupPod", dir)
	}
}

// sortedStable sorts lines by stream, keeping each stream's order.
func sortedStable(lines []string) []string {
	s := slices.Clone(lines)
	slices.SortStableFunc(s, func(a, b string) int {
		return strings.Compare(strings.SplitN(a, ":", 2)[0], strings.SplitN(b, ":", 2)[0])
	})
	return s
}

func TestIntegrationStop(t *testing.T) {
	r := realRuntime(t, t.TempDir(), nil)
	pod := realPod(t, "stop", map[string]string{
		// The trap needs a shell that is not waiting in a foreground
		// command: sleep in the background and wait.
		"trapper": "trap 'echo got-term; exit 0' TERM; echo ready; sleep 300 & wait",
		// sh execs sleep, PID 1 of its namespace: SIGTERM does nothing.
		"ignorer": "exec sleep 300",
		"killed":  "exec sleep 300",
	}, "trapper", "ignorer", "killed")
	setUp(t, r, pod)
	ctx := context.Background()
	trapper := startIn(t, r, pod, "trapper", 0)
	ignorer := startIn(t, r, pod, "ignorer", 0)
	killed := startIn(t, r, pod, "killed", 0)
	waitLog(t, trapper.LogPath, "ready")

	t0 := time.Now()
	if err := r.StopContainer(ctx, trapper.ID, syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(t0); d > time.Second {
		t.Errorf("StopContainer took %v: it should return once issued", d)
	}
	ev := waitExit(t, r, trapper.ID, 10*time.Second)
	t.Logf("trapped SIGTERM: exit %+v after %v", ev.Exit, time.Since(t0))
	if ev.Exit.ExitCode != 0 || !slices.Contains(readLog(t, trapper.LogPath), "stdout: got-term") {
		t.Errorf("trapper exit %+v, log %q", ev.Exit, readLog(t, trapper.LogPath))
	}

	t0 = time.Now()
	if err := r.StopContainer(ctx, ignorer.ID, syscall.SIGTERM, 2*time.Second); err != nil {
		t.Fatal(err)
	}
	ev = waitExit(t, r, ignorer.ID, 15*time.Second)
	d := time.Since(t0)
	t.Logf("ignored SIGTERM: exit %+v after %v", ev.Exit, d)
	if ev.Exit.ExitCode != 137 || d < 2*time.Second {
		t.Errorf("ignorer exit %+v after %v, want 137 after the 2 s timeout", ev.Exit, d)
	}

	t0 = time.Now()
	if err := r.Signal(ctx, killed.ID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ev = waitExit(t, r, killed.ID, 5*time.Second)
	t.Logf("SIGKILL: exit %+v after %v", ev.Exit, time.Since(t0))
	if ev.Exit.ExitCode != 137 {
		t.Errorf("killed exit %+v", ev.Exit)
	}
	if err := r.Signal(ctx, killed.ID, syscall.SIGKILL); err != nil {
		t.Errorf("SIGKILL of an exited container: %v", err)
	}
	if err := r.Signal(ctx, killed.ID, syscall.SIGTERM); !errors.Is(err, runtime.ErrUnsupported) {
		t.Errorf("SIGTERM: %v", err)
	}
	if err := r.Signal(ctx, "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", syscall.SIGKILL); !errors.Is(err, runtime.ErrNotFound) {
		t.Errorf("SIGKILL of an unknown container: %v, want ErrNotFound", err)
	}
}

// waitLog waits until the log at path has a line containing s.
func waitLog(t testing.TB, path, s string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	found := errors.New("found")
	err := crilog.ReadLog(ctx, path, crilog.ReadOptions{Follow: true, Tail: crilog.AllLines}, func(l crilog.Line) error {
		if strings.Contains(string(l.Content), s) {
			return found
		}
		return nil
	})
	if err != found {
		t.Fatalf("no %q in %s: %v", s, path, err)
	}
}

func TestIntegrationExec(t *testing.T) {
	r := realRuntime(t, t.TempDir(), nil)
	pod := realPod(t, "exec", map[string]string{"main": "echo ready; exec sleep 300"}, "main")
	setUp(t, r, pod)
	c := startIn(t, r, pod, "main", 0)
	waitLog(t, c.LogPath, "ready")
	app := ref(pod, "main")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	out, code, err := r.Exec(ctx, pod, app, []string{"sh", "-c", "echo out; echo err >&2; exit 4"})
	if err != nil || code != 4 || string(out) != "out\nerr\n" {
		t.Fatalf("Exec = %q, %d, %v", out, code, err)
	}
	// The host's network namespace, by default.
	out, _, err = r.Exec(ctx, pod, app, []string{"readlink", "/proc/self/ns/net"})
	host, _ := os.Readlink("/proc/self/ns/net")
	if err != nil || strings.TrimSpace(string(out)) != host {
		t.Errorf("network namespace %q (%v), host's %q", out, err, host)
	}
	t0 := time.Now()
	short, cancel2 := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel2()
	_, _, err = r.Exec(short, pod, app, []string{"sleep", "30"})
	t.Logf("exec past its deadline: %v after %v", err, time.Since(t0))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) > 5*time.Second {
		t.Errorf("exec past its deadline: %v after %v", err, time.Since(t0))
	}
	if _, _, err := r.Exec(ctx, pod, app, []string{"/nonexistent"}); err == nil {
		t.Errorf("exec of a missing binary succeeded")
	} else {
		t.Logf("exec of a missing binary: %v", err)
	}
}

func TestIntegrationReadoption(t *testing.T) {
	root := t.TempDir()
	out1 := &outputLog{}
	r1 := realRuntime(t, root, out1)
	pod := realPod(t, "adopt", map[string]string{
		"main":  "trap 'echo bye; exit 7' TERM; echo hello; sleep 300 & wait",
		"early": "echo waiting; while [ ! -e /data/go ]; do sleep 0.05; done; echo gone; exit 5",
	}, "main", "early")
	prepare(t, r1, pod)
	main := startIn(t, r1, pod, "main", 0)
	early := startIn(t, r1, pod, "early", 0)
	waitLog(t, main.LogPath, "hello")
	waitLog(t, early.LogPath, "waiting")
	r1.Close()

	// While no Runtime watches, early exits.
	if err := os.WriteFile(filepath.Join(r1.volumeDir(pod.UID, "data"), "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	waitLog(t, early.LogPath, "gone")
	out2 := &outputLog{}
	var r2 *Runtime
	// The exit is seen by the runtime shortly after the log line.
	for deadline := time.Now().Add(10 * time.Second); ; {
		r := realRuntime(t, root, out2)
		list, err := r.ListContainers(context.Background(), pod.UID)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(list, func(c runtime.ContainerStatus) bool { return c.ID == early.ID }); i >= 0 && list[i].Exit != nil {
			r2 = r
			break
		}
		r.Close()
		if time.Now().After(deadline) {
			t.Fatal("early never exited")
		}
	}
	t.Cleanup(func() { cleanUp(t, r2, pod) })
	uids, err := r2.ListPods()
	if err != nil || !slices.Contains(uids, pod.UID) {
		t.Fatalf("ListPods = %v, %v", uids, err)
	}
	list, err := r2.ListContainers(context.Background(), pod.UID)
	if err != nil || len(list) != 2 {
		t.Fatalf("ListContainers = %+v, %v", list, err)
	}
	for _, c := range list {
		switch c.ID {
		case main.ID:
			if c.Exit != nil || c.Container != "main" || c.Attempt != 0 || !c.StartedAt.Equal(main.StartedAt) || c.LogPath != main.LogPath {
				t.Errorf("main = %+v, started %v", c, main.StartedAt)
			}
		case early.ID:
			if c.Exit == nil || c.Exit.ExitCode != 5 {
				t.Errorf("early = %+v", c)
			}
		}
	}
	if err := r2.StopContainer(context.Background(), main.ID, syscall.SIGTERM, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	ev := waitExit(t, r2, main.ID, 10*time.Second)
	if ev.Exit.ExitCode != 7 || ev.Container != "main" || ev.PodUID != pod.UID {
		t.Errorf("main exit = %+v", ev)
	}
	if got := out2.get("main"); !slices.Equal(got, []string{"stdout: bye"}) {
		t.Errorf("output after the re-adoption = %q", got)
	}
	select {
	case ev := <-r2.Events():
		t.Errorf("unexpected event: %+v", ev)
	default:
	}
}

// TestIntegrationTerminationMessage: what a container writes at its
// terminationMessagePath (the default /dev/termination-log, or a path of
// its own) is its exit's message, read from the file the runtime mounted
// there, as the kubelet does (kuberuntime_container.go, makeMounts and
// getTerminationMessage); with FallbackToLogsOnError a failure with an
// empty file gets the log's tail.
func TestIntegrationTerminationMessage(t *testing.T) {
	r := realRuntime(t, t.TempDir(), nil)
	pod := realPod(t, "message", map[string]string{
		"file":     "printf 'bye from %s' $(hostname) > /dev/termination-log",
		"custom":   "echo custom path > /tmp/msg; exit 4",
		"fallback": "echo about to fail; echo boom >&2; exit 1",
	}, "file", "custom", "fallback")
	custom := pod.Container(ref(pod, "custom"))
	custom.TerminationMessagePath = "/tmp/msg"
	fallback := pod.Container(ref(pod, "fallback"))
	fallback.TerminationMessagePolicy = v1.TerminationMessageFallbackToLogsOnError
	setUp(t, r, pod)
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"file":     "bye from " + host,
		"custom":   "custom path\n",
		"fallback": "about to fail\nboom\n",
	}
	for _, name := range []string{"file", "custom", "fallback"} {
		c := startIn(t, r, pod, name, 0)
		ev := waitExit(t, r, c.ID, 10*time.Second)
		if name == "fallback" {
			// Two pipes: the lines may come in either order.
			if ev.Exit.Message != want[name] && ev.Exit.Message != "boom\nabout to fail\n" {
				t.Errorf("%s: exit message %q, want %q", name, ev.Exit.Message, want[name])
			}
			continue
		}
		if ev.Exit.Message != want[name] {
			t.Errorf("%s: exit message %q, want %q", name, ev.Exit.Message, want[name])
		}
	}
	list, err := r.ListContainers(context.Background(), pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range list {
		if cs.Exit == nil || cs.Container != "fallback" && cs.Exit.Message != want[cs.Container] {
			t.Errorf("ListContainers: %s exited %+v, want message %q", cs.Container, cs.Exit, want[cs.Container])
		}
	}
}

// TestIntegrationLogRotation rotates a running container's log the
// kubelet's way against the real CRI runtime: renamed, then
// ReopenContainerLog makes the runtime write a new file at the path. The
// Output follower goes on in each new file and gets every line once, in
// order; the rotated files are kept as the policy says.
func TestIntegrationLogRotation(t *testing.T) {
	lines := make(chan string, 1000)
	cfg := Config{
		Endpoint: criEndpoint(t), Root: t.TempDir(), Logger: testLogger(), RelistPeriod: time.Second,
		Output: func(_ *model.Pod, _, stream string, line []byte) {
			lines <- stream + ": " + string(line)
		},
		LogRotation: crilog.Rotation{MaxSize: 1000, MaxFiles: 3}, LogRotationPeriod: 200 * time.Millisecond,
	}
	r, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	const n = 300
	pod := realPod(t, "rotate", map[string]string{
		"main": "i=0; while [ $i -lt 300 ]; do i=$((i+1)); echo \"line $i of the rotated log\"; sleep 0.01; done; exec sleep 300",
	}, "main")
	setUp(t, r, pod)
	c := startIn(t, r, pod, "main", 0)
	timeout := time.After(30 * time.Second)
	for i := range n {
		want := fmt.Sprintf("stdout: line %d of the rotated log", i+1)
		select {
		case got := <-lines:
			if got != want {
				t.Fatalf("output line %d is %q, want %q", i, got, want)
			}
		case <-timeout:
			t.Fatalf("no output line %q within 30s", want)
		}
	}
	rotated, err := crilog.RotatedLogs(c.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("rotated files: %q", rotated)
	if len(rotated) == 0 || len(rotated) > 2 {
		t.Fatalf("rotated files %q: want one or two (MaxFiles 3)", rotated)
	}
}

// A container that allocates past its memory limit on a real CRI runtime
// is killed by the OOM killer in its cgroup (the limit passed as the
// kubelet passes it, LinuxContainerResources.memory_limit_in_bytes, under
// the pod's cgroup parent in the kubelet's QoS layout), and its exit
// carries the runtime's own reason: OOMKilled, exit code 137.
func TestIntegrationOOMKilled(t *testing.T) {
	r := realRuntime(t, t.TempDir(), nil)
	// At most 128 MiB even if the limit did not hold.
	pod := realPod(t, "oom", map[string]string{"hog": "head -c 128m /dev/zero | tail"}, "hog")
	pod.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("16Mi")}
	model.Default(pod)
	setUp(t, r, pod)
	hog := startIn(t, r, pod, "hog", 0)
	ev := waitExit(t, r, hog.ID, 60*time.Second)
	if ev.Exit.Reason != runtime.ReasonOOMKilled || ev.Exit.ExitCode != 137 {
		t.Fatalf("exit = %+v, want OOMKilled, 137: %q", ev.Exit, readLog(t, hog.LogPath))
	}
	matches, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup/memory", podspec.PodCgroup(r.cgroupParent, pod)))
	if len(matches) != 1 {
		t.Errorf("the pod's memory cgroup %s: %v", podspec.PodCgroup(r.cgroupParent, pod), matches)
	}
}
