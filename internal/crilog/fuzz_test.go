package crilog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// fuzzSeedLog is a log with what the format allows: both streams, a line
// in partial records, extra tags, an empty line written without the space
// after its tag, and an unterminated last record.
const fuzzSeedLog = "2026-03-04T05:06:07.89Z stdout F hello\n" +
	"2026-03-04T05:06:07.9Z stderr P par\n" +
	"2026-03-04T05:06:08Z stdout F:x:y tagged\n" +
	"2026-03-04T05:06:08.000000001Z stderr F tial\n" +
	"2026-03-04T05:06:09+02:00 stdout F\n" +
	"2026-03-04T05:06:10Z stdout P unfinished"

// FuzzParse: Parse never panics, and what it reads is what AppendRecord
// writes back: parsing that again gives the same record, and writing it
// again the same bytes.
func FuzzParse(f *testing.F) {
	for _, line := range bytes.SplitAfter([]byte(fuzzSeedLog), []byte{'\n'}) {
		f.Add(line)
	}
	f.Add([]byte("not a record\n"))
	f.Add([]byte("2026-03-04T05:06:07Z stdout X what\n"))
	f.Fuzz(func(t *testing.T, line []byte) {
		r, err := Parse(line)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse = %v, want ErrMalformed", err)
			}
			return
		}
		if r.Stream != Stdout && r.Stream != Stderr {
			t.Fatalf("stream %q", r.Stream)
		}
		if bytes.IndexByte(r.Content, '\n') >= 0 {
			// Only a line cut out of a file (no newline inside) is a
			// record the writer could have made.
			return
		}
		written := AppendRecord(nil, r)
		again, err := Parse(written)
		if err != nil {
			t.Fatalf("Parse(%q) of what AppendRecord wrote: %v", written, err)
		}
		if !sameRecord(r, again) {
			t.Fatalf("round trip: %+v, then %+v", r, again)
		}
		if rewritten := AppendRecord(nil, again); !bytes.Equal(rewritten, written) {
			t.Fatalf("written %q, then %q", written, rewritten)
		}
	})
}

func sameRecord(a, b Record) bool {
	return a.Time.Equal(b.Time) && a.Stream == b.Stream && a.Partial == b.Partial && bytes.Equal(a.Content, b.Content)
}

// FuzzWriteRead is the writer's round trip: bytes written to a container's
// two streams, in chunks of any size and interleaved in any order, with a
// line as long as needed to be split into partial records, read back by
// ReadLog as the same lines (its pieces joined), each stream's in order,
// no piece longer than a record; and their last n with Tail.
func FuzzWriteRead(f *testing.F) {
	f.Add([]byte("hello\nworld\n"), []byte("err\n"), []byte{3, 200, 1}, uint16(0), uint8(2))
	f.Add([]byte("no newline"), []byte(""), []byte{}, uint16(MaxRecordSize-3), uint8(0))
	f.Add([]byte("a\n\nb"), []byte("x\ny"), []byte{1, 1, 1, 255}, uint16(3*MaxRecordSize+1), uint8(1))
	f.Add([]byte("\n"), []byte("\n\n"), []byte{0}, uint16(MaxRecordSize), uint8(5))
	// A worker runs one input at a time: one file does for all.
	path := filepath.Join(f.TempDir(), "0.log")
	f.Fuzz(func(t *testing.T, stdout, stderr, chunking []byte, long uint16, tail uint8) {
		// A run of x long enough to need partial records, inside stdout.
		at := len(stdout) / 2
		stdout = slices.Concat(stdout[:at], bytes.Repeat([]byte{'x'}, int(long)), stdout[at:])

		out, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		clk := testingclock.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		sink := NewSink(out, clk, nil)
		writers := [2]*Writer{NewWriter(sink, Stdout), NewWriter(sink, Stderr)}
		pending := [2][]byte{stdout, stderr}
		for i := 0; len(pending[0])+len(pending[1]) > 0; i++ {
			// Each chunking byte picks a stream (low bit) and a size.
			var c byte = 0xff
			if len(chunking) > 0 {
				c = chunking[i%len(chunking)]
			}
			s := int(c & 1)
			if len(pending[s]) == 0 {
				s = 1 - s
			}
			n := min(len(pending[s]), 1+int(c>>1)*97)
			if written, err := writers[s].Write(pending[s][:n]); err != nil || written != n {
				t.Fatalf("Write = %d, %v; want %d", written, err, n)
			}
			pending[s] = pending[s][n:]
			clk.Step(time.Millisecond)
		}
		for _, w := range writers {
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
		}

		all := fuzzRead(t, path, ReadOptions{Tail: AllLines})
		for s, want := range map[string][]byte{Stdout: stdout, Stderr: stderr} {
			if got, want := fuzzContents(fuzzOf(all, s)), fuzzLines(want); !slices.Equal(got, want) {
				t.Fatalf("%s: read %d lines %.200q, wrote %d lines %.200q", s, len(got), got, len(want), want)
			}
			if got := fuzzContents(fuzzRead(t, path, ReadOptions{Tail: AllLines, Stream: s})); !slices.Equal(got, fuzzContents(fuzzOf(all, s))) {
				t.Fatalf("Stream %s: %.200q", s, got)
			}
			pieces := fuzzOf(fuzzReadPieces(t, path, ReadOptions{Tail: AllLines}), s)
			for _, p := range pieces {
				if len(p.Content) > MaxRecordSize {
					t.Fatalf("a piece of %d bytes, more than a record holds", len(p.Content))
				}
			}
			if got := bytes.Join(fuzzContentBytes(pieces), nil); !bytes.Equal(got, bytes.ReplaceAll(want, []byte{'\n'}, nil)) {
				t.Fatalf("pieces of %s: they make %.200q", s, got)
			}
		}
		n := int(tail)
		got := fuzzRead(t, path, ReadOptions{Tail: n})
		if want := all[max(0, len(all)-n):]; !slices.Equal(fuzzContents(got), fuzzContents(want)) {
			t.Fatalf("Tail %d: %.200q, want %.200q", n, fuzzContents(got), fuzzContents(want))
		}
	})
}

