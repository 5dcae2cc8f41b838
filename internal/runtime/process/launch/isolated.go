package launch

import (
	"errors"
	"os"
	"os/exec"
	goruntime "runtime"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/runtime/cgroups"
)

// startIsolated starts spec, which has mounts or a host name, without the
// init helper: from a thread of this process that it moves into a mount
// and a UTS namespace of its own, where it sets the host name and does the
// bind mounts before it forks the command, which inherits the thread's
// namespaces (they are per thread: unshare moves only the calling thread,
// and a fork takes the forking thread's). It saves the helper's exec of
// this binary, tens of milliseconds of Go runtime and package
// initialisation on every container start, and its failures come back as
// errors without a status pipe.
//
// The thread is locked to its goroutine and never unlocked, so that no
// other goroutine ever runs on it: it ends with the goroutine, or, when it
// is the main thread, which Go never ends, it is parked for good. The Go
// runtime starts new threads from a template thread, never from a locked
// one, so none inherits its namespaces. Once the command is forked the
// thread goes back to the namespaces it came from, so that what reads this
// process's namespaces through its main thread (/proc/PID/mountinfo, say)
// sees the host's even when that thread was the one. The rest of this
// process never leaves them.
func startIsolated(spec Spec, stdout, stderr *os.File) (*exec.Cmd, error) {
	type result struct {
		cmd *exec.Cmd
		err error
	}
	done := make(chan result, 1)
	go func() {
		goruntime.LockOSThread()
		cmd, err := forkIsolated(spec, stdout, stderr)
		done <- result{cmd, err}
	}()
	r := <-done
	return r.cmd, r.err
}

// forkIsolated is startIsolated's work, on its locked thread.
func forkIsolated(spec Spec, stdout, stderr *os.File) (*exec.Cmd, error) {
	if flags := unshareFlags(spec); flags != 0 {
		back, err := openNamespaces()
		if err != nil {
			return nil, err
		}
		defer back.restore()
		if err := unix.Unshare(int(flags)); err != nil {
			return nil, os.NewSyscallError("unshare", err)
		}
	}
	if len(spec.Mounts) > 0 {
		// As Go does in a child it unshares a mount namespace for: nothing
		// mounted from here on propagates to the host.
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return nil, os.NewSyscallError("make / private", err)
		}
	}
	if err := isolate(spec.Hostname, spec.Mounts, spec.Security); err != nil {
		return nil, err
	}
	// After the mounts: a volume may provide the directory and the command.
	cmd, err := command(spec, stdout, stderr)
	if err != nil {
		return nil, err
	}
	if spec.Cgroup != nil {
		left, err := intoCgroup(*spec.Cgroup, cmd)
		if err != nil {
			return nil, err
		}
		defer left()
	}
	if err := cmd.Start(); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) && pe.Op == "chdir" {
			return nil, dirError(spec.Dir, err)
		}
		return nil, err
	}
	return cmd, nil
}

// intoCgroup makes cmd start in the cgroup p: on v2 by a fork into it
// (clone3, CLONE_INTO_CGROUP), on v1 by moving the calling (locked) thread
// into it first, since a child starts in its forking thread's cgroups.
// left, called once cmd started (or failed to), closes the cgroup's
// descriptor or moves the thread back.
func intoCgroup(p cgroups.Placement, cmd *exec.Cmd) (left func(), err error) {
	if p.Unified != "" {
		fd, err := p.FD()
		if err != nil {
			return nil, err
		}
		cmd.SysProcAttr.UseCgroupFD = true
		cmd.SysProcAttr.CgroupFD = fd
		return func() { unix.Close(fd) }, nil
	}
	restore, err := p.EnterThread()
	if err != nil {
		return nil, err
	}
	return func() {
		// The thread ends with its goroutine (locked, never unlocked),
		// unless it is the main thread, which Go never ends: only that
		// one goes back, since each move waits for an RCU grace period.
		if unix.Gettid() == unix.Getpid() {
			_ = restore()
		}
	}, nil
}

// threadNamespaces are the calling thread's mount and UTS namespaces.
type threadNamespaces struct{ mnt, uts int }

func openNamespaces() (threadNamespaces, error) {
	var ns threadNamespaces
	var err error
	if ns.mnt, err = unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		return ns, os.NewSyscallError("open the thread's mount namespace", err)
	}
	if ns.uts, err = unix.Open("/proc/thread-self/ns/uts", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		unix.Close(ns.mnt)
		return ns, os.NewSyscallError("open the thread's UTS namespace", err)
	}
	return ns, nil
}

// restore moves the calling thread back into ns, as far as it can (the
// thread is never used again either way), and closes them.
func (ns threadNamespaces) restore() {
	_ = unix.Setns(ns.mnt, unix.CLONE_NEWNS)
	_ = unix.Setns(ns.uts, unix.CLONE_NEWUTS)
	unix.Close(ns.mnt)
	unix.Close(ns.uts)
}
