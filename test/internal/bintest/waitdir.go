package bintest

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// WaitInDir waits, up to within, until cond holds, asking it again at each
// change in dir (a file created, written, closed or moved in): it watches
// with inotify, it never polls. It reports whether cond held in time; a
// failure to watch is an error.
func WaitInDir(dir string, cond func() bool, within time.Duration) (bool, error) {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return false, fmt.Errorf("inotify: %w", err)
	}
	defer unix.Close(fd)
	// Watch first, then look: a change after the look wakes the poll.
	mask := uint32(unix.IN_CREATE | unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_MOVED_TO)
	if _, err := unix.InotifyAddWatch(fd, dir, mask); err != nil {
		return false, fmt.Errorf("inotify watch %s: %w", dir, err)
	}
	deadline := time.Now().Add(within)
	buf := make([]byte, 64*1024)
	for {
		if cond() {
			return true, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(fds, int(left/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			return false, fmt.Errorf("poll inotify: %w", err)
		}
		for {
			if n, err := unix.Read(fd, buf); n <= 0 || err != nil {
				break
			}
		}
	}
}
