package process

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// The test agent: TestMain runs it instead of the tests when testAgentEnv
// is set. It starts one container and blocks until its stdin closes (or it
// is killed), as an agent whose death the tests simulate. With
// testAgentExecEnv, it also runs that script with Exec in the container's
// context meanwhile, without the init helper if testAgentNoUTSEnv is set
// too.
const (
	testAgentEnv       = "_PODWARD_TEST_AGENT"
	testAgentRootEnv   = "_PODWARD_TEST_AGENT_ROOT"
	testAgentUIDEnv    = "_PODWARD_TEST_AGENT_UID"
	testAgentScriptEnv = "_PODWARD_TEST_AGENT_SCRIPT"
	testAgentExecEnv   = "_PODWARD_TEST_AGENT_EXEC"
	testAgentNoUTSEnv  = "_PODWARD_TEST_AGENT_NO_UTS"
	// testAgentOwnPIDsEnv gives the test agent's pod a PID namespace of
	// its own; else it has hostPID, so that the PIDs its container and
	// execs report are the host's, which the tests look for.
	testAgentOwnPIDsEnv = "_PODWARD_TEST_AGENT_OWN_PIDS"
)

func runTestAgent() int {
	r, err := New(Config{Root: os.Getenv(testAgentRootEnv)})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if os.Getenv(testAgentNoUTSEnv) != "" {
		r.uts = false
	}
	pod := &model.Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(os.Getenv(testAgentUIDEnv))},
		Spec: v1.PodSpec{
			Containers: []v1.Container{shell("main", os.Getenv(testAgentScriptEnv))},
			HostPID:    os.Getenv(testAgentOwnPIDsEnv) == "",
		},
	}}
	ctx := context.Background()
	if err := r.PreparePod(ctx, pod); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	c, err := r.StartContainer(ctx, pod, model.ContainerRef{Name: "main", Role: model.RoleMain}, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(c.ID)
	if script := os.Getenv(testAgentExecEnv); script != "" {
		go func() {
			_, _, err := r.Exec(ctx, pod, model.ContainerRef{Name: "main", Role: model.RoleMain}, []string{"/bin/sh", "-c", script})
			fmt.Fprintln(os.Stderr, "test agent: exec returned:", err)
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

// waitLog follows the CRI log at path until a line contains substr, and
// returns that line.
func waitLog(t *testing.T, path, substr string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	found := errors.New("found")
	var line string
	err := crilog.ReadLog(ctx, path, crilog.ReadOptions{Follow: true, Tail: crilog.AllLines}, func(l crilog.Line) error {
		if strings.Contains(string(l.Content), substr) {
			line = string(l.Content)
			return found
		}
		return nil
	})
	if !errors.Is(err, found) {
		t.Fatalf("no line with %q in %s: %v", substr, path, err)
	}
	return line
}

// instanceState reads the state directory of instance id of pod uid, and
// makes sure that the instance's processes do not outlive the test, even
// when it fails.
func instanceState(t *testing.T, r *Runtime, uid types.UID, id string) shim.State {
	t.Helper()
	st, err := shim.Load(r.instanceDir(uid, id))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if st.Container == nil {
			return
		}
		if p, err := shim.OpenProc(st.Container.Process); err == nil {
			_ = unix.Kill(-st.Container.Process.Pid, unix.SIGKILL)
			p.Close()
		}
	})
	return st
}

// pidAfter reads the number after prefix in line.
func pidAfter(t *testing.T, line, prefix string) int {
	t.Helper()
	_, s, ok := strings.Cut(line, prefix)
	if !ok {
		t.Fatalf("line %q has no %q", line, prefix)
	}
	pid, err := strconv.Atoi(strings.Fields(s)[0])
	if err != nil {
		t.Fatalf("line %q: %v", line, err)
	}
	return pid
}

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// writeFIFO writes msg to the FIFO at path once a reader opened it.
func writeFIFO(t *testing.T, path, msg string) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- os.WriteFile(path, []byte(msg), 0o600) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(waitLimit):
		// Be the reader, so that the writer ends.
		if f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			<-done
			f.Close()
		}
		t.Fatalf("nobody read the FIFO %s within %v", path, waitLimit)
	}
}

