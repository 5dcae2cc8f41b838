package shim

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// tether kills the container once the process pid, the shim's parent, is
// gone (Spec.Tether). It watches a pidfd of the parent, which becomes
// readable when the whole process has exited, whichever thread forked the
// shim: PR_SET_PDEATHSIG would fire when that one thread ends, which a Go
// program does not control. The parent is checked after the pidfd is
// opened, so that one that died just before is not missed. On a kernel
// without pidfds (before 5.3) the container is not tied: it is left to the
// next run or agent on the root, as without a tether, and the shim says so
// in its log.
func (s *supervisor) tether(pid int) {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		if errors.Is(err, unix.ENOSYS) {
			s.log.Warn("no pidfd on this kernel: the container is not tied to its foreground run", "parent", pid)
			return
		}
		if !errors.Is(err, unix.ESRCH) {
			s.log.Error("watch the foreground run", "parent", pid, "err", err)
			return
		}
	} else {
		defer unix.Close(fd)
	}
	if err == nil && os.Getppid() == pid {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			_, err := unix.Poll(fds, -1)
			if err == nil {
				break
			}
			if !errors.Is(err, unix.EINTR) {
				s.log.Error("watch the foreground run", "parent", pid, "err", err)
				return
			}
		}
	}
	s.log.Warn("the foreground run that started this container is gone: killing the container", "parent", pid)
	s.signal(unix.SIGKILL)
}
