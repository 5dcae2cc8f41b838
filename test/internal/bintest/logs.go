package bintest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// PeakGrowth runs fn and returns how far the resident memory of pid rose
// above what it was before: its peak during fn (reset before fn) less its
// resident memory before.
func PeakGrowth(pid int, fn func()) (int64, error) {
	if err := ResetPeakMemory(pid); err != nil {
		return 0, fmt.Errorf("reset the peak memory of %d: %w", pid, err)
	}
	before, _, err := Memory(pid)
	if err != nil {
		return 0, err
	}
	fn()
	_, peak, err := Memory(pid)
	if err != nil {
		return 0, err
	}
	return peak - before, nil
}

// LongLine is what a log response holding one long line of bytes 'x' must
// be: prefixed with an RFC 3339 timestamp and a space when Timestamp is
// set, X bytes 'x', and when Newline is set a newline and the end of the
// response. Without Newline, the response may stay open (a followed line
// that goes on): Check reads the X bytes and returns.
type LongLine struct {
	Timestamp bool
	X         int64
	Newline   bool
}

// Check reads body and says how it differs from l, without holding more
// than a buffer of it.
func (l LongLine) Check(body io.Reader) error {
	br := bufio.NewReaderSize(body, 64<<10)
	if l.Timestamp {
		ts, err := br.ReadString(' ')
		if err != nil {
			return fmt.Errorf("read the timestamp: %w", err)
		}
		if _, err := time.Parse(time.RFC3339Nano, strings.TrimSuffix(ts, " ")); err != nil {
			return fmt.Errorf("timestamp %q: %w", ts, err)
		}
	}
	var n int64
	buf := make([]byte, 64<<10)
	for n < l.X {
		m, err := br.Read(buf[:min(int64(len(buf)), l.X-n)])
		if i := bytes.IndexFunc(buf[:m], func(r rune) bool { return r != 'x' }); i >= 0 {
			return fmt.Errorf("byte %d of the line is %q, want x", n+int64(i), buf[i])
		}
		n += int64(m)
		if err != nil {
			return fmt.Errorf("read %d bytes of the line, want %d: %w", n, l.X, err)
		}
	}
	if !l.Newline {
		return nil
	}
	rest, err := io.ReadAll(io.LimitReader(br, 64))
	if err != nil || string(rest) != "\n" {
		return fmt.Errorf("after the %d bytes of the line: %q (%v), want a newline and the end", n, rest, err)
	}
	return nil
}

// LogContentBytes adds up the content of the complete records of a CRI
// log ("<time> <stream> <tag> <content>\n"), without holding a record.
func LogContentBytes(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var n, record int64 // record: content of the record being read
	spaces := 0         // of the record's header seen so far
	for {
		chunk, err := br.ReadSlice('\n')
		ended := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if ended {
			chunk = chunk[:len(chunk)-1]
		}
		for spaces < 3 && len(chunk) > 0 {
			i := bytes.IndexByte(chunk, ' ')
			if i < 0 {
				chunk = nil
				break
			}
			chunk = chunk[i+1:]
			spaces++
		}
		record += int64(len(chunk))
		if ended {
			n += record
			record, spaces = 0, 0
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return n, nil
		default:
			return n, err
		}
	}
}

// WaitLogContent waits at most within until the one CRI log that pattern
// (a glob) matches holds want bytes of content: a runtime's shim copies
// what a container wrote into its log some time after it was written. It
// waits on inotify events of the log's directory (a write, a rotation);
// until the log exists, on those of the deepest directory of pattern's
// fixed part that exists, which tells of nothing created further below,
// so that wait is bounded by a tenth of a second.
func WaitLogContent(pattern string, want int64, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		matches, _ := filepath.Glob(pattern)
		// Watched before the content is read: a write in between is an
		// event still to come.
		dir, bound := watchedDir(pattern, matches)
		w := watchDir(dir)
		var n int64
		var err error
		if len(matches) == 1 {
			n, err = LogContentBytes(matches[0])
		}
		if err == nil && n == want {
			w.close()
			return nil
		}
		if time.Now().After(deadline) || n > want {
			w.close()
			return fmt.Errorf("log %q holds %d bytes of content (%v), want %d", matches, n, err, want)
		}
		w.wait(min(time.Until(deadline), bound))
		w.close()
	}
}

// watchedDir is the directory whose events tell of the log's change: its
// own once it exists (any wait is then bounded by the deadline alone),
// else the deepest existing directory of pattern's fixed part (and a
// tenth of a second).
func watchedDir(pattern string, matches []string) (string, time.Duration) {
	if len(matches) == 1 {
		return filepath.Dir(matches[0]), time.Hour
	}
	dir := pattern
	for strings.ContainsAny(dir, "*?[") {
		dir = filepath.Dir(dir)
	}
	for {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir, 100 * time.Millisecond
		}
		if dir == filepath.Dir(dir) {
			return dir, 100 * time.Millisecond
		}
		dir = filepath.Dir(dir)
	}
}

// dirWatch is an inotify watch of a directory's entries (a write, a
// creation, a rename into it); one that could not be made waits for its
// bound alone.
type dirWatch struct{ fd int }

func watchDir(dir string) dirWatch {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		return dirWatch{fd: -1}
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_MODIFY|unix.IN_CREATE|unix.IN_MOVED_TO|unix.IN_CLOSE_WRITE); err != nil {
		unix.Close(fd)
		return dirWatch{fd: -1}
	}
	return dirWatch{fd: fd}
}

// wait returns at the watch's first event, or once within passed.
func (w dirWatch) wait(within time.Duration) {
	timeout := int(within.Milliseconds()) + 1
	if w.fd < 0 {
		_, _ = unix.Poll(nil, timeout)
		return
	}
	_, _ = unix.Poll([]unix.PollFd{{Fd: int32(w.fd), Events: unix.POLLIN}}, timeout)
}

func (w dirWatch) close() {
	if w.fd >= 0 {
		unix.Close(w.fd)
	}
}
