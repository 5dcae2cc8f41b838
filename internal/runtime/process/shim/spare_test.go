package shim

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// A spare shim started ahead holds its instance as any shim does once
// StartOn gives it one: the container runs under it, its stderr is the
// instance's shim.log, and its exit is recorded.
func TestSpareHoldsTheInstanceItIsGiven(t *testing.T) {
	spare, err := StartSpare("", "test-marker")
	if err != nil {
		t.Fatal(err)
	}
	if cl := cmdline(spare.Pid()); cl != "podward-shim spare test-marker" {
		t.Errorf("the spare's command line is %q", cl)
	}
	dir := newInstance(t, "echo hello; exit 3")
	p, started, err := StartOn(context.Background(), dir, spare)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.Ident().Pid != spare.Pid() {
		t.Errorf("the instance's shim is %d, the spare was %d", p.Ident().Pid, spare.Pid())
	}
	waitGone(t, p)
	st, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Exit == nil || st.Exit.ExitCode != 3 || st.Shim == nil || st.Shim.Pid != spare.Pid() || *st.Container != started {
		t.Errorf("state %+v, want the exit 3 of the spare's container %+v", st, started)
	}
	if data, err := os.ReadFile(st.Spec.LogPath); err != nil || !strings.HasSuffix(string(data), " stdout F hello\n") {
		t.Errorf("log %q, %v", data, err)
	}
	// The spare's stderr is shim.log: a shim's warnings land there.
	if _, err := os.Stat(filepath.Join(dir, ShimLogFile)); err != nil {
		t.Errorf("no shim.log: %v", err)
	}
}

// A spare that is not wanted any more exits when its socket closes.
func TestSpareExitsWhenClosed(t *testing.T) {
	spare, err := StartSpare("", "test-marker")
	if err != nil {
		t.Fatal(err)
	}
	pid := spare.Pid()
	spare.Close() // returns once it exited and was reaped
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("the spare %d is still there: kill(0) = %v", pid, err)
	}
}

// A spare that died before it was used is reported as gone, and its
// instance left untouched for Start.
func TestStartOnADeadSpare(t *testing.T) {
	spare, err := StartSpare("", "test-marker")
	if err != nil {
		t.Fatal(err)
	}
	if err := spare.proc.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := spare.proc.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	dir := newInstance(t, "exit 0")
	if _, _, err := StartOn(context.Background(), dir, spare); !errors.Is(err, ErrSpareGone) {
		t.Fatalf("StartOn = %v, want ErrSpareGone", err)
	}
	if st, err := Load(dir); err != nil || st.Shim != nil || st.Container != nil || st.Exit != nil {
		t.Errorf("the instance was touched: %+v, %v", st, err)
	}
	p, _, err := Start(context.Background(), "", dir)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	waitGone(t, p)
}

// cmdline is the command line of pid, its arguments joined by spaces.
func cmdline(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}
