package crilog

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// refLine is a line of a log as the simple reading finds it: every record
// parsed, the lines reassembled.
type refLine struct {
	stream  string
	content string
	first   int // index of its first record
	last    int // index of its last record
	ended   bool
	time    time.Time
}

// tailByReassembling is ReadLog's contract for a log read without Follow,
// computed the simple way from its records: the lines of stream ("" for
// both) from record index from on, the last tail of them by where their
// last record is (all for a negative tail), complete ones in the order
// they end and then the unfinished ones, oldest first (stdout first when
// they started at the same time), as ReadLog ends them.
func tailByReassembling(recs []Record, from int, stream string, tail int) []string {
	var lines []*refLine
	var open [2]*refLine
	for i := from; i < len(recs); i++ {
		r := recs[i]
		if stream != "" && r.Stream != stream {
			continue
		}
		s := streamIndex(r.Stream)
		if open[s] == nil {
			open[s] = &refLine{stream: r.Stream, first: i, time: r.Time}
			lines = append(lines, open[s])
		}
		l := open[s]
		l.content += string(r.Content)
		l.last = i
		if !r.Partial {
			l.ended = true
			open[s] = nil
		}
	}
	slices.SortFunc(lines, func(a, b *refLine) int { return a.last - b.last })
	if tail >= 0 {
		lines = lines[max(len(lines)-tail, 0):]
	}
	// ReadLog lists a complete line at its end, an unfinished one when it
	// ends it, at the end of the file.
	slices.SortStableFunc(lines, func(a, b *refLine) int {
		switch {
		case a.ended && b.ended:
			return a.last - b.last
		case a.ended:
			return -1
		case b.ended:
			return 1
		}
		if c := a.time.Compare(b.time); c != 0 {
			return c
		}
		return streamIndex(a.stream) - streamIndex(b.stream)
	})
	out := []string{}
	for _, l := range lines {
		out = append(out, l.stream+":"+l.content)
	}
	return out
}

// randomLog is a log of n records of both streams, lines of one to three
// records, some left unfinished at the end, the times all different.
func randomLog(rng *rand.Rand, n int) []Record {
	var recs []Record
	for i := range n {
		s := rng.IntN(2)
		r := Record{
			Time:    t0.Add(time.Duration(i) * time.Second),
			Stream:  streamName(s),
			Partial: rng.IntN(3) == 0,
			Content: fmt.Appendf(nil, "%c%d", "oe"[s], i),
		}
		recs = append(recs, r)
	}
	return recs
}

// TestReadLogTailMatchesReassembling: on random logs, every Tail, Stream
// and Offset gives the lines that reassembling the whole log gives.
func TestReadLogTailMatchesReassembling(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 40 {
		recs := randomLog(rng, 1+rng.IntN(12))
		var data []byte
		starts := make([]int64, len(recs)+1) // of each record, and the end
		for i, r := range recs {
			starts[i] = int64(len(data))
			data = AppendRecord(data, r)
		}
		starts[len(recs)] = int64(len(data))
		path := filepath.Join(t.TempDir(), "0.log")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, stream := range []string{"", Stdout, Stderr} {
			for tail := -1; tail <= len(recs)+1; tail++ {
				from := rng.IntN(len(recs) + 1)
				offset, skipped := starts[from], from
				if from < len(recs) && rng.IntN(2) == 0 {
					offset += 3 // inside the record: it is skipped
					skipped++
				}
				opts := ReadOptions{Tail: tail, Stream: stream, Offset: offset}
				got := []string{}
				for _, l := range readAll(t, path, opts) {
					got = append(got, l.Stream+":"+string(l.Content))
				}
				want := tailByReassembling(recs, skipped, stream, tail)
				if !slices.Equal(got, want) {
					t.Fatalf("round %d, log %q, %+v:\nlines %q\nwant  %q", round, data, opts, got, want)
				}
			}
		}
	}
}