// FuzzReadLog feeds ReadLog and ReadTail any file. ReadLog either fails
// with ErrMalformed or reads lines that its options select consistently:
// Tail the last ones, Stream those of one stream, the pieces the same
// bytes as the lines they make, Offset what follows the first record boundary from there on.
// ReadTail stays within its byte limit.
func FuzzReadLog(f *testing.F) {
	f.Add([]byte(fuzzSeedLog), uint8(2), uint16(0))
	f.Add([]byte(fuzzSeedLog), uint8(0), uint16(40))
	f.Add([]byte(fuzzSeedLog), uint8(10), uint16(38))
	f.Add([]byte("garbage\n"+fuzzSeedLog), uint8(1), uint16(8))
	// Tags the format allows after the first, at length.
	f.Add([]byte("2026-03-04T05:06:07.123456789Z stderr P:a=1:bb=22:ccc=333:dddd=4444:eeeee=55555:ffffff=666666 some content\n"), uint8(3), uint16(200))
	// A worker runs one input at a time: its files do for all.
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, tail uint8, offset uint16) {
		path := filepath.Join(dir, "0.log")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		lines, maxBytes := int(tail%8), int(offset)
		got, err := ReadTail(path, lines, maxBytes)
		if want := fuzzTail(data, lines, maxBytes); err != nil || !bytes.Equal(got, want) {
			t.Fatalf("ReadTail(%d lines, %d bytes) = %q, %v; want %q", lines, maxBytes, got, err, want)
		}

		all, err := fuzzTryRead(path, ReadOptions{Tail: AllLines})
		if err != nil {
			return
		}
		// A tail counts a line where its last record is, and a line still
		// open at the end of the file where its last partial record is,
		// not where the read ends it: the model is the reassembling one.
		recs, err := fuzzRecords(data)
		if err != nil {
			t.Fatalf("ReadLog read the file, but %v", err)
		}
		n := int(tail)
		if got, want := fuzzStreamContents(fuzzRead(t, path, ReadOptions{Tail: n})), tailByReassembling(recs, 0, "", n); !slices.Equal(got, want) {
			t.Fatalf("Tail %d: %q, want %q", n, got, want)
		}
		for _, s := range []string{Stdout, Stderr} {
			if got := fuzzContents(fuzzRead(t, path, ReadOptions{Tail: AllLines, Stream: s})); !slices.Equal(got, fuzzContents(fuzzOf(all, s))) {
				t.Fatalf("Stream %s: %q, of %q", s, got, fuzzContents(all))
			}
			pieces := fuzzOf(fuzzReadPieces(t, path, ReadOptions{Tail: AllLines}), s)
			if got, want := bytes.Join(fuzzContentBytes(pieces), nil), bytes.Join(fuzzContentBytes(fuzzOf(all, s)), nil); !bytes.Equal(got, want) {
				t.Fatalf("pieces of %s: %q, want %q", s, got, want)
			}
		}

		// From an offset: what a file holding only what follows the first
		// record boundary there reads.
		off := min(int(offset), len(data))
		if off == 0 {
			return
		}
		rest := data[off:]
		if data[off-1] != '\n' {
			if i := bytes.IndexByte(rest, '\n'); i >= 0 {
				rest = rest[i+1:]
			} else {
				rest = nil
			}
		}
		restPath := filepath.Join(dir, "rest.log")
		if err := os.WriteFile(restPath, rest, 0o644); err != nil {
			t.Fatal(err)
		}
		want := fuzzRead(t, restPath, ReadOptions{Tail: AllLines})
		if got := fuzzRead(t, path, ReadOptions{Tail: AllLines, Offset: int64(off)}); !slices.Equal(fuzzContents(got), fuzzContents(want)) {
			t.Fatalf("Offset %d: %q, want %q", off, fuzzContents(got), fuzzContents(want))
		}
	})
}

