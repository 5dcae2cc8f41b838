package process

import (
	"fmt"
	"os"
	"strconv"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/runtime/process/launch"
)

// execPTY opens the pty of an exec with a terminal: in the container's own
// devpts when it has a /dev of its own (launch.Security.Devices), so that
// the command's terminal is one of the container's (ttyname finds it under
// its /dev/pts, as runc's exec gives it), and none of the host's ptys is
// in the container's view; else on the host's.
func execPTY(spec launch.Spec) (master, slave *os.File, err error) {
	if spec.Security == nil || !spec.Security.Devices || spec.Join == nil || spec.Join.Mnt == nil {
		return pty.Open()
	}
	return openPTYAt("/proc/" + strconv.Itoa(spec.Join.Pid) + "/root/dev/pts/ptmx")
}

// openPTYAt opens a new pty of the devpts whose ptmx is at ptmx: its
// master, unlocked, and its slave through the master (TIOCGPTPEER), never
// by a path, which is the container's.
func openPTYAt(ptmx string) (master, slave *os.File, err error) {
	master, err = os.OpenFile(ptmx, os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("open the container's ptmx: %w", err)
	}
	rc, err := master.SyscallConn()
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	sfd := -1
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr != nil {
			return
		}
		r, _, errno := unix.Syscall(unix.SYS_IOCTL, fd, unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
		if errno != 0 {
			ierr = os.NewSyscallError("ioctl TIOCGPTPEER", errno)
			return
		}
		sfd = int(r)
	}); err != nil {
		ierr = err
	}
	if ierr != nil {
		master.Close()
		return nil, nil, fmt.Errorf("the pty's slave: %w", ierr)
	}
	return master, os.NewFile(uintptr(sfd), "pty"), nil
}
