package crilog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"
)

// AllLines as ReadOptions.Tail asks for every line of the file.
const AllLines = -1

// ReadOptions say which lines ReadLog delivers.
type ReadOptions struct {
	// Follow keeps reading what is appended to the file until ctx is done.
	Follow bool
	// Tail is how many of the last lines already in the file are delivered:
	// AllLines (any negative number) for all of them, 0 for none. Lines
	// appended while following are always delivered.
	Tail int
	// Stream, when not empty, keeps only the lines of that stream (Stdout
	// or Stderr).
	Stream string
	// Offset is where in the file reading starts, in bytes: the file's
	// size when a writer started appending to it, say, to read only what
	// that writer wrote. An offset that is not the start of a record (it
	// cuts one) skips the rest of that record. Tail counts the lines from
	// Offset on.
	Offset int64
	// Split delivers a line longer than MaxRecordSize in the pieces it was
	// written in (each partial record, then the full one) instead of
	// reassembled, so that memory stays bounded whatever a line's length.
	// The pieces of a line have no newline between them.
	Split bool
	// Until ends following: once it is closed, ReadLog reads the file to
	// its end, delivers the lines still being reassembled and returns nil.
	// Close it when the writer is known to be done with the file (its
	// container exited and its log was closed), to get every line without
	// waiting for ctx. Without Follow, Until is not used.
	Until <-chan struct{}
}

// Line is one line of a container's output, reassembled from its records.
type Line struct {
	// Time is the timestamp of the line's first record.
	Time   time.Time
	Stream string
	// Content is the line without its newline. It is only valid during the
	// call to the function ReadLog was given.
	Content []byte
}

// ReadLog reads the CRI log file at path from its start and calls fn for
// every complete line, in file order, partial records reassembled. A record
// that is not yet complete at the end of the file (its writer is in the
// middle of it) is not delivered; when not following, a line whose partial
// records are not followed by a full one yet is delivered as it is at the
// end.
//
// With opts.Follow, ReadLog then waits for the file to grow (it is woken by
// inotify, it does not poll) and delivers new lines as they are written,
// until ctx is done; it then returns ctx.Err(). When the log is rotated
// (path names a new file), it reads the old file to its end and goes on in
// the new one, without losing or repeating a line. When opts.Until is closed
// first, it reads the file to its end instead and returns nil. Without
// Follow, ReadLog returns nil at the end of the file.
//
// An error from fn stops the reading and is returned as it is. A malformed
// record is an error wrapping ErrMalformed.
func ReadLog(ctx context.Context, path string, opts ReadOptions, fn func(Line) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	// A follower moves on to the new file of a rotated log.
	defer func() { f.Close() }()

	var w *watcher
	if opts.Follow {
		// Watch before the first read, so that nothing appended between
		// reaching the end and starting to wait is missed.
		w, err = watch(path)
		if err != nil {
			return fmt.Errorf("follow %s: %w", path, err)
		}
		defer w.close()
	}

	lr := &logReader{ctx: ctx, path: path, opts: opts, fn: fn, br: bufio.NewReaderSize(f, 64*1024)}
	if opts.Offset > 0 {
		if lr.skip, err = atRecordStart(f, opts.Offset); err != nil {
			return fmt.Errorf("read %s: %w", path, err)
		}
		lr.skip = !lr.skip
	}
	if opts.Tail >= 0 {
		lr.tail = &ring{max: opts.Tail}
	}
	if err := lr.readAvailable(); err != nil {
		return err
	}
	if opts.Follow {
		if f, err = lr.followRotation(f, w, false); err != nil {
			return err
		}
	} else {
		if err := lr.flushPartial(); err != nil {
			return err
		}
	}
	if lr.tail != nil {
		lines := lr.tail.lines()
		lr.tail = nil
		for _, l := range lines {
			if err := fn(l); err != nil {
				return err
			}
		}
	}
	if !opts.Follow {
		return nil
	}
	waitCtx := ctx
	if opts.Until != nil {
		var cancel context.CancelFunc
		waitCtx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-opts.Until:
				cancel()
			case <-waitCtx.Done():
			}
		}()
	}
	for {
		werr := w.wait(waitCtx)
		if werr != nil && (ctx.Err() != nil || waitCtx.Err() == nil) {
			return werr
		}
		if err := lr.readAvailable(); err != nil {
			return err
		}
		if f, err = lr.followRotation(f, w, werr != nil); err != nil {
			return err
		}
		if werr != nil {
			// Until was closed: the writer is done and everything it wrote
			// was read.
			return lr.flushPartial()
		}
	}
}

