package launch

import (
	"fmt"
	"os"
	"os/exec"
	goruntime "runtime"
	"strconv"

	"golang.org/x/sys/unix"
)

// Namespaces are the mount and UTS namespaces of a running process that a
// process joins instead of making namespaces of its own (Spec.Join): an
// exec in a running container, or an ephemeral container started by its
// shim in its target's (kubectl debug --target), which so sees the mounts
// the container made itself and the host name it set, as runc's exec joins
// its container's namespaces.
type Namespaces struct {
	// Mnt, UTS and PID are the process's open /proc/PID/ns/mnt, ns/uts
	// and ns/pid; nil is a namespace this process shares with it (a
	// container without mounts or without a host name of its own is in
	// the host's, one with hostPID in its PID namespace), which the
	// joining process keeps. The joining process is forked into PID
	// (forkInto): a process cannot enter a PID namespace itself.
	Mnt, UTS, PID *os.File
	// Pid is the process whose namespaces these are.
	Pid int
}

// OpenNamespaces opens the mount and UTS namespaces of process pid,
// leaving out those this process is in too. The caller must check, after
// it returned, that pid still is the process it means (not reaped since,
// so its PID not reused: a pidfd's process that has not exited), and owns
// the result, which it closes once the process that joins them started.
func OpenNamespaces(pid int) (*Namespaces, error) {
	ns := &Namespaces{Pid: pid}
	for _, n := range []struct {
		name string
		f    **os.File
	}{{"mnt", &ns.Mnt}, {"uts", &ns.UTS}, {"pid", &ns.PID}} {
		f, err := openNamespace(pid, n.name)
		if err != nil {
			ns.Close()
			return nil, err
		}
		*n.f = f
	}
	return ns, nil
}

// openNamespace opens /proc/PID/ns/<name>, or returns nil when it is the
// namespace of the calling thread, which no thread of this process leaves
// but a locked one (startIsolated's, CanUnshareUTS's).
func openNamespace(pid int, name string) (*os.File, error) {
	path := "/proc/" + strconv.Itoa(pid) + "/ns/" + name
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the %s namespace of process %d: %w", name, pid, err)
	}
	var theirs, ours unix.Stat_t
	err = unix.Fstat(int(f.Fd()), &theirs)
	if err == nil {
		err = unix.Stat("/proc/thread-self/ns/"+name, &ours)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("the %s namespace of process %d: %w", name, pid, err)
	}
	if theirs.Dev == ours.Dev && theirs.Ino == ours.Ino {
		f.Close()
		return nil, nil
	}
	return f, nil
}

// Close closes the namespaces' files. It may be called on nil.
func (ns *Namespaces) Close() {
	if ns == nil {
		return
	}
	for _, f := range []*os.File{ns.Mnt, ns.UTS, ns.PID} {
		if f != nil {
			f.Close()
		}
	}
}

// join moves the calling thread, which must be locked to its goroutine and
// never run another one (the init helper's main thread), into the
// namespaces open as mntFD and utsFD (0: none; the standard streams are
// never one), and closes them. A thread
// of a Go program shares its filesystem attributes (CLONE_FS: root,
// working directory) with the others, and the kernel lets such a thread
// join no mount namespace: it unshares them first, which only this thread
// sees. The namespace's root becomes its root and working directory.
func join(mntFD, utsFD int) error {
	defer func() {
		for _, fd := range []int{mntFD, utsFD} {
			if fd > 0 {
				unix.Close(fd)
			}
		}
	}()
	if mntFD > 0 {
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			return fmt.Errorf("init helper: unshare the filesystem attributes: %w", os.NewSyscallError("unshare", err))
		}
		if err := unix.Setns(mntFD, unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("init helper: join the container's mount namespace: %w", os.NewSyscallError("setns", err))
		}
	}
	if utsFD > 0 {
		if err := unix.Setns(utsFD, unix.CLONE_NEWUTS); err != nil {
			return fmt.Errorf("init helper: join the container's UTS namespace: %w", os.NewSyscallError("setns", err))
		}
	}
	return nil
}

// pidNamespace is the PID namespace to fork a joining process into; nil:
// none (ns is nil, or the container is in this process's).
func (ns *Namespaces) pidNamespace() *os.File {
	if ns == nil {
		return nil
	}
	return ns.PID
}

// forkInto starts cmd in the PID namespace pidns: from a thread of its own
// that joins it for its children (setns moves only where the calling
// thread's children are born, a process never leaves its own), and ends
// with its goroutine, never unlocked, so that no other goroutine runs on
// it.
func forkInto(pidns *os.File, cmd *exec.Cmd) error {
	done := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		if err := unix.Setns(int(pidns.Fd()), unix.CLONE_NEWPID); err != nil {
			done <- fmt.Errorf("join the container's PID namespace: %w", os.NewSyscallError("setns", err))
			return
		}
		done <- cmd.Start()
	}()
	return <-done
}
