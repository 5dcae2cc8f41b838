package crilog

import (
	"bytes"
	"io"
	"sync"

	"k8s.io/utils/clock"
)

// Sink writes the records of all streams of one container instance to one
// output, one whole record per Write call on the output. It is safe for
// concurrent use by the Writers of its streams.
type Sink struct {
	clock   clock.PassiveClock
	observe func(Record)

	mu  sync.Mutex
	out io.Writer
	buf []byte
}

// NewSink returns a Sink that writes records to out, stamped with clk's time.
// The Sink never closes out; its owner does, after closing every Writer.
//
// observe, when not nil, is called after each record was written, without
// any lock of the Sink held, from the goroutine that called Writer.Write or
// Writer.Close. The record's Content is only valid during the call.
func NewSink(out io.Writer, clk clock.PassiveClock, observe func(Record)) *Sink {
	return &Sink{clock: clk, observe: observe, out: out}
}

func (s *Sink) write(stream string, partial bool, content []byte) error {
	s.mu.Lock()
	// The time is read under the lock so that timestamps in the file never
	// go backwards between streams.
	r := Record{Time: s.clock.Now().UTC(), Stream: stream, Partial: partial, Content: content}
	s.buf = AppendRecord(s.buf[:0], r)
	_, err := s.out.Write(s.buf)
	s.mu.Unlock()
	if s.observe != nil {
		s.observe(r)
	}
	return err
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
// every MaxRecordSize bytes of a line that goes on. It returns an error only
// when the Sink's output failed; the bytes of p up to the failing record
// count as written.
func (w *Writer) Write(p []byte) (int, error) {
	if w.closed {
		return 0, io.ErrClosedPipe
	}
	n := len(p)
	for len(p) > 0 {
		if len(w.pending) == MaxRecordSize {
			// A full chunk is only partial if the line goes on; a newline
			// right after it makes it the line's last record.
			if p[0] == '\n' {
				p = p[1:]
				if err := w.emit(false); err != nil {
					return n - len(p), err
				}
				continue
			}
			if err := w.emit(true); err != nil {
				return n - len(p), err
			}
		}
		window := p[:min(len(p), MaxRecordSize-len(w.pending))]
		i := bytes.IndexByte(window, '\n')
		if i < 0 {
			w.pending = append(w.pending, window...)
			p = p[len(window):]
			continue
		}
		var err error
		if len(w.pending) == 0 {
			// The common case: a whole line in p, written without a copy.
			err = w.sink.write(w.stream, false, p[:i])
		} else {
			w.pending = append(w.pending, p[:i]...)
			err = w.emit(false)
		}
		p = p[i+1:]
		if err != nil {
			return n - len(p), err
		}
	}
	return n, nil
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