// fuzzRecords parses the terminated records of data, as ReadLog reads
// them; the last one, unterminated, is left out (a Tail does not read it).
func fuzzRecords(data []byte) ([]Record, error) {
	var recs []Record
	lines := bytes.SplitAfter(data, []byte{'\n'})
	for i, line := range lines[:len(lines)-1] {
		r, err := Parse(line)
		if err != nil {
			return nil, fmt.Errorf("record %d, %.100q: %w", i+1, line, err)
		}
		recs = append(recs, r)
	}
	return recs, nil
}

// fuzzStreamContents is "stream:content" of each line, as
// tailByReassembling lists them.
func fuzzStreamContents(lines []Line) []string {
	out := []string{}
	for _, l := range lines {
		out = append(out, l.Stream+":"+string(l.Content))
	}
	return out
}

// fuzzTail is ReadTail's contract the simple way: the last lines
// terminated records, those that parse (with a header no longer than
// MaxRecordSize), each one's content and a newline when it is full, and
// of that the last maxBytes bytes.
func fuzzTail(data []byte, lines, maxBytes int) []byte {
	if lines <= 0 || maxBytes <= 0 {
		return nil
	}
	recs := bytes.SplitAfter(data, []byte{'\n'})
	if last := recs[len(recs)-1]; !bytes.HasSuffix(last, []byte{'\n'}) {
		recs = recs[:len(recs)-1] // unterminated, or the empty rest
	}
	var out []byte
	for _, line := range recs[max(0, len(recs)-lines):] {
		if l := line[:len(line)-1]; len(l) > MaxRecordSize && bytes.Count(l[:MaxRecordSize], []byte{' '}) < 3 {
			continue
		}
		r, err := Parse(line)
		if err != nil {
			continue
		}
		out = append(out, r.Content...)
		if !r.Partial {
			out = append(out, '\n')
		}
	}
	return out[max(0, len(out)-maxBytes):]
}

// fuzzTryRead reads the log at path with opts; an error must be about a
// malformed record.
func fuzzTryRead(path string, opts ReadOptions) ([]Line, error) {
	pieces, err := fuzzTryReadPieces(path, opts)
	return fuzzJoin(pieces), err
}

// fuzzTryReadPieces is what ReadLog hands over: a long line in pieces.
func fuzzTryReadPieces(path string, opts ReadOptions) ([]Line, error) {
	var lines []Line
	err := ReadLog(context.Background(), path, opts, func(l Line) error {
		l.Content = slices.Clone(l.Content)
		lines = append(lines, l)
		return nil
	})
	if err != nil && !errors.Is(err, ErrMalformed) {
		return nil, errors.Join(errors.New("an error that is not ErrMalformed"), err)
	}
	return lines, err
}

// fuzzJoin puts the pieces of each line back together (Line.Continued,
// Line.Partial), each line where its last piece came: where a tail counts
// it.
func fuzzJoin(pieces []Line) []Line {
	var out []Line
	open := map[string]*Line{}
	for _, p := range pieces {
		l := open[p.Stream]
		if l == nil || !p.Continued {
			l = &Line{Time: p.Time, Stream: p.Stream}
		}
		l.Content = append(l.Content, p.Content...)
		if p.Partial {
			open[p.Stream] = l
			continue
		}
		delete(open, p.Stream)
		out = append(out, *l)
	}
	return out
}

// fuzzReadPieces is fuzzTryReadPieces of a log that reads without an error.
func fuzzReadPieces(t *testing.T, path string, opts ReadOptions) []Line {
	t.Helper()
	pieces, err := fuzzTryReadPieces(path, opts)
	if err != nil {
		t.Fatalf("ReadLog(%+v): %v", opts, err)
	}
	return pieces
}

// fuzzRead is fuzzTryRead of a log that reads without an error.
func fuzzRead(t *testing.T, path string, opts ReadOptions) []Line {
	t.Helper()
	lines, err := fuzzTryRead(path, opts)
	if err != nil {
		t.Fatalf("ReadLog(%+v): %v", opts, err)
	}
	return lines
}

func fuzzOf(lines []Line, stream string) []Line {
	var out []Line
	for _, l := range lines {
		if l.Stream == stream {
			out = append(out, l)
		}
	}
	return out
}

func fuzzContents(lines []Line) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = string(l.Content)
	}
	return out
}

func fuzzContentBytes(lines []Line) [][]byte {
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = l.Content
	}
	return out
}

// fuzzLines are the lines a stream's bytes hold: split at newlines, an
// unterminated last one included.
func fuzzLines(b []byte) []string {
	out := []string{}
	for len(b) > 0 {
		line, rest, found := bytes.Cut(b, []byte{'\n'})
		out = append(out, string(line))
		if !found {
			break
		}
		b = rest
	}
	return out
}
