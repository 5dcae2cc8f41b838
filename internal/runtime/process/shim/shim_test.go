package shim

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/process/launch"
)

func TestMain(m *testing.M) {
	launch.MaybeRunHelper()
	if dir, ok := os.LookupEnv(Env); ok && os.Getenv(diesAfterForkEnv) != "" {
		os.Exit(dieAfterFork(dir))
	}
	MaybeRun()
	// The shims are this binary, with the race detector when the tests
	// have it: without this, each would wait a second before it exits.
	_ = os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	goleak.VerifyTestMain(m)
}

const waitLimit = 30 * time.Second

// newInstance makes an instance directory for script.
func newInstance(t *testing.T, script string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "instance")
	spec := &Spec{
		ID:        "test",
		PodUID:    "uid",
		Container: "main",
		Process:   launch.Spec{Argv: []string{"/bin/sh", "-c", script}, Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/"},
		LogPath:   filepath.Join(t.TempDir(), "0.log"),
	}
	if err := Create(dir, spec); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitGone waits for p to exit and reaps it.
func waitGone(t *testing.T, p *Proc) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("process %d did not exit: %v", p.Ident().Pid, err)
	}
	p.Reap()
}

// waitLog follows the CRI log at path until a line is want.
func waitLog(t *testing.T, path, want string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	found := errors.New("found")
	err := crilog.ReadLog(ctx, path, crilog.ReadOptions{Follow: true, Tail: crilog.AllLines}, func(l crilog.Line) error {
		if string(l.Content) == want {
			return found
		}
		return nil
	})
	if !errors.Is(err, found) {
		t.Fatalf("no line %q in %s: %v", want, path, err)
	}
}