// TestReadLogLongRecord: a record longer than the reader's buffer (a
// runtime that does not split lines writes one) comes in pieces, each no
// longer than the buffer, and so does one that the end of the file cuts.
func TestReadLogLongRecord(t *testing.T) {
	long := strings.Repeat("y", 5*readBufferSize+7)
	data := AppendRecord(nil, full(Stdout, "before"))
	data = AppendRecord(data, full(Stderr, long))
	data = AppendRecord(data, full(Stdout, "after"))
	cut := AppendRecord(nil, full(Stdout, long))
	data = append(data, cut[:len(cut)-1]...) // its writer is at work
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	longest := 0
	err := ReadLog(context.Background(), path, ReadOptions{Tail: AllLines}, func(l Line) error {
		longest = max(longest, len(l.Content))
		return nil
	})
	if err != nil || longest > readBufferSize {
		t.Fatalf("ReadLog = %v, its longest piece %d bytes, want none over %d", err, longest, readBufferSize)
	}
	got := contents(readAll(t, path, ReadOptions{Tail: AllLines}))
	// Of the cut record, what was read in whole buffers went out already,
	// the rest not.
	want := []string{"before", long, "after", long}
	if len(got) != len(want) || !slices.Equal(got[:3], want[:3]) || !strings.HasPrefix(long, got[3]) || len(got[3]) < len(long)-2*readBufferSize {
		t.Errorf("lines %q, want %q (the last one cut, at most two buffers short)", shorten(got), shorten(want))
	}
	if got := contents(readAll(t, path, ReadOptions{Tail: 1, Stream: Stderr})); !slices.Equal(got, []string{long}) {
		t.Errorf("the stderr tail: %q, want the long line", shorten(got))
	}
}

// TestReadLogOfALongLineInBoundedMemory: however a log that holds one
// 16 MiB line without a newline is read — whole, its last line, followed
// to its end, from an offset, one stream — ReadLog allocates a few
// buffers, not the line: it never holds a line whole, and a tail holds
// nothing per line.
func TestReadLogOfALongLineInBoundedMemory(t *testing.T) {
	const lineBytes = 16 << 20
	path := writeLongLine(t, lineBytes)
	// The writer's last record is the line's end: without it, the line is
	// still being written.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	unfinished := filepath.Join(t.TempDir(), "1.log")
	if err := os.WriteFile(unfinished, data[:last], 0o600); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	close(ended)
	const maxAlloc = 1 << 20
	for name, tc := range map[string]struct {
		path string
		opts ReadOptions
	}{
		"whole":                   {path, ReadOptions{Tail: AllLines}},
		"tail 1":                  {path, ReadOptions{Tail: 1}},
		"tail 1 of stdout":        {path, ReadOptions{Tail: 1, Stream: Stdout}},
		"tail 1000":               {path, ReadOptions{Tail: 1000}},
		"followed to its end":     {path, ReadOptions{Follow: true, Tail: 1, Until: ended}},
		"from an offset":          {path, ReadOptions{Tail: AllLines, Offset: lineBytes / 2}},
		"unfinished, whole":       {unfinished, ReadOptions{Tail: AllLines}},
		"unfinished, tail 1":      {unfinished, ReadOptions{Tail: 1}},
		"unfinished, followed":    {unfinished, ReadOptions{Follow: true, Tail: 1, Until: ended}},
		"unfinished, from offset": {unfinished, ReadOptions{Tail: 1, Offset: 100}},
	} {
		t.Run(name, func(t *testing.T) {
			var n int
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := ReadLog(context.Background(), tc.path, tc.opts, func(l Line) error {
				n += len(l.Content)
				return nil
			})
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatal(err)
			}
			if n < lineBytes/2-MaxRecordSize {
				t.Errorf("read %d bytes of the line, want about %d or more", n, lineBytes/2)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("ReadLog allocated %d bytes", alloc)
			if alloc > maxAlloc {
				t.Errorf("ReadLog allocated %d bytes reading a %d-byte line, want at most %d", alloc, lineBytes, maxAlloc)
			}
		})
	}
}
