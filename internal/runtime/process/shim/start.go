package shim

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/runtime/process/launch"
)

// abortTimeout bounds how long Start waits for a shim it told to give up
// (or that reported a failure) to exit before it kills it.
const abortTimeout = 10 * time.Second

// reportLimit bounds the shim's report.
const reportLimit = 64 * 1024

// Start starts the shim of the instance directory dir, which Create made,
// and returns once the container runs its command, with a handle on the
// shim, which the caller must Close, and the container's start. bin is the
// shim's binary: one whose main calls MaybeRun first (the small
// podward-shim, or podward itself through process.MaybeRunInit); "" is
// this very binary. The shim is a child of this process in a session of
// its own: it survives the agent and does not get its terminal's signals.
// When Proc.Wait says the shim exited, call Proc.Reap, or it stays a
// zombie while this process lives.
//
// Start fails when the container could not start (with the reason the
// shim gave) or when ctx ended first (with ctx.Err()). Either way nothing
// of the instance runs any more when Start returns, and the caller may
// remove dir.
func Start(ctx context.Context, bin, dir string) (*Proc, Started, error) {
	if err := ctx.Err(); err != nil {
		return nil, Started{}, err
	}
	ours, theirs, err := statusSocket()
	if err != nil {
		return nil, Started{}, err
	}
	defer ours.Close()
	p, err := startShim(bin, dir, theirs)
	theirs.Close()
	if err != nil {
		return nil, Started{}, err
	}
	return confirm(ctx, dir, p, ours)
}

// startShim forks and execs bin as the shim of dir, with status as its
// fd 3.
func startShim(bin, dir string, status *os.File) (*Proc, error) {
	shimLog, err := os.OpenFile(filepath.Join(dir, ShimLogFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, err
	}
	defer shimLog.Close()
	return spawn(bin, []string{"podward-shim", dir}, shimEnv(Env+"="+dir), shimLog, status)
}

// confirm reads the report of the shim p of dir on ours and answers it, as
// Start says.
func confirm(ctx context.Context, dir string, p *Proc, ours *os.File) (*Proc, Started, error) {
	rep, err := readReport(ctx, ours)
	if err == nil && rep.Error == "" && ctx.Err() == nil {
		// A shim that died since its report cannot read this; the caller
		// learns it the way it learns any other death of a shim.
		_, _ = ours.Write([]byte{goAhead})
		return p, *rep.Started, nil
	}
	// The shim gives up when told to; a shim that already failed does not
	// read this.
	_, _ = ours.Write([]byte{abortStart})
	ours.Close()
	p.waitGone()
	p.Close()
	// Whatever the shim did, what it started must not go on; a failure to
	// make sure of it matters more than why the start failed.
	if err := killStarted(dir); err != nil {
		return nil, Started{}, err
	}
	switch {
	case err == nil && rep.Error != "":
		return nil, Started{}, errors.New(rep.Error)
	case ctx.Err() != nil:
		return nil, Started{}, ctx.Err()
	default:
		return nil, Started{}, fmt.Errorf("shim (its log: %s): %w", filepath.Join(dir, ShimLogFile), err)
	}
}

// statusSocket makes the socket on which a shim reports to Start: ours
// (non-blocking, so that ctx can interrupt a read through a deadline) and
// theirs, the shim's fd 3.
func statusSocket() (ours, theirs *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		unix.Close(fds[0])
		unix.Close(fds[1])
		return nil, nil, os.NewSyscallError("fcntl", err)
	}
	return os.NewFile(uintptr(fds[0]), "shim-status"), os.NewFile(uintptr(fds[1]), "shim-status"), nil
}

// spawn forks and execs bin ("": this very binary) as a shim with args
// and env, stderr (nil: /dev/null) and status as its fd 3.
func spawn(bin string, args, env []string, stderr, status *os.File) (*Proc, error) {
	if bin == "" {
		// This very binary, even if it was replaced on disk since.
		bin = "/proc/self/exe"
	}
	cmd := &exec.Cmd{
		Path: bin,
		Args: args,
		Env:  env,
		Dir:  "/",
		// Stdin and stdout are /dev/null: the shim writes to nothing
		// the agent holds.
		ExtraFiles: []*os.File{status}, // statusFD
		// A session of its own: no controlling terminal, so neither the
		// terminal's signals nor its hangup reach it or the container.
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	if stderr != nil {
		cmd.Stderr = stderr
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start shim: %w", err)
	}
	// Not waited for yet, so the PID is still the shim's.
	p, err := openChild(cmd.Process.Pid)
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		return nil, err
	}
	// The shim is reaped through p; the Cmd's own handle is not needed.
	_ = cmd.Process.Release()
	return p, nil
}

// shimGoMaxProcs tunes the Go runtime of every shim before it starts (an
// environment variable, so that the runtime never makes more): one P. A
// shim mostly waits, and each P more costs it memory it keeps for good
// (the P's cache of spans, the threads that ran it): about a fifth of a
// shim's 1 MB, measured on 2 cores; the garbage collector's settings made
// no measurable difference, a shim allocating little once its container
// runs.
const shimGoMaxProcs = "GOMAXPROCS=1"

// shimEnv is the shim's environment: the agent's (the container does not
// get it: its environment is in its spec) with shimGoMaxProcs, and mark,
// which says what the shim is to do.
func shimEnv(mark string) []string {
	env := []string{mark, shimGoMaxProcs}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, Env+"=") && !strings.HasPrefix(kv, SpareEnv+"=") && !strings.HasPrefix(kv, launch.HelperEnv+"=") && !strings.HasPrefix(kv, "GOMAXPROCS=") {
			env = append(env, kv)
		}
	}
	return env
}

// readReport reads the shim's report, until ctx ends.
func readReport(ctx context.Context, status *os.File) (report, error) {
	var rep report
	stop := context.AfterFunc(ctx, func() { _ = status.SetReadDeadline(longAgo) })
	defer stop()
	line, err := bufio.NewReader(io.LimitReader(status, reportLimit)).ReadBytes('\n')
	if err != nil {
		if errors.Is(err, io.EOF) {
			return rep, errors.New("the shim exited without reporting")
		}
		return rep, fmt.Errorf("read the shim's report: %w", err)
	}
	if err := json.Unmarshal(line, &rep); err != nil {
		return rep, fmt.Errorf("the shim's report: %w", err)
	}
	if rep.Error == "" && rep.Started == nil {
		return rep, errors.New("the shim's report is empty")
	}
	return rep, nil
}

// killStarted kills what is left of the process group of the container
// the shim of dir recorded as started (container.json), once the shim is
// gone from a start that failed. A shim that gave up as told has killed it
// already; one that died, or that waitGone killed, between the container's
// start and its abort has not, and nothing else ever would: Start's caller
// removes the instance. A group that is gone is not an error.
func killStarted(dir string) error {
	var started Started
	ok, err := readOptional(dir, ContainerFile, &started)
	if err != nil {
		return fmt.Errorf("the container of a start that failed: %w", err)
	}
	if !ok {
		return nil
	}
	if _, err := KillGroup(started.Process); err != nil {
		return fmt.Errorf("kill the container of a start that failed: %w", err)
	}
	return nil
}

// waitGone waits, for at most abortTimeout, for a shim that is giving up
// to exit, kills it after that, and reaps it.
func (p *Proc) waitGone() {
	ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		// Stuck: what it started may outlive it, but it must not go on.
		_ = p.Signal(syscall.SIGKILL)
		ctx, cancel := context.WithTimeout(context.Background(), abortTimeout)
		defer cancel()
		_ = p.Wait(ctx)
	}
	p.Reap()
}
