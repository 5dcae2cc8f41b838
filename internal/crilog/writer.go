package crilog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"syscall"
	"time"
)

// Clock is where a Sink and a LogFile read the time: the records' stamps
// and the rotated files' names. k8s.io/utils/clock's clocks (a fake one in
// tests) are Clocks; the package declares its own so that the shim binary,
// which links it, links no Kubernetes package.
type Clock interface {
	Now() time.Time
}

// Sink writes the records of all streams of one container instance to one
// output, one whole record per Write call on the output. It is safe for
// concurrent use by the Writers of its streams.
//
// A record the output cannot take (a full disk) is dropped, and counted:
// the next record that can be written is preceded by a marker record on
// each stream that lost output, "podward: N bytes of log dropped: CAUSE",
// so that the gap shows in the log, and OnDrop's function is told.
type Sink struct {
	clock   Clock
	observe func(Record)
	onDrop  func(Drop)

	mu  sync.Mutex
	out io.Writer
	buf []byte
	// dropped counts, by stream (streamIndex), the bytes of output lost
	// since the last marker; cause is the latest failure.
	dropped [2]int64
	cause   error
}

// Drop is output of one stream that the log could not take.
type Drop struct {
	Stream string
	// Bytes is how much of the container's output was lost, newlines
	// included.
	Bytes int64
	// Cause is why, the output's error ("no space left on device" for a
	// full disk).
	Cause error
	// Marked says a marker record in the log shows the gap; it is false
	// for output lost until the streams were closed (Sink.Unmarked).
	Marked bool
}

// Reason is the innermost text of Cause: the errno's ("no space left on
// device") rather than the path and operation.
func (d Drop) Reason() string { return causeText(d.Cause) }

// MarkerPrefix begins the content of the marker records a Sink writes
// where output was dropped.
const MarkerPrefix = "podward: "

// markerContent is a marker's content: how many bytes were lost, and why.
func markerContent(b []byte, n int64, cause error) []byte {
	b = append(b, MarkerPrefix...)
	b = strconv.AppendInt(b, n, 10)
	b = append(b, " bytes of log dropped: "...)
	return append(b, causeText(cause)...)
}

// causeText is the innermost reason of an output error: the errno's text
// ("no space left on device") rather than the path and operation.
func causeText(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	return err.Error()
}

// OnDrop sets f to be told of every drop once its marker is in the log,
// from the goroutine that wrote the marker, without the Sink's lock. Call
// it before the first write.
func (s *Sink) OnDrop(f func(Drop)) { s.onDrop = f }

// Unmarked returns, and forgets, the drops no marker shows yet: output
// lost until the end, for a caller that closed every Writer and will write
// no more.
func (s *Sink) Unmarked() []Drop {
	s.mu.Lock()
	defer s.mu.Unlock()
	var drops []Drop
	for i, n := range s.dropped {
		if n > 0 {
			drops = append(drops, Drop{Stream: streamName(i), Bytes: n, Cause: s.cause})
		}
	}
	s.dropped = [2]int64{}
	return drops
}

// NewSink returns a Sink that writes records to out, stamped with clk's time.
// The Sink never closes out; its owner does, after closing every Writer.
// out takes one whole record per Write; on an error nothing of the record
// may be left in it (LogFile is such an output, a bytes.Buffer another).
//
// observe, when not nil, is called after each record was written, without
// any lock of the Sink held, from the goroutine that called Writer.Write or
// Writer.Close. The record's Content is only valid during the call.
func NewSink(out io.Writer, clk Clock, observe func(Record)) *Sink {
	return &Sink{clock: clk, observe: observe, out: out}
}

func (s *Sink) write(stream string, partial bool, content []byte) error {
	s.mu.Lock()
	// The time is read under the lock so that timestamps in the file never
	// go backwards between streams.
	r := Record{Time: s.clock.Now().UTC(), Stream: stream, Partial: partial, Content: content}
	drops, err := s.markDropped(r.Time)
	if err == nil {
		s.buf = AppendRecord(s.buf[:0], r)
		_, err = s.out.Write(s.buf)
	}
	if err != nil {
		n := int64(len(content))
		if !partial {
			n++ // the newline that ended the line
		}
		s.dropped[streamIndex(stream)] += n
		s.cause = err
	}
	s.mu.Unlock()
	if s.onDrop != nil {
		for _, d := range drops {
			s.onDrop(d)
		}
	}
	if err != nil {
		return fmt.Errorf("write %s record: %w", stream, err)
	}
	if s.observe != nil {
		s.observe(r)
	}
	return nil
}

// markDropped writes a marker record for each stream that lost output
// since the last marker, and returns those drops. s.mu must be held.
func (s *Sink) markDropped(t time.Time) ([]Drop, error) {
	var drops []Drop
	for i, n := range s.dropped {
		if n == 0 {
			continue
		}
		m := Record{Time: t, Stream: streamName(i), Content: markerContent(nil, n, s.cause)}
		s.buf = AppendRecord(s.buf[:0], m)
		if _, err := s.out.Write(s.buf); err != nil {
			return drops, err
		}
		drops = append(drops, Drop{Stream: m.Stream, Bytes: n, Cause: s.cause, Marked: true})
		s.dropped[i] = 0
	}
	return drops, nil
}

// Writer turns the raw bytes of one stream into records. It buffers at most
// one record's worth of an unfinished line. A Writer is not safe for
// concurrent use, but the Writers of one Sink may be used concurrently.
type Writer struct {
	sink    *Sink
	stream  string
	pending []byte // start of the current line, at most MaxRecordSize bytes
	closed  bool
}

// NewWriter returns the Writer for stream (Stdout or Stderr) of sink.
func NewWriter(sink *Sink, stream string) *Writer {
	return &Writer{sink: sink, stream: stream}
}

// Write writes a record for every line p completes and a partial record for
// every MaxRecordSize bytes of a line that goes on. A record the Sink's
// output cannot take is dropped (and counted by the Sink) and the rest of p
// is still written: Write always takes all of p, and returns the first
// error of the output, if any.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	n := len(p)
	var first error
	keep := func(err error) {
		if first == nil {
			first = err
		}
	}
	for len(p) > 0 {
		if len(w.pending) == MaxRecordSize {
			// A full chunk is only partial if the line goes on; a newline
			// right after it makes it the line's last record.
			if p[0] == '\n' {
				p = p[1:]
				keep(w.emit(false))
				continue
			}
			keep(w.emit(true))
		}
		window := p[:min(len(p), MaxRecordSize-len(w.pending))]
		i := bytes.IndexByte(window, '\n')
		if i < 0 {
			w.pending = append(w.pending, window...)
			p = p[len(window):]
			continue
		}
		if len(w.pending) == 0 {
			// The common case: a whole line in p, written without a copy.
			keep(w.sink.write(w.stream, false, p[:i]))
		} else {
			w.pending = append(w.pending, p[:i]...)
			keep(w.emit(false))
		}
		p = p[i+1:]
	}
	return n, first
}

// Close writes the unfinished last line, if any, as a full record. Further
// writes fail. Close does not close the Sink's output.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	if len(w.pending) == 0 {
		return nil
	}
	return w.emit(false)
}

func (w *Writer) emit(partial bool) error {
	err := w.sink.write(w.stream, partial, w.pending)
	w.pending = w.pending[:0]
	return err
}
