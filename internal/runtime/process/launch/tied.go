package launch

import (
	"context"
	"fmt"

	"golang.org/x/sys/unix"
	"os"
	"os/exec"
	goruntime "runtime"
	"sync"
	"syscall"
)

// Tied is a process StartTied started, which dies (SIGKILL) with this
// process. Its owner must Wait for it.
type Tied struct {
	cmd  *exec.Cmd
	once sync.Once
}

// StartTied is Start for a process that must not outlive this one: the
// kernel kills it with SIGKILL when this process dies, however it dies
// (PR_SET_PDEATHSIG). Only the process itself: what it starts in the
// background is the caller's to kill. The setting survives the init
// helper's exec and the command's own execs, unless the command changes
// its credentials or runs a set-user-ID or file-capability binary, which
// clears it.
//
// The kernel sends that signal when the thread that forked the process
// ends, not when its process does, and a Go program does not choose the
// thread a goroutine runs on: so every tied process is forked from one
// goroutine locked to its thread, which lives as long as a tied process
// that was not reaped yet may be its child, and ends with the last one.
//
// started, when not nil, is called with the process's PID (its group's
// ID) once the process exists and before it runs its command, so that
// whatever the command starts is in a group the caller knows of: the
// process then goes through the init helper, which waits for started to
// return.
func StartTied(ctx context.Context, spec Spec, stdout, stderr *os.File, started func(pid int)) (*Tied, error) {
	return StartTiedStdio(ctx, spec, Stdio{Out: stdout, Err: stderr}, started)
}

// Stdio are the standard streams of a process StartTiedStdio starts. In,
// when nil, is /dev/null. With Terminal, In, Out and Err are one
// terminal (a pty's slave end), which becomes the controlling terminal of
// the process, in a session of its own (whose ID is its process group's,
// its PID), so that the shell on it does job control and gets SIGWINCH.
type Stdio struct {
	In, Out, Err *os.File
	Terminal     bool
}

// StartTiedStdio is StartTied with a standard input and, when asked, a
// controlling terminal: an interactive exec.
func StartTiedStdio(ctx context.Context, spec Spec, stdio Stdio, started func(pid int)) (*Tied, error) {
	reqs := forker.acquire()
	pidns := spec.Join.pidNamespace()
	cmd, err := start(ctx, spec, stdio.Out, stdio.Err, starter{
		fork: func(cmd *exec.Cmd) error {
			if pidns == nil {
				cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
			}
			if stdio.In != nil {
				cmd.Stdin = stdio.In
			}
			if stdio.Terminal {
				// A session leader is its group's leader already, and
				// may not set its group.
				cmd.SysProcAttr.Setpgid = false
				cmd.SysProcAttr.Setsid = true
				cmd.SysProcAttr.Setctty = true
				cmd.SysProcAttr.Ctty = 0 // the child's stdin
			}
			done := make(chan error, 1)
			reqs <- forkRequest{cmd: cmd, done: done, pidns: pidns}
			return <-done
		},
		started:   started,
		pdeathsig: pidns != nil,
	})
	if err != nil {
		// start reaped whatever it started.
		forker.release()
		return nil, err
	}
	return &Tied{cmd: cmd}, nil
}

// Pid is the process's PID, which is also its process group's ID.
func (t *Tied) Pid() int { return t.cmd.Process.Pid }

// Wait waits for the process to exit, reaps it and waits for the copying
// of its output as exec.Cmd.Wait does. It may be called once.
func (t *Tied) Wait() (*os.ProcessState, error) {
	err := t.cmd.Wait()
	t.once.Do(forker.release)
	return t.cmd.ProcessState, err
}

// forker forks the tied processes.
var forker tiedForker

// tiedForker runs the goroutine that forks the tied processes while any
// of them may be its thread's child: from the first acquire to the last
// release.
type tiedForker struct {
	mu   sync.Mutex
	reqs chan forkRequest // nil while no goroutine runs
	live int              // processes acquired and not released
}

type forkRequest struct {
	cmd  *exec.Cmd
	done chan<- error // buffered
	// pidns, when set, is the PID namespace the process is forked into:
	// the thread joins it for its children, and goes back once forked.
	pidns *os.File
}

// acquire counts one more tied process (a fork to come) and returns where
// to ask for its fork.
func (f *tiedForker) acquire() chan<- forkRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.live == 0 {
		f.reqs = make(chan forkRequest)
		go forkLoop(f.reqs)
	}
	f.live++
	return f.reqs
}

// release counts a tied process less: it was reaped, or never started.
// The last one ends the goroutine, and with it its thread, which has no
// child left to signal.
func (f *tiedForker) release() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.live--
	if f.live == 0 {
		close(f.reqs)
		f.reqs = nil
	}
}

// forkLoop starts the commands of reqs, from the thread it locks, until reqs
// is closed.
func forkLoop(reqs <-chan forkRequest) {
	// Never unlocked: a locked goroutine that returns ends its thread, so
	// no other goroutine ever forks from it.
	goruntime.LockOSThread()
	for req := range reqs {
		req.done <- forkTied(req)
	}
}

// forkTied starts req's command from the forking thread, in req's PID
// namespace when it has one: the thread joins it for its children, and
// goes back to this process's own once forked. A thread that could not
// go back must not fork again: it panics, which ends the process's
// tied processes with it rather than starting the next exec in a
// container's namespace.
func forkTied(req forkRequest) error {
	if req.pidns == nil {
		return req.cmd.Start()
	}
	own, err := os.Open("/proc/self/ns/pid")
	if err != nil {
		return fmt.Errorf("open this process's PID namespace: %w", err)
	}
	defer own.Close()
	if err := unix.Setns(int(req.pidns.Fd()), unix.CLONE_NEWPID); err != nil {
		return fmt.Errorf("join the container's PID namespace: %w", os.NewSyscallError("setns", err))
	}
	err = req.cmd.Start()
	if berr := unix.Setns(int(own.Fd()), unix.CLONE_NEWPID); berr != nil {
		panic(fmt.Sprintf("launch: the tied processes' forking thread cannot leave a container's PID namespace: %v", berr))
	}
	return err
}
