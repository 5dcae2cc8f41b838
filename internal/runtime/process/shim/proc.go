package shim

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ErrGone is returned by OpenProc for a process that is not there any more:
// it exited and was reaped, or its PID now belongs to another process.
var ErrGone = errors.New("process is gone")

// longAgo is a deadline that has always passed: setting it wakes a read.
var longAgo = time.Unix(1, 0)

// Ident names one process for the lifetime of the machine: a PID alone may
// be reused once its process was reaped, a PID with the process's start
// time and the boot it belongs to cannot.
type Ident struct {
	Pid int `json:"pid"`
	// StartTime is field 22 of /proc/<pid>/stat: clock ticks after boot.
	StartTime uint64 `json:"startTime"`
	BootID    string `json:"bootID"`
}

// IdentOf returns the identity of the running process pid. The caller must
// know that pid is the process it means (its own child, not reaped yet).
func IdentOf(pid int) (Ident, error) {
	start, err := startTime(pid)
	if err != nil {
		return Ident{}, err
	}
	boot, err := bootID()
	if err != nil {
		return Ident{}, err
	}
	return Ident{Pid: pid, StartTime: start, BootID: boot}, nil
}

var bootIDOnce = sync.OnceValues(func() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("boot ID: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
})

func bootID() (string, error) { return bootIDOnce() }

// startTime reads the start time of process pid from /proc.
func startTime(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name, field 2, is in parentheses and may hold anything;
	// the fields after its last ')' start with field 3.
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	const startTimeField = 22 - 3
	if len(fields) <= startTimeField {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(fields)+2)
	}
	v, err := strconv.ParseUint(fields[startTimeField], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return v, nil
}

// Proc is a handle on one process that stays valid whatever happens to its
// PID: a pidfd. It tells when the process exits, without polling, and can
// signal it.
type Proc struct {
	id Ident
	f  *os.File // the pidfd, non-blocking, in the runtime's poller
}

// OpenProc returns a handle on the process id names, or ErrGone when it is
// not there any more. A process that exited but was not reaped yet (a
// zombie) is still there, and its handle's Wait returns at once.
func OpenProc(id Ident) (*Proc, error) {
	boot, err := bootID()
	if err != nil {
		return nil, err
	}
	if id.BootID != boot || id.Pid <= 0 {
		return nil, ErrGone
	}
	fd, err := unix.PidfdOpen(id.Pid, unix.PIDFD_NONBLOCK)
	if errors.Is(err, unix.ESRCH) {
		return nil, ErrGone
	}
	if err != nil {
		return nil, os.NewSyscallError("pidfd_open", err)
	}
	p := &Proc{id: id, f: os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(id.Pid))}
	// The pidfd is the process that had the PID when it was opened; that
	// is the one id names if it has id's start time, read while the pidfd's
	// process was still unreaped (so still the PID's owner).
	start, err := startTime(id.Pid)
	if err == nil && start == id.StartTime && p.alive() {
		return p, nil
	}
	p.Close()
	if err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ESRCH) {
		return nil, err
	}
	return nil, ErrGone
}

// openChild returns a handle on pid, a child of this process that was not
// waited for yet, so that its PID cannot have been reused.
func openChild(pid int) (*Proc, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, os.NewSyscallError("pidfd_open", err)
	}
	p := &Proc{f: os.NewFile(uintptr(fd), "pidfd:"+strconv.Itoa(pid))}
	if p.id, err = IdentOf(pid); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Ident is the process's identity.
func (p *Proc) Ident() Ident { return p.id }

// control runs fn with the pidfd. (File.Fd would put the pidfd in
// blocking mode and so break Wait.)
func (p *Proc) control(fn func(fd int) error) error {
	rc, err := p.f.SyscallConn()
	if err != nil {
		return err
	}
	var ferr error
	if err := rc.Control(func(fd uintptr) { ferr = fn(int(fd)) }); err != nil {
		return err
	}
	return ferr
}

// alive says whether the process was not reaped yet (it may be a zombie).
func (p *Proc) alive() bool {
	err := p.control(func(fd int) error { return unix.PidfdSendSignal(fd, 0, nil, 0) })
	return err == nil || errors.Is(err, unix.EPERM)
}

// Exited says, without waiting, whether the process exited.
func (p *Proc) Exited() bool {
	var exited bool
	_ = p.control(func(fd int) error {
		exited = readable(uintptr(fd))
		return nil
	})
	return exited
}

// Wait returns nil once the process exited, or ctx.Err() when ctx ends
// first. It parks in the runtime's poller, not in a thread.
func (p *Proc) Wait(ctx context.Context) error {
	rc, err := p.f.SyscallConn()
	if err != nil {
		return err
	}
	stop := context.AfterFunc(ctx, func() { _ = p.f.SetReadDeadline(longAgo) })
	defer stop()
	err = rc.Read(func(fd uintptr) bool { return readable(fd) })
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if err != nil {
		return fmt.Errorf("wait for process %d: %w", p.id.Pid, err)
	}
	return nil
}

// readable says whether the pidfd fd polls readable: its process exited.
func readable(fd uintptr) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// Signal sends sig to the process itself (not its group). A process that
// is gone is not an error.
func (p *Proc) Signal(sig syscall.Signal) error {
	err := p.control(func(fd int) error { return unix.PidfdSendSignal(fd, sig, nil, 0) })
	if err != nil && !errors.Is(err, unix.ESRCH) {
		return os.NewSyscallError("pidfd_send_signal", err)
	}
	return nil
}

// Reap collects the exit status of the process if it is a child of this
// process that exited, so that it does not stay a zombie; for anyone
// else's process it does nothing.
func (p *Proc) Reap() {
	_ = p.control(func(fd int) error {
		var info unix.Siginfo
		for {
			err := unix.Waitid(unix.P_PIDFD, fd, &info, unix.WEXITED|unix.WNOHANG, nil)
			if !errors.Is(err, unix.EINTR) {
				return err
			}
		}
	})
}

// Close releases the handle; it does nothing to the process.
func (p *Proc) Close() { _ = p.f.Close() }

// KillGroup sends SIGKILL to the process group that the process id names
// led (its group's ID is its PID), whether the leader still runs or not,
// and says whether there was a group to signal. A group's ID is not given
// to a new process while any member of the group lives: the kernel keeps
// the number as long as a process has it as its PID, process group or
// session. So when id's PID belongs to another process now (another start
// time), its group was empty, and nothing is sent; nor for a process of
// another boot.
func KillGroup(id Ident) (bool, error) {
	boot, err := bootID()
	if err != nil {
		return false, err
	}
	// Never 0 or 1: kill(0) is our own group, kill(-1) every process.
	if id.BootID != boot || id.Pid <= 1 {
		return false, nil
	}
	start, err := startTime(id.Pid)
	switch {
	case err == nil && start != id.StartTime:
		return false, nil
	case err != nil && !errors.Is(err, os.ErrNotExist) && !errors.Is(err, syscall.ESRCH):
		return false, err
	}
	err = unix.Kill(-id.Pid, unix.SIGKILL)
	if errors.Is(err, unix.ESRCH) {
		return false, nil
	}
	if err != nil {
		return false, os.NewSyscallError("kill", err)
	}
	return true, nil
}
