package crilog

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// AllLines as ReadOptions.Tail asks for every line of the file.
const AllLines = -1

// readBufferSize is the reader's buffer: a record longer than this is
// handed over in pieces of about this size as it is read, never held
// whole.
const readBufferSize = 64 * 1024

// ReadOptions say which lines ReadLog delivers.
type ReadOptions struct {
	// Follow keeps reading what is appended to the file until ctx is done.
	Follow bool
	// Tail is how many of the last lines already in the file are delivered:
	// AllLines (any negative number) for all of them, 0 for none. Lines
	// appended while following are always delivered. A line counts where
	// its last record is: its full record, or the last partial record of a
	// line still being written. Without Follow, the lines appended after
	// ReadLog found where its tail starts are not delivered.
	//
	// Tail holds nothing per line, whatever the lines' length or Tail's
	// value: ReadLog finds where the tail starts by reading the file
	// backwards from its end, looking only at the records' headers, then
	// reads forward from there. So a tail reads the file twice from where
	// it starts, and no further back than that.
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
	// Until ends following: once it is closed, ReadLog reads the file to
	// its end, ends the lines still open (see Line) and returns nil. Close
	// it when the writer is known to be done with the file (its container
	// exited and its log was closed), to get every line without waiting
	// for ctx. Without Follow, Until is not used.
	Until <-chan struct{}
}

// Line is a line of a container's output, or a piece of one. ReadLog hands
// a long line over in the pieces it reads — each partial record, and a
// record longer than its buffer in parts of about that size — so that
// memory stays bounded whatever a line's length: a 200 MB line without a
// newline is never held whole.
//
// A line that fits in one record is one Line, neither Continued nor
// Partial. A longer one is a Line with Partial, then Lines with Continued
// and Partial, then one with Continued only. The pieces of one stream's
// line come in the order written, but the other stream's lines may come
// between them, as they were written (the kubelet serves them so too). A
// line whose end is not in the file when ReadLog stops (without Follow, or
// once Until is closed) is ended by an empty Line with Continued only.
type Line struct {
	// Time is the timestamp of the line's first record: every piece of a
	// line has it.
	Time   time.Time
	Stream string
	// Content is the piece of the line, without a newline. It is only valid
	// during the call to the function ReadLog was given.
	Content []byte
	// Continued says the Line continues the line of the previous Line of
	// the same stream: it does not start a line.
	Continued bool
	// Partial says the line goes on in a later Line of the same stream: a
	// newline does not follow Content.
	Partial bool
}

// ReadLog reads the CRI log file at path from its start (or what opts
// asks for) and calls fn with every line, in file order, as it reads it: a
// long line in pieces, as Line says. A record that is not yet complete at
// the end of the file (its writer is in the middle of it) is not
// delivered, unless it is too long for the reader's buffer, whose pieces
// go out as they are read.
//
// With opts.Follow, ReadLog then waits for the file to grow (it is woken by
// inotify, it does not poll) and delivers new lines as they are written,
// until ctx is done; it then returns ctx.Err(). When the log is rotated
// (path names a new file), it reads the old file to its end and goes on in
// the new one, without losing or repeating a line. When opts.Until is closed
// first, it reads the file to its end instead and returns nil. Without
// Follow, ReadLog returns nil at the end of the file.
//
// ReadLog holds a few buffers of 64 KiB, whatever the file's size, its
// lines' lengths and opts.Tail. An error from fn stops the reading and is
// returned as it is. A malformed record is an error wrapping ErrMalformed.
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

	lr := &logReader{ctx: ctx, path: path, opts: opts, fn: fn}
	if err := lr.seek(f); err != nil {
		return err
	}
	if err := lr.readAvailable(); err != nil {
		return err
	}
	if !opts.Follow {
		return lr.endLines()
	}
	if f, err = lr.followRotation(f, w, false); err != nil {
		return err
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
			return lr.endLines()
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

	// pos is the file offset of the next byte br returns, recStart that of
	// the record being read.
	pos, recStart int64
	// lineNo counts the records read; fromStart says whether reading
	// started at the file's start, so that lineNo is a line number.
	lineNo    int
	fromStart bool
	// rec collects the start of a record that did not fit in what br
	// returned at once, until it is complete or too long to collect.
	rec []byte
	// cur is the record being delivered, once its header was parsed.
	cur struct {
		active  bool // its header was parsed and its end is still to come
		deliver bool
		stream  int
		partial bool
		time    time.Time
	}
	// streams is what was delivered of each stream's last line.
	streams [2]struct {
		open bool      // its end is still to come
		time time.Time // of its first record
	}
	// from is, by stream, the file offset before which that stream's
	// records are not delivered: where its lines of the tail start.
	from [2]int64
	// skip is set while the rest of a record cut by opts.Offset is
	// skipped.
	skip bool
}