func TestAttachToRunningContainer(t *testing.T) {
	root := t.TempDir()
	h1 := newHarnessAt(t, root)
	script := `trap 'echo bye; exit 143' TERM; echo ready; sleep 100 & wait`
	pod := newPod(t, shell("main", script))
	h1.prepare(pod)
	ref := model.ContainerRef{Name: "main", Role: model.RoleMain}
	c, err := h1.r.StartContainer(context.Background(), pod, ref, 2)
	if err != nil {
		t.Fatal(err)
	}
	h1.waitOutput("main", "ready")
	// The agent goes away; the container does not.
	if err := h1.r.Close(); err != nil {
		t.Fatal(err)
	}

	h2 := newHarnessAt(t, root)
	ctx := context.Background()
	list, err := h2.r.ListContainers(ctx, pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	want := runtime.ContainerStatus{PodUID: pod.UID, Container: "main", Attempt: 2, ID: c.ID, StartedAt: c.StartedAt, LogPath: c.LogPath}
	if len(list) != 1 || !list[0].StartedAt.Equal(want.StartedAt) {
		t.Fatalf("ListContainers = %+v, want [%+v]", list, want)
	}
	list[0].StartedAt = want.StartedAt
	if list[0] != want {
		t.Fatalf("ListContainers = %+v, want [%+v]", list, want)
	}
	if pods, err := h2.r.ListPods(); err != nil || !slices.Contains(pods, pod.UID) {
		t.Errorf("ListPods = %v, %v; want it to hold %s", pods, err, pod.UID)
	}

	if err := h2.r.Signal(ctx, c.ID, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	ev := h2.waitExit(c.ID)
	if ev.Exit.ExitCode != 143 || ev.PodUID != pod.UID || ev.Container != "main" {
		t.Errorf("exit event %+v, want main of %s with 143", ev, pod.UID)
	}
	// Output, for an instance it attached to, has the lines written since,
	// all of them before the exit event.
	h2.mu.Lock()
	got := h2.output
	h2.mu.Unlock()
	if len(got) != 1 || got[0].line != "bye" || got[0].pod != "web" {
		t.Errorf("Output after attaching = %+v, want only bye", got)
	}
	list, _ = h2.r.ListContainers(ctx, pod.UID)
	if len(list) != 1 || list[0].Exit == nil || list[0].Exit.ExitCode != 143 {
		t.Errorf("ListContainers after the exit = %+v, want exit 143", list)
	}

	if err := h2.r.CleanupPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(h2.r.instancesDir(pod.UID)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("instance directories left after CleanupPod: %v", err)
	}
	if lines := logLines(t, c.LogPath); !slices.Equal(lines, []string{"stdout ready", "stdout bye"}) {
		t.Errorf("log %q", lines)
	}
	if pods, _ := h2.r.ListPods(); slices.Contains(pods, pod.UID) {
		t.Errorf("ListPods = %v after CleanupPod", pods)
	}
}

func TestExitWhileNoRuntimeWatches(t *testing.T) {
	root := t.TempDir()
	h1 := newHarnessAt(t, root)
	fifo := mkfifo(t)
	pod := newPod(t, shell("main", "read x < "+fifo+"; echo got $x; exit 7"))
	h1.prepare(pod)
	c := h1.start(pod, 0)
	if err := h1.r.Close(); err != nil {
		t.Fatal(err)
	}
	shimID := *instanceState(t, h1.r, pod.UID, c.ID).Shim
	writeFIFO(t, fifo, "bye\n")
	if !processGone(t, shimID.Pid) {
		t.Fatal("the shim did not exit after its container")
	}

	h2 := newHarnessAt(t, root)
	list, err := h2.r.ListContainers(context.Background(), pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != c.ID || list[0].Exit == nil {
		t.Fatalf("ListContainers = %+v, want %s exited", list, c.ID)
	}
	if e := list[0].Exit; e.ExitCode != 7 || e.Reason != runtime.ReasonError || e.FinishedAt.Before(c.StartedAt) {
		t.Errorf("exit %+v, want 7 Error finished after %v", e, c.StartedAt)
	}
	if lines := logLines(t, c.LogPath); !slices.Equal(lines, []string{"stdout got bye"}) {
		t.Errorf("log %q", lines)
	}
	// No event for it: the next container's event is the only one.
	other := newPod(t, shell("main", "exit 0"))
	h2.prepare(other)
	oc, _ := h2.run(other, 0)
	if _, ok := h2.events[c.ID]; ok || len(h2.events) != 1 {
		t.Errorf("events %v, want only %s's", h2.events, oc.ID)
	}
	select {
	case ev := <-h2.r.Events():
		t.Errorf("unexpected event %+v", ev)
	default:
	}
}

func TestShimOutlivesItsAgent(t *testing.T) {
	tests := map[string]func(agent *os.Process) error{
		"agent killed": func(agent *os.Process) error { return agent.Kill() },
		// As Ctrl-C on a terminal does: the agent's whole process group.
		"interrupt to the agent's process group": func(agent *os.Process) error {
			return unix.Kill(-agent.Pid, unix.SIGINT)
		},
	}
	for name, kill := range tests {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			fifo := mkfifo(t)
			uid := types.UID("uid-" + randomSuffix(t))
			// A read may see the end of the previous writer's FIFO: it
			// must not end the loop.
			script := `trap 'echo got INT' INT; echo ready; sleep 100 & echo child $!; ` +
				`while :; do read line < ` + fifo + ` && echo "got $line"; done`
			agent, id := startTestAgent(t, root, uid, script)

			logPath := filepath.Join(root, "pods", string(uid), "logs", "main", "0.log")
			child := pidAfter(t, waitLog(t, logPath, "child "), "child ")
			if err := kill(agent.Process); err != nil {
				t.Fatal(err)
			}
			if err := agent.Wait(); err == nil {
				t.Fatal("the test agent exited normally")
			}

			h := newHarnessAt(t, root)
			list, err := h.r.ListContainers(context.Background(), uid)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].ID != id || list[0].Exit != nil {
				t.Fatalf("ListContainers = %+v, want %s running", list, id)
			}
			st := instanceState(t, h.r, uid, id)
			// The shim still writes the log.
			writeFIFO(t, fifo, "ping\n")
			waitLog(t, logPath, "got ping")

			if err := h.r.Signal(context.Background(), id, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			if ev := h.waitExit(id); ev.Exit.ExitCode != 143 {
				t.Errorf("exit code %d, want 143", ev.Exit.ExitCode)
			}
			for what, pid := range map[string]int{"shim": st.Shim.Pid, "container": st.Container.Process.Pid, "container's child": child} {
				if !processGone(t, pid) {
					t.Errorf("%s %d still runs", what, pid)
					_ = unix.Kill(pid, unix.SIGKILL)
				}
			}
			for _, l := range logLines(t, logPath) {
				if strings.Contains(l, "got INT") {
					t.Errorf("the container got the agent's SIGINT: log %q", logLines(t, logPath))
				}
			}
			if err := h.r.CleanupPod(context.Background(), &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}}); err != nil {
				t.Error(err)
			}
		})
	}
}

