package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

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
type noticeReader struct {
	r   *Runtime
	in  *instance
	log *slog.Logger
	f   *os.File

	line []byte        // an unfinished line
	done chan struct{} // closed when the reading goroutine returned

	mu   sync.Mutex
	exit *shim.Exit
}

// readNotices starts reading the notices of in; nil when its instance has
// no notices FIFO (an older shim's).
func (r *Runtime) readNotices(in *instance, log *slog.Logger) *noticeReader {
	path := filepath.Join(in.dir, shim.NoticesFile)
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("cannot read the shim's notices", "err", err)
		}
		return nil
	}
	nr := &noticeReader{r: r, in: in, log: log, f: f, done: make(chan struct{})}
	go nr.run()
	return nr
}

func (nr *noticeReader) run() {
	defer close(nr.done)
	buf := make([]byte, 4096)
	for {
		n, err := nr.f.Read(buf)
		nr.take(buf[:n])
		if err != nil {
			return // finish set the deadline, or the FIFO broke
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
				nr.log.Warn("a notice line of the shim is too long; skipped")
				nr.line = nr.line[:0]
			}
			return
		}
		nr.handle(nr.line[:i])
		nr.line = nr.line[i+1:]
	}
}

func (nr *noticeReader) handle(line []byte) {
	nt, err := shim.DecodeNotice(line)
	if err != nil {
		nr.log.Warn("a notice of the shim cannot be read", "err", err)
		return
	}
	if nt.Message != "" {
		level := slog.LevelWarn
		if err := level.UnmarshalText([]byte(nt.Level)); err != nil {
			level = slog.LevelWarn
		}
		nr.log.Log(context.Background(), level, "shim: "+nt.Message, "at", nt.Time)
	}
	if d := nt.LogDropped; d != nil {
		msg := fmt.Sprintf("%d bytes of the container's %s were dropped: its log could not be written (%s)", d.Bytes, d.Stream, d.Cause)
		if d.Marked {
			msg += "; a line in the log marks the gap"
		} else {
			msg += " until it exited"
		}
		nr.log.Warn("container output dropped", "stream", d.Stream, "bytes", d.Bytes, "cause", d.Cause)
		nr.r.warn(runtime.Warning{PodUID: nr.in.podUID, Container: nr.in.container, ID: nr.in.id, Reason: runtime.WarningLogDropped, Message: msg}, nr.log)
	}
	if nt.Exit != nil {
		nr.mu.Lock()
		nr.exit = nt.Exit
		nr.mu.Unlock()
	}
}

// longAgo is a deadline that has always passed: setting it wakes a read.
var longAgo = time.Unix(1, 0)

// finish stops the reading once the shim is gone, after reading what it
// wrote last, and returns the exit it sent, if any. It closes the FIFO. A
// nil noticeReader returns nil.
func (nr *noticeReader) finish() *shim.Exit {
	if nr == nil {
		return nil
	}
	_ = nr.f.SetReadDeadline(longAgo)
	<-nr.done
	// What the shim wrote last, without waiting: the FIFO has no writer
	// left but this reader, so a read would wait for ever.
	_ = nr.f.SetReadDeadline(time.Time{})
	if rc, err := nr.f.SyscallConn(); err == nil {
		buf := make([]byte, 4096)
		for {
			var n int
			var rerr error
			if err := rc.Read(func(fd uintptr) bool {
				n, rerr = unix.Read(int(fd), buf)
				return true
			}); err != nil || rerr != nil || n <= 0 {
				if rerr != nil && !errors.Is(rerr, syscall.EAGAIN) {
					nr.log.Warn("read the shim's last notices", "err", rerr)
				}
				break
			}
			nr.take(buf[:n])
		}
	}
	_ = nr.f.Close()
	nr.mu.Lock()
	defer nr.mu.Unlock()
	return nr.exit
}
