package bench

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// waitLimit bounds a test's wait for a process to exit.
const waitLimit = 30 * time.Second

// TestProcessFloorStopKillsWhatTheShellLeft: a floor container's shell may
// fork a child after its group got the SIGTERM (the stamp script's
// `/bin/sleep &` right after the stamp the bench stops on); the shell then
// exits by its trap, and its child would outlive it with the run's marker,
// a leak the churn's check counts. The floor's stop kills the rest of the
// group once its shell exited, as a shim does. Here the trap itself forks
// the late child, so that it always comes after the SIGTERM.
func TestProcessFloorStopKillsWhatTheShellLeft(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "late.pid")
	cmd := exec.Command("/bin/bash", "-c", "trap '/bin/sleep 100 & echo $! > "+pidFile+"; exit 0' TERM; echo ready; /bin/sleep 100 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The trap is set once the shell says ready.
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		t.Fatalf("the shell said %q, %v", line, err)
	}
	if err := (processFloor{}).stop(context.Background(), processFloorPod{cmd}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // killed and reaped already
	}
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	// A pidfd polls readable once its process exited.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, int(waitLimit.Milliseconds()))
	if err != nil || n == 0 {
		_ = unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0)
		t.Fatalf("the shell's late child %d outlived the floor's stop (poll: %d, %v)", pid, n, err)
	}
}