func TestStartAndExit(t *testing.T) {
	dir := newInstance(t, "echo hello; exit 3")
	p, started, err := Start(context.Background(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if started.Process.Pid <= 0 || started.StartedAt.IsZero() {
		t.Errorf("started %+v", started)
	}
	waitGone(t, p)
	st, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Exit == nil || st.Exit.ExitCode != 3 || st.Exit.FinishedAt.Before(started.StartedAt) {
		t.Errorf("exit %+v", st.Exit)
	}
	if st.Shim == nil || st.Shim.Pid != p.Ident().Pid || *st.Container != started {
		t.Errorf("state %+v, want shim %d and container %+v", st, p.Ident().Pid, started)
	}
	if err := Signal(dir, syscall.SIGTERM); !errors.Is(err, ErrExited) {
		t.Errorf("Signal after the exit = %v, want ErrExited", err)
	}
	data, err := os.ReadFile(st.Spec.LogPath)
	if err != nil || !strings.HasSuffix(string(data), " stdout F hello\n") {
		t.Errorf("log %q, %v", data, err)
	}
}

func TestStartFailureIsReported(t *testing.T) {
	dir := newInstance(t, "")
	spec, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	spec.Spec.Process.Argv = []string{"podward-no-such-command"}
	if err := writeJSON(dir, SpecFile, spec.Spec); err != nil {
		t.Fatal(err)
	}
	_, _, err = Start(context.Background(), "", dir)
	if err == nil || !strings.Contains(err.Error(), "executable file not found") {
		t.Fatalf("Start = %v, want executable file not found", err)
	}
	// Start waited for the shim: its record is complete.
	if exit, err := LoadExit(dir); err != nil || exit == nil || exit.Reason != runtime.ReasonStartError || exit.ExitCode != 128 {
		t.Errorf("exit %+v, %v; want 128 %s", exit, err, runtime.ReasonStartError)
	}
}

// startReported starts a shim by hand and reads its report, leaving the
// answer to the test.
func startReported(t *testing.T, script string) (string, *Proc, *os.File, report) {
	t.Helper()
	dir := newInstance(t, script)
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	p, err := startShim("", dir, theirs)
	theirs.Close()
	if err != nil {
		ours.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	rep, err := readReport(context.Background(), ours)
	if err != nil || rep.Started == nil {
		ours.Close()
		t.Fatalf("report %+v, %v", rep, err)
	}
	return dir, p, ours, rep
}

func TestShimGivesUpWhenTheAgentCancels(t *testing.T) {
	dir, p, ours, rep := startReported(t, "exec sleep 100")
	_, _ = ours.Write([]byte{abortStart})
	ours.Close()
	waitGone(t, p)
	exit, err := LoadExit(dir)
	if err != nil || exit == nil || exit.Reason != runtime.ReasonStartError || !strings.Contains(exit.Message, "cancelled") {
		t.Errorf("exit %+v, %v; want a start error", exit, err)
	}
	// The container was killed, and reaped by the shim.
	if _, err := OpenProc(rep.Started.Process); !errors.Is(err, ErrGone) {
		t.Errorf("OpenProc(container) = %v, want ErrGone", err)
	}
}

// TestShimGivesUpWhenTheAgentCancelsBeforeTheReport: Start's ctx ends
// before the shim reports (a pod deleted while its container starts): Start
// writes its abort and closes its end, so the shim's report finds the
// socket closed. The shim must still read the abort and kill the
// container, not take the closed socket for a dead agent: Start removes
// the instance, and nobody would ever stop the container. The shim is held
// before it launches the container by its log, a FIFO that the test opens
// only once its end of the socket is closed.
func TestShimGivesUpWhenTheAgentCancelsBeforeTheReport(t *testing.T) {
	dir := newInstance(t, "exec sleep 100")
	st, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Spec.LogPath = filepath.Join(t.TempDir(), "0.log")
	if err := unix.Mkfifo(st.Spec.LogPath, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeJSON(dir, SpecFile, st.Spec); err != nil {
		t.Fatal(err)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	ours, theirs := os.NewFile(uintptr(fds[0]), "ours"), os.NewFile(uintptr(fds[1]), "theirs")
	p, err := startShim("", dir, theirs)
	theirs.Close()
	if err != nil {
		ours.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { killLeft(t, dir, p) })
	// What Start does when its ctx ended before the report.
	_, _ = ours.Write([]byte{abortStart})
	ours.Close()
	// Now the shim may open its log and launch the container.
	logR, err := os.OpenFile(st.Spec.LogPath, os.O_RDONLY|unix.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer logR.Close()
	waitGone(t, p)
	exit, err := LoadExit(dir)
	if err != nil || exit == nil || exit.Reason != runtime.ReasonStartError || !strings.Contains(exit.Message, "cancelled") {
		t.Errorf("exit %+v, %v; want a start error", exit, err)
	}
	st, err = Load(dir)
	if err != nil || st.Container == nil {
		t.Fatalf("state %+v, %v; want the container's start recorded", st, err)
	}
	if _, err := OpenProc(st.Container.Process); !errors.Is(err, ErrGone) {
		t.Errorf("OpenProc(container) = %v, want ErrGone", err)
	}
}

// diesAfterForkEnv makes the shims of a test die as dieAfterFork says.
const diesAfterForkEnv = "_PODWARD_TEST_SHIM_DIES_AFTER_FORK"

// dieAfterFork is a shim that dies right after it started its container
// and recorded it, before its report, as one the OOM killer or a SIGKILL
// takes there would: the container runs on, its parent gone.
func dieAfterFork(dir string) int {
	unix.CloseOnExec(statusFD)
	var spec Spec
	if err := readJSON(dir, SpecFile, &spec); err != nil {
		return 2
	}
	devNull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return 2
	}
	cmd, err := launch.Start(context.Background(), spec.Process, devNull, devNull)
	if err != nil {
		return 2
	}
	id, err := IdentOf(cmd.Process.Pid)
	if err != nil {
		return 2
	}
	if err := writeJSON(dir, ContainerFile, Started{Process: id, StartedAt: time.Now()}); err != nil {
		return 2
	}
	return 3
}

// TestStartKillsTheContainerOfAShimThatDied: a shim that dies between its
// container's start and its report leaves the container running without a
// parent; Start fails, its caller removes the instance, and so Start must
// kill the container itself: nothing of a failed start may run on.
func TestStartKillsTheContainerOfAShimThatDied(t *testing.T) {
	t.Setenv(diesAfterForkEnv, "1")
	dir := newInstance(t, "exec sleep 100")
	p, _, err := Start(context.Background(), "", dir)
	if err == nil {
		p.Close()
		t.Fatal("Start succeeded with a shim that died before its report")
	}
	st, err := Load(dir)
	if err != nil || st.Container == nil {
		t.Fatalf("state %+v, %v; want the container the shim started", st, err)
	}
	c, err := OpenProc(st.Container.Process)
	if errors.Is(err, ErrGone) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Killed, it is reaped by its new parent (init) at any moment.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := c.Wait(ctx); err != nil {
		_, _ = KillGroup(st.Container.Process)
		t.Fatalf("the container of the failed start still runs: %v", err)
	}
}

// killLeft kills what a failed test left of the instance in dir: its
// container's process group and its shim p.
func killLeft(t *testing.T, dir string, p *Proc) {
	t.Helper()
	if st, err := Load(dir); err == nil && st.Container != nil {
		if _, err := KillGroup(st.Container.Process); err != nil {
			t.Errorf("kill the container left: %v", err)
		}
	}
	_ = p.Signal(syscall.SIGKILL)
	// A failed wait left its deadline on the handle.
	_ = p.f.SetReadDeadline(time.Time{})
	waitGone(t, p)
	p.Close()
}

func TestShimKeepsTheContainerWhenTheAgentVanishes(t *testing.T) {
	// The agent dies between the shim's report and its answer: the
	// container already runs and must go on, for the next agent to adopt.
	dir, p, ours, rep := startReported(t, "trap 'exit 7' USR1; echo ready; sleep 100 & wait")
	ours.Close()
	st, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, st.Spec.LogPath, "ready")
	if _, err := OpenProc(rep.Started.Process); err != nil {
		t.Fatalf("the container is gone after the agent vanished: %v", err)
	}
	if err := Signal(dir, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p)
	exit, err := LoadExit(dir)
	if err != nil || exit == nil || exit.ExitCode != 7 {
		t.Errorf("exit %+v, %v; want the container's own exit code 7", exit, err)
	}
}

func TestSignalGoesThroughTheShim(t *testing.T) {
	dir := newInstance(t, "trap 'exit 42' USR1; echo ready; sleep 100 & wait")
	p, _, err := Start(context.Background(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	st, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	waitLog(t, st.Spec.LogPath, "ready")
	if err := Signal(dir, syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p)
	if exit, err := LoadExit(dir); err != nil || exit == nil || exit.ExitCode != 42 {
		t.Errorf("exit %+v, %v; want 42", exit, err)
	}
}

func TestOpenProc(t *testing.T) {
	self, err := IdentOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	p, err := OpenProc(self)
	if err != nil {
		t.Fatalf("OpenProc(self) = %v", err)
	}
	if p.Exited() {
		t.Error("this process has exited, says its handle")
	}
	p.Close()
	for name, id := range map[string]Ident{
		"reused PID":   {Pid: self.Pid, StartTime: self.StartTime + 1, BootID: self.BootID},
		"earlier boot": {Pid: self.Pid, StartTime: self.StartTime, BootID: "other"},
		"no PID":       {BootID: self.BootID},
	} {
		if _, err := OpenProc(id); !errors.Is(err, ErrGone) {
			t.Errorf("%s: OpenProc = %v, want ErrGone", name, err)
		}
	}
}

func TestStartTimeWithOddCommandName(t *testing.T) {
	// A command name with spaces and parentheses must not shift the fields.
	exe := filepath.Join(t.TempDir(), "a ) b (")
	if err := os.Symlink("/bin/sleep", exe); err != nil {
		t.Fatal(err)
	}
	dir := newInstance(t, "")
	spec, _ := Load(dir)
	spec.Spec.Process.Argv = []string{exe, "100"}
	if err := writeJSON(dir, SpecFile, spec.Spec); err != nil {
		t.Fatal(err)
	}
	p, started, err := Start(context.Background(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := OpenProc(started.Process)
	if err != nil {
		t.Errorf("OpenProc(container %+v) = %v", started.Process, err)
	} else {
		c.Close()
	}
	if err := Signal(dir, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitGone(t, p)
	if exit, _ := LoadExit(dir); exit == nil || exit.ExitCode != 137 {
		t.Errorf("exit %+v, want 137", exit)
	}
}

// TestShimRotatesItsLog: the shim rotates its container's log as the spec
// says (the kubelet's rules, crilog.LogFile), and nothing of the output is
// lost or repeated across the kept files. The log rotates at most once a
// wall-clock second (a rotated file is named by its second), so each of
// the container's three bursts of lines starts just after a second begins:
// one that spanned a second's end would rotate twice (it did under load,
// when the bursts only had 1.1 s between them).
func TestShimRotatesItsLog(t *testing.T) {
	dir := newInstance(t, `tick() { n=$(date +%N | sed 's/^0*//'); r=$((1000000000 - ${n:-0})); sleep "$((r / 1000000000)).$(printf %09d $((r % 1000000000)))"; }
	i=0; for b in 1 2 3; do
		tick
		for j in $(seq 50); do i=$((i+1)); echo "line $i"; done
	done`)
	st, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Spec.LogRotation = crilog.Rotation{MaxSize: 500, MaxFiles: 3}
	if err := writeJSON(dir, SpecFile, st.Spec); err != nil {
		t.Fatal(err)
	}
	p, _, err := Start(context.Background(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitGone(t, p)
	rotated, err := crilog.RotatedLogs(st.Spec.LogPath)
	if err != nil {
		t.Fatal(err)
	}
	// One rotation at the first line of each second (the log is past
	// 500 bytes by then): of the three files, the oldest is compressed.
	if len(rotated) != 2 || !strings.HasSuffix(rotated[0], ".gz") || strings.HasSuffix(rotated[1], ".gz") {
		t.Fatalf("rotated files %q, want two, the older one compressed", rotated)
	}
	var lines []string
	for _, path := range append(rotated, st.Spec.LogPath) {
		if strings.HasSuffix(path, ".gz") {
			continue // its lines are those of the first second
		}
		err := crilog.ReadLog(context.Background(), path, crilog.ReadOptions{Tail: crilog.AllLines}, func(l crilog.Line) error {
			lines = append(lines, string(l.Content))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(lines) != 100 || lines[0] != "line 51" || lines[99] != "line 150" {
		t.Fatalf("lines of the two newest files: %d, from %q to %q; want 100, line 51 to line 150", len(lines), lines[0], lines[len(lines)-1])
	}
}

// TestShimNoticesOutputItsLogDropped: a log that takes nothing (a full
// disk: /dev/full) drops the container's output; the shim tells the agent
// through its notices FIFO — which needs no room on the disk — how many
// bytes of which stream, and its own warning.
func TestShimNoticesOutputItsLogDropped(t *testing.T) {
	dir := newInstance(t, "echo hello; echo world")
	st, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	st.Spec.LogPath = "/dev/full"
	if err := writeJSON(dir, SpecFile, st.Spec); err != nil {
		t.Fatal(err)
	}
	// The agent's side: open for reading and writing, so that the shim
	// finds a reader and reads never see the end of the FIFO.
	fifo, err := os.OpenFile(filepath.Join(dir, NoticesFile), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fifo.Close()
	p, _, err := Start(context.Background(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitGone(t, p)
	if err := fifo.SetReadDeadline(time.Now().Add(waitLimit)); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(fifo)
	var warned bool
	for {
		line, err := r.ReadBytes('\n')
		if err != nil {
			t.Fatalf("no LogDropped notice (warned: %v): %v", warned, err)
		}
		nt, err := DecodeNotice(line)
		if err != nil {
			t.Fatal(err)
		}
		if nt.Level == "WARN" && strings.Contains(nt.Message, "cannot write the container log") && strings.Contains(nt.Message, "no space left on device") {
			warned = true
		}
		if d := nt.LogDropped; d != nil {
			if *d != (LogDrop{Stream: crilog.Stdout, Bytes: 12, Cause: "no space left on device"}) {
				t.Fatalf("LogDropped %+v, want the 12 bytes of stdout, unmarked", *d)
			}
			if !warned {
				t.Fatal("the shim's warning did not come before the drop")
			}
			return
		}
	}
}
