package crilog

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// watcher wakes a follower when its file was written to, renamed, closed
// by a writer or removed, or when a file was made in its directory (the new
// file of a rotated log).
type watcher struct {
	f    *os.File
	fd   int // f's descriptor, for adding watches
	file int // the watch of the file
	buf  []byte

	// closed is set once a writer closed the watched file (since it was
	// watched): a rotated log's writer has moved on to the new file.
	closed bool
	// rotated is when the follower found its file rotated and began to
	// wait for its writer to close it; wakeAt is when to stop waiting.
	rotated time.Time
}

// Events of the followed file, and of its directory.
const (
	fileEvents = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_MOVE_SELF | unix.IN_DELETE_SELF
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
	w.file, w.closed, w.rotated = file, false, time.Time{}
	return nil
}

// writerGone says whether the writer of the watched file, which the
// follower found rotated, is done with it: it closed the file, or it did
// not within rotationGrace of the rotation (its close came before the
// file was watched, say). Until then the follower reads on in the file:
// a runtime may still write what it had there after it opened the new one
// (containerd's ReopenContainerLog flushes its old writer afterwards), and
// wait wakes it at the end of the grace.
func (w *watcher) writerGone() bool {
	if w.closed {
		return true
	}
	if w.rotated.IsZero() {
		w.rotated = time.Now()
	}
	return time.Since(w.rotated) >= rotationGrace
}

// stillCurrent says the followed file is the log again (a rotation that
// was undone), or still is.
func (w *watcher) stillCurrent() { w.rotated = time.Time{} }

// longAgo is a deadline that has always passed: setting it wakes a read.
var longAgo = time.Unix(1, 0)

// wait returns once the file was modified since the previous wait (or since
// watch), or with ctx.Err() once ctx is done. While the follower waits for
// the writer of its rotated file to close it, it also returns at the end of
// rotationGrace.
func (w *watcher) wait(ctx context.Context) error {
	if !w.rotated.IsZero() {
		_ = w.f.SetReadDeadline(w.rotated.Add(rotationGrace))
		defer func() { _ = w.f.SetReadDeadline(time.Time{}) }()
	}
	stop := context.AfterFunc(ctx, func() { _ = w.f.SetReadDeadline(longAgo) })
	defer stop()
	n, err := w.f.Read(w.buf) // drains the queued events: they all mean "read on"
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil // the grace of a rotated file is over
	}
	if err != nil {
		return fmt.Errorf("wait for inotify events: %w", err)
	}
	w.note(w.buf[:n])
	return nil
}

// note looks for the watched file's IN_CLOSE_WRITE among the events in b.
func (w *watcher) note(b []byte) {
	for len(b) >= unix.SizeofInotifyEvent {
		wd := int32(binary.NativeEndian.Uint32(b[0:4]))
		mask := binary.NativeEndian.Uint32(b[4:8])
		nameLen := binary.NativeEndian.Uint32(b[12:16])
		if int(wd) == w.file && mask&unix.IN_CLOSE_WRITE != 0 {
			w.closed = true
		}
		next := unix.SizeofInotifyEvent + int(nameLen)
		if next > len(b) {
			return
		}
		b = b[next:]
	}
}

func (w *watcher) close() { _ = w.f.Close() }
