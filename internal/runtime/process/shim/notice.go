package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Notice is one message of a shim to the agent, a line of JSON on the
// instance's notices FIFO: what went wrong that the agent is to report. A
// FIFO needs no room on the disk, so notices reach the agent when the shim's
// own log (shim.log) and its files cannot be written: on a full state disk.
// Each is shorter than PIPE_BUF, so that it is written whole or not at all.
type Notice struct {
	Time time.Time `json:"time"`
	// Level and Message are one of the shim's own warnings or errors (its
	// slog level, "WARN" or "ERROR", and its text with its attributes).
	Level   string `json:"level,omitempty"`
	Message string `json:"message,omitempty"`
	// LogDropped is output of the container its log could not take.
	LogDropped *LogDrop `json:"logDropped,omitempty"`
	// Exit is how the instance ended, sent when exit.json could not be
	// written: the agent records it instead.
	Exit *Exit `json:"exit,omitempty"`
}

// LogDrop is output of one stream of the container that its log could not
// take.
type LogDrop struct {
	Stream string `json:"stream"`
	Bytes  int64  `json:"bytes"`
	// Cause is why ("no space left on device").
	Cause string `json:"cause"`
	// Marked says a marker line in the log shows the gap; false for output
	// lost until the container exited.
	Marked bool `json:"marked"`
}

// Bounds of the notices: a line must stay under PIPE_BUF (4096 bytes on
// Linux), so texts are cut; at most maxQueued wait for an agent to read
// them (the oldest warnings go first).
const (
	maxNoticeText = 1024
	maxQueued     = 32
	// noticeRetry is how often a shim with notices waiting tries again
	// while no agent reads them.
	noticeRetry = 2 * time.Second
	// noticeFlush bounds how long an exiting shim tries to hand over its
	// last notices.
	noticeFlush = time.Second
)

// notifier sends a shim's notices to the agent, from a goroutine of its
// own, so that nothing the container does waits for the agent: a notice
// that no agent reads (the agent is down, or the FIFO is full) waits in a
// bounded queue and is tried again every noticeRetry.
type notifier struct {
	path  string
	clock shimClock

	mu     sync.Mutex
	queue  []Notice
	fifo   *os.File // open while an agent reads
	closed bool

	wake chan struct{} // 1 slot
	done chan struct{}
}

func newNotifier(dir string, clk shimClock) *notifier {
	n := &notifier{path: filepath.Join(dir, NoticesFile), clock: clk, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go n.run()
	return n
}

// send queues nt (stamped now) for the agent. It never blocks.
func (n *notifier) send(nt Notice) {
	nt.Time = n.clock.Now()
	nt.Message = cut(nt.Message)
	if nt.LogDropped != nil {
		nt.LogDropped.Cause = cut(nt.LogDropped.Cause)
	}
	if nt.Exit != nil {
		e := *nt.Exit
		e.Message = cut(e.Message)
		nt.Exit = &e
	}
	n.mu.Lock()
	if len(n.queue) == maxQueued {
		n.queue = n.queue[1:]
	}
	n.queue = append(n.queue, nt)
	n.mu.Unlock()
	select {
	case n.wake <- struct{}{}:
	default:
	}
}

func cut(s string) string {
	if len(s) <= maxNoticeText {
		return s
	}
	return s[:maxNoticeText] + "..."
}

func (n *notifier) run() {
	defer close(n.done)
	for {
		var retry shimTimer
		var retryC <-chan time.Time
		if n.deliver() {
			retry = n.clock.NewTimer(noticeRetry)
			retryC = retry.C()
		}
		open := true
		select {
		case _, open = <-n.wake:
		case <-retryC:
		}
		if retry != nil {
			retry.Stop()
		}
		if !open {
			return
		}
	}
}

// deliver writes the queued notices while an agent reads them; it reports
// whether some are left.
func (n *notifier) deliver() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	for len(n.queue) > 0 {
		if n.fifo == nil {
			f, err := openWriteNonblock(n.path)
			if err != nil {
				return true // no agent reads: later
			}
			n.fifo = f
		}
		line, err := json.Marshal(n.queue[0])
		if err != nil {
			n.queue = n.queue[1:]
			continue
		}
		if _, err := n.fifo.Write(append(line, '\n')); err != nil {
			// EAGAIN: the agent is slow; EPIPE: it is gone.
			if !errors.Is(err, syscall.EAGAIN) {
				n.fifo.Close()
				n.fifo = nil
			}
			return true
		}
		n.queue = n.queue[1:]
	}
	return false
}

// openWriteNonblock opens the FIFO at path for writing, failing at once
// (ENXIO) when nobody has it open for reading.
func openWriteNonblock(path string) (*os.File, error) {
	fd, err := unix.Open(path, unix.O_WRONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	// A raw descriptor: os.NewFile of a non-blocking FIFO would put it in
	// the poller, whose writes wait instead of failing with EAGAIN.
	return os.NewFile(uintptr(fd), path), nil
}

// flush tries, for at most noticeFlush, to hand the notices still queued
// to an agent, then stops the notifier. Notices sent later are lost.
func (n *notifier) flush() {
	deadline := n.clock.Now().Add(noticeFlush)
	for n.deliver() && n.clock.Now().Before(deadline) {
		t := n.clock.NewTimer(50 * time.Millisecond)
		<-t.C()
	}
	n.mu.Lock()
	if !n.closed {
		n.closed = true
		close(n.wake)
	}
	if n.fifo != nil {
		n.fifo.Close()
		n.fifo = nil
	}
	n.mu.Unlock()
	<-n.done
}

// noticeHandler is the shim's log handler: every record goes to next (the
// shim's stderr, shim.log), and warnings and errors also to the agent as
// notices, with their own attributes (the agent knows the instance).
type noticeHandler struct {
	next slog.Handler
	n    *notifier
}

func (h noticeHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn || h.next.Enabled(ctx, l)
}

func (h noticeHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		var b strings.Builder
		b.WriteString(r.Message)
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			return true
		})
		h.n.send(Notice{Level: r.Level.String(), Message: b.String()})
	}
	if !h.next.Enabled(ctx, r.Level) {
		return nil
	}
	// The shim's own log may be on a full disk: what it cannot take went
	// to the agent above.
	return h.next.Handle(ctx, r)
}

func (h noticeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return noticeHandler{next: h.next.WithAttrs(attrs), n: h.n}
}

func (h noticeHandler) WithGroup(name string) slog.Handler {
	return noticeHandler{next: h.next.WithGroup(name), n: h.n}
}

// DecodeNotice decodes one line of the notices FIFO (the agent's side).
func DecodeNotice(line []byte) (Notice, error) {
	var nt Notice
	if err := json.Unmarshal(line, &nt); err != nil {
		return nt, fmt.Errorf("%w: notice: %v", ErrCorrupt, err)
	}
	return nt, nil
}