// atRecordStart seeks f to offset and says whether a record starts there,
// that is whether the byte before it ends a record.
func atRecordStart(f *os.File, offset int64) (bool, error) {
	var b [1]byte
	if _, err := f.ReadAt(b[:], offset-1); err != nil {
		return false, err
	}
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return false, err
	}
	return b[0] == '\n', nil
}

type logReader struct {
	ctx  context.Context
	path string
	opts ReadOptions
	fn   func(Line) error
	br   *bufio.Reader

	lineNo int
	// rec collects a record that did not fit in br's buffer or that the end
	// of the file cut.
	rec []byte
	// partial holds the lines being reassembled, by stream.
	partial [2]partialLine
	// tail, when set, keeps the last lines instead of delivering them.
	tail *ring
	// skip is set while the rest of a record cut by opts.Offset is
	// skipped.
	skip bool
}

type partialLine struct {
	active  bool
	time    time.Time
	content []byte
}

// readAvailable reads and handles every complete record up to the end of
// the file.
func (lr *logReader) readAvailable() error {
	for {
		if err := lr.ctx.Err(); err != nil {
			return err
		}
		chunk, err := lr.br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			lr.rec = append(lr.rec, chunk...)
			continue
		case errors.Is(err, io.EOF):
			lr.rec = append(lr.rec, chunk...)
			return nil
		case err != nil:
			return fmt.Errorf("read %s: %w", lr.path, err)
		}
		line := chunk
		if len(lr.rec) > 0 {
			lr.rec = append(lr.rec, chunk...)
			line = lr.rec
		}
		lr.lineNo++
		if lr.skip {
			lr.skip = false
			lr.rec = lr.rec[:0]
			continue
		}
		if err := lr.record(line); err != nil {
			return err
		}
		lr.rec = lr.rec[:0]
	}
}

func (lr *logReader) record(line []byte) error {
	r, err := Parse(line)
	if err != nil {
		return fmt.Errorf("%s:%d: %w", lr.path, lr.lineNo, err)
	}
	if lr.opts.Stream != "" && r.Stream != lr.opts.Stream {
		return nil
	}
	if lr.opts.Split {
		return lr.deliver(Line{Time: r.Time, Stream: r.Stream, Content: r.Content})
	}
	p := &lr.partial[streamIndex(r.Stream)]
	if r.Partial {
		if !p.active {
			p.active, p.time, p.content = true, r.Time, p.content[:0]
		}
		p.content = append(p.content, r.Content...)
		return nil
	}
	if p.active {
		p.active = false
		p.content = append(p.content, r.Content...)
		return lr.deliver(Line{Time: p.time, Stream: r.Stream, Content: p.content})
	}
	return lr.deliver(Line{Time: r.Time, Stream: r.Stream, Content: r.Content})
}

// flushPartial delivers the lines that are still being reassembled, oldest
// first.
func (lr *logReader) flushPartial() error {
	order := []int{0, 1}
	if lr.partial[1].time.Before(lr.partial[0].time) {
		order = []int{1, 0}
	}
	for _, i := range order {
		p := &lr.partial[i]
		if !p.active {
			continue
		}
		p.active = false
		if err := lr.deliver(Line{Time: p.time, Stream: streamName(i), Content: p.content}); err != nil {
			return err
		}
	}
	return nil
}

func (lr *logReader) deliver(l Line) error {
	if lr.tail != nil {
		lr.tail.push(l)
		return nil
	}
	return lr.fn(l)
}

func streamIndex(stream string) int {
	if stream == Stderr {
		return 1
	}
	return 0
}

func streamName(i int) string {
	if i == 1 {
		return Stderr
	}
	return Stdout
}

// ring keeps the last max lines pushed into it, with their own copy of the
// content.
type ring struct {
	max  int
	buf  []Line
	next int // where the next push goes once buf is full
}

func (r *ring) push(l Line) {
	if r.max == 0 {
		return
	}
	if len(r.buf) < r.max {
		l.Content = slices.Clone(l.Content)
		r.buf = append(r.buf, l)
		return
	}
	slot := &r.buf[r.next]
	slot.Time, slot.Stream = l.Time, l.Stream
	slot.Content = append(slot.Content[:0], l.Content...)
	r.next = (r.next + 1) % r.max
}

// lines returns the kept lines, oldest first.
func (r *ring) lines() []Line {
	return append(r.buf[r.next:len(r.buf):len(r.buf)], r.buf[:r.next]...)
}
