package crilog

import (
	"context"
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// watcher wakes a follower when its file was written to.
type watcher struct {
	f   *os.File
	buf []byte
}

func watch(path string) (*watcher, error) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("inotify_init1", err)
	}
	if _, err := unix.InotifyAddWatch(fd, path, unix.IN_MODIFY); err != nil {
		unix.Close(fd)
		return nil, os.NewSyscallError("inotify_add_watch", err)
	}
	// The descriptor is non-blocking, so os.File puts it in the runtime's
	// poller and a read deadline can interrupt a wait.
	return &watcher{f: os.NewFile(uintptr(fd), "inotify:"+path), buf: make([]byte, 4096)}, nil
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