// startTestAgent runs the test agent in a process group of its own, as a
// shell runs a job, with env added to its environment, and returns it and
// the ID of the container it started.
func startTestAgent(t *testing.T, root string, uid types.UID, script string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	stdin, keepOpen, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { keepOpen.Close() })
	defer stdin.Close()
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	cmd := exec.Command("/proc/self/exe")
	cmd.Env = append(os.Environ(), testAgentEnv+"=1", testAgentRootEnv+"="+root, testAgentUIDEnv+"="+string(uid), testAgentScriptEnv+"="+script)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdoutW, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	stdoutW.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(stdout).ReadString('\n')
		line <- strings.TrimSpace(s)
	}()
	select {
	case id := <-line:
		if id == "" {
			t.Fatal("the test agent did not start its container")
		}
		return cmd, id
	case <-time.After(waitLimit):
		t.Fatalf("the test agent did not start its container within %v", waitLimit)
		return nil, ""
	}
}

func TestShimDeathIsReported(t *testing.T) {
	h := newHarness(t)
	pod := newPod(t, shell("main", "sleep 100 & echo child $!; wait"))
	pod.Spec.HostPID = true // the child's PID is the host's
	h.prepare(pod)
	c := h.start(pod, 0)
	child := pidAfter(t, h.waitOutput("main", "child "), "child ")
	st := instanceState(t, h.r, pod.UID, c.ID)
	if err := unix.Kill(st.Shim.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ev := h.waitExit(c.ID)
	if ev.Exit.ExitCode != 137 || ev.Exit.Reason != runtime.ReasonStatusUnknown {
		t.Errorf("exit %+v, want 137 %s", ev.Exit, runtime.ReasonStatusUnknown)
	}
	// Nothing of the container runs unsupervised.
	for what, pid := range map[string]int{"container": st.Container.Process.Pid, "container's child": child} {
		if !processGone(t, pid) {
			t.Errorf("%s %d still runs", what, pid)
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	// The runtime recorded the exit for the next one.
	if exit, err := shim.LoadExit(h.r.instanceDir(pod.UID, c.ID)); err != nil || exit == nil || exit.Reason != runtime.ReasonStatusUnknown {
		t.Errorf("exit.json = %+v, %v", exit, err)
	}
}

func TestShimDeathWhileNoRuntimeWatches(t *testing.T) {
	root := t.TempDir()
	h1 := newHarnessAt(t, root)
	pod := newPod(t, shell("main", "sleep 100 & echo child $!; wait"))
	pod.Spec.HostPID = true // the child's PID is the host's
	h1.prepare(pod)
	c := h1.start(pod, 0)
	child := pidAfter(t, h1.waitOutput("main", "child "), "child ")
	if err := h1.r.Close(); err != nil {
		t.Fatal(err)
	}
	st := instanceState(t, h1.r, pod.UID, c.ID)
	if err := unix.Kill(st.Shim.Pid, unix.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !processGone(t, st.Shim.Pid) {
		t.Fatal("the shim survived SIGKILL")
	}

	h2 := newHarnessAt(t, root)
	list, err := h2.r.ListContainers(context.Background(), pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Exit == nil || list[0].Exit.ExitCode != 137 || list[0].Exit.Reason != runtime.ReasonStatusUnknown {
		t.Fatalf("ListContainers = %+v, want exit 137 %s", list, runtime.ReasonStatusUnknown)
	}
	for what, pid := range map[string]int{"container": st.Container.Process.Pid, "container's child": child} {
		if !processGone(t, pid) {
			t.Errorf("%s %d still runs without its shim", what, pid)
			_ = unix.Kill(pid, unix.SIGKILL)
		}
	}
	select {
	case ev := <-h2.r.Events():
		t.Errorf("event %+v for an instance whose shim died before the runtime attached", ev)
	default:
	}
}

func TestShimForwardsItsSignals(t *testing.T) {
	h := newHarness(t)
	pod := newPod(t, shell("main", "echo ready; sleep 100 & wait"))
	h.prepare(pod)
	c := h.start(pod, 0)
	h.waitOutput("main", "ready")
	st := instanceState(t, h.r, pod.UID, c.ID)
	if err := unix.Kill(st.Shim.Pid, unix.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if ev := h.waitExit(c.ID); ev.Exit.ExitCode != 143 {
		t.Errorf("exit %+v, want 143: the shim passes SIGTERM on", ev.Exit)
	}
}

func TestAttachSettlesInstancesThatNeverRan(t *testing.T) {
	root := t.TempDir()
	h1 := newHarnessAt(t, root)
	pod := newPod(t, shell("main", "true"))
	h1.prepare(pod)
	if err := h1.r.Close(); err != nil {
		t.Fatal(err)
	}
	// As an agent that died in StartContainer leaves them: a directory
	// without a spec, and a spec whose shim never ran; and as a crash of
	// the machine may: a spec cut short.
	if err := os.MkdirAll(h1.r.instanceDir(pod.UID, "nospec"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(h1.r.instanceDir(pod.UID, "corrupt"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h1.r.instanceDir(pod.UID, "corrupt"), shim.SpecFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(h1.r.instancesDir(pod.UID), 0o700); err != nil {
		t.Fatal(err)
	}
	spec := &shim.Spec{ID: "noshim", PodUID: string(pod.UID), Container: "main", Attempt: 1, LogPath: h1.r.LogPath(pod.UID, "main", 1)}
	if err := shim.Create(h1.r.instanceDir(pod.UID, "noshim"), spec); err != nil {
		t.Fatal(err)
	}

	h2 := newHarnessAt(t, root)
	for _, id := range []string{"nospec", "corrupt"} {
		if _, err := os.Stat(h2.r.instanceDir(pod.UID, id)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("instance directory %s without a spec left: %v", id, err)
		}
	}
	list, err := h2.r.ListContainers(context.Background(), pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "noshim" || list[0].Exit == nil ||
		list[0].Exit.ExitCode != 128 || list[0].Exit.Reason != runtime.ReasonStartError || list[0].Attempt != 1 {
		t.Fatalf("ListContainers = %+v, want noshim exited 128 %s", list, runtime.ReasonStartError)
	}
	select {
	case ev := <-h2.r.Events():
		t.Errorf("event %+v for an instance that exited before the runtime attached", ev)
	default:
	}
	if err := h2.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

func TestRootHasOneRuntime(t *testing.T) {
	h := newHarness(t)
	if _, err := New(Config{Root: h.r.root}); !errors.Is(err, ErrRootInUse) {
		t.Fatalf("second New on a root = %v, want ErrRootInUse", err)
	}
	if err := h.r.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := New(Config{Root: h.r.root})
	if err != nil {
		t.Fatalf("New after Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestMountpointsCountedAgainAfterAttach(t *testing.T) {
	requireRoot(t)
	root := t.TempDir()
	h1 := newHarnessAt(t, root)
	mountPath := "/podward-test-attach-" + randomSuffix(t)
	t.Cleanup(func() { _ = os.Remove(mountPath) })
	c := shell("main", "true")
	c.VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: mountPath}}
	pod := newPod(t, c)
	pod.Spec.Volumes = []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}}
	h1.prepare(pod)
	if _, ev := h1.run(pod, 0); ev.Exit.ExitCode != 0 {
		t.Fatalf("exit %+v", ev.Exit)
	}
	if err := h1.r.Close(); err != nil {
		t.Fatal(err)
	}

	h2 := newHarnessAt(t, root)
	if err := h2.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mountPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("mountpoint %s left after the pod was cleaned up by the next runtime: %v", mountPath, err)
	}
}
