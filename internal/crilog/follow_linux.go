package crilog

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// watcher wakes a follower when its file was written to, renamed or
// removed, or when a file was made in its directory (the new file of a
// rotated log).
type watcher struct {
	f    *os.File
	fd   int // f's descriptor, for adding watches
	file int // the watch of the file
	buf  []byte
}

// Events of the followed file, and of its directory.
const (
	fileEvents = unix.IN_MODIFY | unix.IN_MOVE_SELF | unix.IN_DELETE_SELF
	dirEvents  = unix.IN_CREATE | unix.IN_MOVED_TO
)

func watch(path string) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	file, err := unix.InotifyAddWatch(fd, path, fileEvents)
	if err == nil {
		_, err = unix.InotifyAddWatch(fd, filepath.Dir(path), dirEvents)
	}
	if err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("inotify_add_watch", err)
	}
	// The descriptor is non-blocking, so os.File puts it in the runtime's
	// poller and a read deadline can interrupt a wait.
	return &watcher{f: os.NewFile(uintptr(fd), "inotify:"+path), fd: fd, file: file, buf: make([]byte, 4096)}, nil
}

// rewatch watches f instead of the file watched so far (the log was
// rotated and f is its new file). It watches the open file itself, through
// /proc/self/fd, since the path may name yet another file by now.
func (w *watcher) rewatch(f *os.File) error {
	if _, err := unix.InotifyRmWatch(w.fd, uint32(w.file)); err != nil && !errors.Is(err, unix.EINVAL) {
		return os.NewSyscallError("inotify_rm_watch", err)
	}
	file, err := unix.InotifyAddWatch(w.fd, fmt.Sprintf("/proc/self/fd/%d", f.Fd()), fileEvents)
	if err != nil {
		return os.NewSyscallError("inotify_add_watch", err)
	}
	w.file = file
	return nil
}

// longAgo is a deadline that has always passed: setting it wakes a read.
var longAgo = time.Unix(1, 0)

// wait returns once the file was modified since the previous wait (or since
// watch), or with ctx.Err() once ctx is done.
func (w *watcher) wait(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { _ = w.f.SetReadDeadline(longAgo) })
	defer stop()
	_, err := w.f.Read(w.buf) // drains every queued event: they all mean "read on"
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if err != nil {
		return fmt.Errorf("wait for inotify events: %w", err)
	}
	return nil
}

func (w *watcher) close() { _ = w.f.Close() }
