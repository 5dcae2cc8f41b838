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
// what a container wrote into its log some time after it was written.
func WaitLogContent(pattern string, want int64, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		var n int64
		matches, err := filepath.Glob(pattern)
		if err == nil && len(matches) == 1 {
			n, err = LogContentBytes(matches[0])
		}
		if err == nil && n == want {
			return nil
		}
		if time.Now().After(deadline) || n > want {
			return fmt.Errorf("log %q holds %d bytes of content (%v), want %d", matches, n, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
