package crilog

import (
	"bytes"
	"fmt"
	"os"
)

// tailChunk is how much of a file ReadTail reads at a time, going back.
const tailChunk = 4096

// recordHeader is how much of a record's start ReadTail reads first to
// parse its timestamp, stream and tags; a header that goes on (the format
// allows further tags, and a timestamp any number of fractional digits)
// is read again, twice as long each time, up to maxRecordHeader.
const recordHeader = 128

// maxRecordHeader bounds a record's header as ReadTail reads it: a record
// whose content starts further in says nothing.
const maxRecordHeader = MaxRecordSize

// ReadTail returns what the last `lines` records of the CRI log at path
// say, the way the kubelet reads a log's tail for a termination message
// (kuberuntime_container.go, readLastStringFromContainerLogs): the records'
// content in file order, both streams, a full record's with the newline
// that ended its line and a partial one's without, and of all that only
// the last maxBytes bytes. Like the kubelet's tail, it counts the file's
// records, not the lines they reassemble into.
//
// It reads the file from its end and no further back than those records
// (their content only as far back as maxBytes asks), so memory stays
// within maxBytes and a few small buffers whatever the file's size or its
// lines' lengths. A record that does not parse (or whose header, before
// its content, is longer than MaxRecordSize) is counted and skipped; an
// unterminated last record (its writer is in the middle of it) is left
// out. A missing file is an error wrapping fs.ErrNotExist.
func ReadTail(path string, lines, maxBytes int) ([]byte, error) {
	if lines <= 0 || maxBytes <= 0 {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	s := &backScanner{f: f, pos: fi.Size()}
	// The newline that ends the last complete record.
	end, err := s.prevNewline()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var pieces [][]byte // newest first
	room := maxBytes
	for n := 0; n < lines && room > 0 && end >= 0; n++ {
		before, err := s.prevNewline()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		piece, err := recordTail(f, before+1, end, room)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if len(piece) > 0 {
			pieces = append(pieces, piece)
			room -= len(piece)
		}
		end = before
	}
	out := make([]byte, 0, maxBytes-room)
	for i := len(pieces) - 1; i >= 0; i-- {
		out = append(out, pieces[i]...)
	}
	return out, nil
}

// recordTail is the last room bytes of what the record in [start, end) of
// f says (end is its newline): its content, and a newline when it is a
// full record. A record that does not parse says nothing.
func recordTail(f *os.File, start, end int64, room int) ([]byte, error) {
	head, err := recordHead(f, start, end)
	if err != nil || head == nil {
		return nil, err
	}
	r, err := Parse(head)
	if err != nil {
		return nil, nil
	}
	contentStart := start + int64(len(head)-len(r.Content))
	newline := 0
	if !r.Partial {
		newline = 1
	}
	n := min(int64(room-newline), end-contentStart)
	piece := make([]byte, n, n+int64(newline))
	if _, err := f.ReadAt(piece, end-n); err != nil {
		return nil, err
	}
	if newline == 1 {
		piece = append(piece, '\n')
	}
	return piece, nil
}

// recordHead reads the start of the record in [start, end) of f up to
// where its content starts (the space after its tags), or all of it when
// it is shorter; nil when its header is longer than maxRecordHeader. Cut
// any shorter, the tags would be taken for the content.
func recordHead(f *os.File, start, end int64) ([]byte, error) {
	for n := min(end-start, recordHeader); ; n = min(end-start, 2*n) {
		head := make([]byte, n)
		if _, err := f.ReadAt(head, start); err != nil {
			return nil, err
		}
		if n == end-start || bytes.Count(head, []byte{' '}) >= 3 {
			return head, nil
		}
		if n >= maxRecordHeader {
			return nil, nil
		}
	}
}

// backScanner finds a file's newlines from its end backwards, a chunk at
// a time.
type backScanner struct {
	f     *os.File
	pos   int64 // newlines before this offset are still to be found
	chunk int   // how much it reads at a time; tailChunk when 0

	buf      []byte
	bufStart int64 // the file offset of buf[0]
	loaded   bool  // buf holds [bufStart, pos) or more
	// newlines are the offsets in buf of its newlines before pos, found
	// forwards (bytes.IndexByte is much faster than bytes.LastIndexByte
	// over a long record).
	newlines []int
}

// prevNewline returns the offset of the last newline before the scanner's
// position and moves the position there; -1 when there is none.
func (s *backScanner) prevNewline() (int64, error) {
	for {
		if n := len(s.newlines); n > 0 {
			s.pos = s.bufStart + int64(s.newlines[n-1])
			s.newlines = s.newlines[:n-1]
			return s.pos, nil
		}
		if s.loaded {
			// None in the buffer before pos.
			s.pos = s.bufStart
		}
		if s.pos <= 0 {
			return -1, nil
		}
		if s.buf == nil {
			if s.chunk == 0 {
				s.chunk = tailChunk
			}
			s.buf = make([]byte, s.chunk)
		}
		start := max(s.pos-int64(s.chunk), 0)
		s.buf = s.buf[:s.pos-start]
		if _, err := s.f.ReadAt(s.buf, start); err != nil {
			return 0, err
		}
		s.bufStart, s.loaded = start, true
		for off := 0; ; {
			i := bytes.IndexByte(s.buf[off:], '\n')
			if i < 0 {
				break
			}
			s.newlines = append(s.newlines, off+i)
			off += i + 1
		}
	}
}

// tailStart is where ReadLog starts reading the last lines of a log.
type tailStart struct {
	// start is the offset of the first record to read, end that of the
	// end of the last complete record: the tail is of the lines before it.
	start, end int64
	// from is, by stream (see streamIndex), where the records of the
	// stream to deliver start: those before are read but not delivered.
	from [2]int64
}

// findTail finds the last n lines of the records of stream ("" for both)
// that start at offset or later in the first size bytes of f, the way
// ReadOptions.Tail counts them: a line counts where its last record is
// (its full one, or a stream's last partial record after its last full
// one). It reads f backwards from size, a record header at a time, and
// holds nothing per line; it reads no further back than where the oldest
// of those lines starts, and the record before it of its stream.
func findTail(f *os.File, offset, size int64, n int, stream string) (tailStart, error) {
	s := &backScanner{f: f, pos: size, chunk: readBufferSize}
	last, err := s.prevNewline()
	if err != nil {
		return tailStart{}, err
	}
	end := max(last+1, offset)
	t := tailStart{start: end, end: end, from: [2]int64{end, end}}
	if n <= 0 || last < offset {
		return t, nil
	}
	head := make([]byte, maxRecordHeader)
	var seen, kept [2]bool // by stream: a record was seen; the last one seen belongs to the tail
	lines := 0
	for newline := last; newline >= 0; {
		before, err := s.prevNewline()
		if err != nil {
			return tailStart{}, err
		}
		start := before + 1
		if start < offset {
			break
		}
		h := head[:min(newline-start, maxRecordHeader)]
		if _, err := f.ReadAt(h, start); err != nil {
			return tailStart{}, err
		}
		r, err := Parse(h)
		if err != nil {
			return tailStart{}, fmt.Errorf("record at byte %d: %w", start, err)
		}
		newline = before
		if stream != "" && r.Stream != stream {
			continue
		}
		i := streamIndex(r.Stream)
		if !r.Partial || !seen[i] {
			// The record ends a line (or, partial, the line still being
			// written): the one before it of its stream is its line's.
			kept[i] = lines < n
			if kept[i] {
				lines++
			}
		}
		seen[i] = true
		if kept[i] {
			t.from[i] = start
		}
		if lines == n && !kept[0] && !kept[1] {
			break
		}
	}
	t.start = min(t.from[0], t.from[1])
	return t, nil
}
