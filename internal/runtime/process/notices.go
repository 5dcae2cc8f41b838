package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// warningBuffer is how many warnings wait for the consumer before new ones
// are dropped (and logged).
const warningBuffer = 64

// maxNoticeLine bounds a line of the notices FIFO (a shim writes less than
// PIPE_BUF a notice); a longer one is skipped.
const maxNoticeLine = 64 << 10

// Warnings reports what the shims say went wrong that a pod's owner should
// see: output their container's log could not take (a full disk). Each is
// reported once; when the consumer does not keep up, a warning is dropped
// (and logged) rather than holding up a shim's watcher.
func (r *Runtime) Warnings() <-chan runtime.Warning { return r.warnings }

// warn hands w to the consumer, or drops it when the buffer is full.
func (r *Runtime) warn(w runtime.Warning, log *slog.Logger) {
	select {
	case r.warnings <- w:
	default:
		log.Warn("warning dropped: nobody reads them", "reason", w.Reason, "message", w.Message)
	}
}

// noticeReader reads the notices of one instance's shim (the FIFO
// shim.NoticesFile) while the runtime watches the instance: the shim's own
// warnings and errors go to the runtime's log, output its log could not
// take becomes a Warning, and an exit it could not write to disk is kept
// for settle. It holds the FIFO open for reading and writing, so that a
// shim always finds a reader and a read never sees the end of the FIFO.
// The Runtime's poller tells it when there is something to read.
type noticeReader struct {
	r  *Runtime
	in *instance

	mu     sync.Mutex // held while reading; guards what follows
	fd     int        // the FIFO, non-blocking
	key    int32      // fd's key in the poller
	closed bool       // finish closed fd
	line   []byte     // an unfinished line
	exit   *shim.Exit
}

// readNotices starts reading the notices of in; nil when its instance has
// no notices FIFO (an older shim's), or when it cannot be read.
func (r *Runtime) readNotices(in *instance) *noticeReader {
	path := filepath.Join(in.dir, shim.NoticesFile)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		if !errors.Is(err, unix.ENOENT) {
			in.logger(r.log).Warn("cannot read the shim's notices", "err", &fs.PathError{Op: "open", Path: path, Err: err})
		}
		return nil
	}
	nr := &noticeReader{r: r, in: in, fd: fd}
	nr.mu.Lock()
	defer nr.mu.Unlock()
	if nr.key, err = r.poller.add(fd, false, nr.readAvailable); err != nil {
		if !errors.Is(err, errPollerClosed) {
			in.logger(r.log).Warn("cannot read the shim's notices", "err", err)
		}
		unix.Close(fd)
		return nil
	}
	return nr
}

// readAvailable reads what the FIFO holds now, without waiting: the
// poller's handler.
func (nr *noticeReader) readAvailable() {
	nr.mu.Lock()
	defer nr.mu.Unlock()
	nr.drainLocked()
}

// drainLocked reads the FIFO until it is empty; nr.mu is held.
func (nr *noticeReader) drainLocked() {
	if nr.closed {
		return
	}
	var buf [4096]byte
	for {
		n, err := unix.Read(nr.fd, buf[:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if n > 0 {
			nr.take(buf[:n])
		}
		if err != nil || n <= 0 {
			if err != nil && !errors.Is(err, unix.EAGAIN) {
				nr.in.logger(nr.r.log).Warn("read the shim's notices", "err", err)
			}
			return
		}
	}
}

// take handles the complete lines of what was read.
func (nr *noticeReader) take(p []byte) {
	nr.line = append(nr.line, p...)
	for {
		i := bytes.IndexByte(nr.line, '\n')
		if i < 0 {
			if len(nr.line) > maxNoticeLine {
				nr.in.logger(nr.r.log).Warn("a notice line of the shim is too long; skipped")
				nr.line = nr.line[:0]
			}
			return
		}
		nr.handle(nr.line[:i])
		nr.line = nr.line[i+1:]
	}
}

func (nr *noticeReader) handle(line []byte) {
	log := nr.in.logger(nr.r.log)
	nt, err := shim.DecodeNotice(line)
	if err != nil {
		log.Warn("a notice of the shim cannot be read", "err", err)
		return
	}
	if nt.Message != "" {
		level := slog.LevelWarn
		if err := level.UnmarshalText([]byte(nt.Level)); err != nil {
			level = slog.LevelWarn
		}
		log.Log(context.Background(), level, "shim: "+nt.Message, "at", nt.Time)
	}
	if d := nt.LogDropped; d != nil {
		msg := fmt.Sprintf("%d bytes of the container's %s were dropped: its log could not be written (%s)", d.Bytes, d.Stream, d.Cause)
		if d.Marked {
			msg += "; a line in the log marks the gap"
		} else {
			msg += " until it exited"
		}
		log.Warn("container output dropped", "stream", d.Stream, "bytes", d.Bytes, "cause", d.Cause)
		nr.r.warn(runtime.Warning{PodUID: nr.in.podUID, Container: nr.in.container, ID: nr.in.id, Reason: runtime.WarningLogDropped, Message: msg}, log)
	}
	if nt.Exit != nil {
		nr.exit = nt.Exit // nr.mu is held: see drainLocked
	}
}

// finish stops the reading once the shim is gone, after reading what it
// wrote last, and returns the exit it sent, if any. It closes the FIFO. A
// nil noticeReader returns nil.
func (nr *noticeReader) finish() *shim.Exit {
	if nr == nil {
		return nil
	}
	nr.r.poller.remove(nr.key)
	nr.mu.Lock()
	defer nr.mu.Unlock()
	// What the shim wrote last: the FIFO has no writer left but this
	// reader, so the read stops at EAGAIN.
	nr.drainLocked()
	if !nr.closed {
		nr.closed = true
		unix.Close(nr.fd)
	}
	return nr.exit
}