// seek positions f where reading starts — opts.Offset, or where the tail
// starts — and sets up the reader there.
func (lr *logReader) seek(f *os.File) error {
	offset := max(lr.opts.Offset, 0)
	if offset > 0 {
		atStart, err := atRecordStart(f, offset)
		if err != nil {
			return fmt.Errorf("read %s: %w", lr.path, err)
		}
		lr.skip = !atStart
	}
	var src io.Reader = f
	start := offset
	if lr.opts.Tail >= 0 {
		fi, err := f.Stat()
		if err != nil {
			return fmt.Errorf("read %s: %w", lr.path, err)
		}
		t, err := findTail(f, offset, fi.Size(), lr.opts.Tail, lr.opts.Stream)
		if err != nil {
			return fmt.Errorf("read %s: %w", lr.path, err)
		}
		lr.from = t.from
		if t.start > offset {
			if _, err := f.Seek(t.start, io.SeekStart); err != nil {
				return fmt.Errorf("read %s: %w", lr.path, err)
			}
			start, lr.skip = t.start, false
		}
		if !lr.opts.Follow {
			src = io.LimitReader(f, t.end-start)
		}
	}
	lr.pos, lr.recStart, lr.fromStart = start, start, start == 0
	lr.br = bufio.NewReaderSize(src, readBufferSize)
	return nil
}

// readAvailable reads and handles every record up to the end of the file.
func (lr *logReader) readAvailable() error {
	for {
		if err := lr.ctx.Err(); err != nil {
			return err
		}
		chunk, err := lr.br.ReadSlice('\n')
		lr.pos += int64(len(chunk))
		switch {
		case errors.Is(err, bufio.ErrBufferFull), errors.Is(err, io.EOF):
			if herr := lr.unterminated(chunk); herr != nil {
				return herr
			}
			if err == io.EOF {
				return nil
			}
			continue
		case err != nil:
			return fmt.Errorf("read %s: %w", lr.path, err)
		}
		if err := lr.terminated(chunk); err != nil {
			return err
		}
	}
}

// unterminated handles a part of a record whose newline is still to come.
func (lr *logReader) unterminated(chunk []byte) error {
	switch {
	case lr.skip:
		return nil
	case lr.cur.active:
		return lr.piece(chunk, true)
	}
	lr.rec = append(lr.rec, chunk...)
	if len(lr.rec) < readBufferSize {
		return nil
	}
	// Too long to collect: its content goes out as it comes.
	r, err := lr.parse(lr.rec)
	if err != nil {
		return err
	}
	lr.begin(r)
	lr.cur.active = true
	err = lr.piece(r.Content, true)
	lr.rec = lr.rec[:0]
	return err
}

// terminated handles the end of a record: chunk ends with its newline.
func (lr *logReader) terminated(chunk []byte) error {
	defer func() {
		lr.lineNo++
		lr.recStart = lr.pos
	}()
	if lr.skip {
		lr.skip = false
		lr.rec = lr.rec[:0]
		return nil
	}
	content := chunk[:len(chunk)-1]
	if !lr.cur.active {
		line := chunk
		if len(lr.rec) > 0 {
			lr.rec = append(lr.rec, chunk...)
			line = lr.rec
		}
		r, err := lr.parse(line)
		lr.rec = lr.rec[:0]
		if err != nil {
			return err
		}
		lr.begin(r)
		content = r.Content
	}
	lr.cur.active = false
	return lr.piece(content, lr.cur.partial)
}

// parse parses the record being read.
func (lr *logReader) parse(line []byte) (Record, error) {
	r, err := Parse(line)
	if err == nil {
		return r, nil
	}
	if lr.fromStart {
		return r, fmt.Errorf("%s:%d: %w", lr.path, lr.lineNo+1, err)
	}
	return r, fmt.Errorf("%s: record at byte %d: %w", lr.path, lr.recStart, err)
}

// begin makes r, whose header was just parsed, the record being delivered.
func (lr *logReader) begin(r Record) {
	i := streamIndex(r.Stream)
	lr.cur.deliver = (lr.opts.Stream == "" || r.Stream == lr.opts.Stream) && lr.recStart >= lr.from[i]
	lr.cur.stream, lr.cur.partial, lr.cur.time = i, r.Partial, r.Time
}

// piece delivers content, a piece of the record being delivered; more
// says whether the line goes on after it.
func (lr *logReader) piece(content []byte, more bool) error {
	if !lr.cur.deliver {
		return nil
	}
	s := &lr.streams[lr.cur.stream]
	if !s.open {
		s.time = lr.cur.time
	}
	l := Line{Time: s.time, Stream: streamName(lr.cur.stream), Content: content, Continued: s.open, Partial: more}
	s.open = more
	return lr.fn(l)
}

// endLines ends the lines whose end is not in the file, oldest first.
func (lr *logReader) endLines() error {
	order := []int{0, 1}
	if lr.streams[1].time.Before(lr.streams[0].time) {
		order = []int{1, 0}
	}
	for _, i := range order {
		s := &lr.streams[i]
		if !s.open {
			continue
		}
		s.open = false
		if err := lr.fn(Line{Time: s.time, Stream: streamName(i), Continued: true}); err != nil {
			return err
		}
	}
	return nil
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
