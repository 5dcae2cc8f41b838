package crilog

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	testingclock "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2026, 3, 4, 5, 6, 7, 890000000, time.UTC)

// parseAll parses every record of a log.
func parseAll(t *testing.T, data []byte) []Record {
	t.Helper()
	var recs []Record
	for _, line := range bytes.SplitAfter(data, []byte{'\n'}) {
		if len(line) == 0 {
			continue
		}
		r, err := Parse(line)
		if err != nil {
			t.Fatalf("Parse(%q): %v", line, err)
		}
		recs = append(recs, r)
	}
	return recs
}

type rec struct {
	stream  string
	partial bool
	content string
}

func summarize(recs []Record) []rec {
	out := make([]rec, len(recs))
	for i, r := range recs {
		out[i] = rec{r.Stream, r.Partial, string(r.Content)}
	}
	return out
}

func TestWriterRoundTrip(t *testing.T) {
	var out bytes.Buffer
	clk := testingclock.NewFakePassiveClock(t0)
	sink := NewSink(&out, clk, nil)
	w := NewWriter(sink, Stdout)
	for _, chunk := range []string{"hel", "lo\nwor", "ld\n", "\n", "a b  c\n"} {
		if n, err := w.Write([]byte(chunk)); err != nil || n != len(chunk) {
			t.Fatalf("Write(%q) = %d, %v", chunk, n, err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	wantText := "2026-03-04T05:06:07.89Z stdout F hello\n" +
		"2026-03-04T05:06:07.89Z stdout F world\n" +
		"2026-03-04T05:06:07.89Z stdout F \n" +
		"2026-03-04T05:06:07.89Z stdout F a b  c\n"
	if out.String() != wantText {
		t.Fatalf("log =\n%s\nwant\n%s", out.String(), wantText)
	}
	recs := parseAll(t, out.Bytes())
	for _, r := range recs {
		if !r.Time.Equal(t0) {
			t.Errorf("time %v, want %v", r.Time, t0)
		}
	}
	want := []rec{{Stdout, false, "hello"}, {Stdout, false, "world"}, {Stdout, false, ""}, {Stdout, false, "a b  c"}}
	if got := summarize(recs); !slices.Equal(got, want) {
		t.Errorf("records %v, want %v", got, want)
	}
}

func TestWriterLongLine(t *testing.T) {
	long := strings.Repeat("x", 2*MaxRecordSize+100)
	exact := strings.Repeat("y", MaxRecordSize)
	tests := map[string]struct {
		writes []string
		want   []rec
	}{
		"split into partial records": {
			writes: []string{long + "\nnext\n"},
			want: []rec{
				{Stdout, true, long[:MaxRecordSize]},
				{Stdout, true, long[MaxRecordSize : 2*MaxRecordSize]},
				{Stdout, false, long[2*MaxRecordSize:]},
				{Stdout, false, "next"},
			},
		},
		"split across small writes": {
			writes: []string{long[:10], long[10 : MaxRecordSize+1], long[MaxRecordSize+1:], "\n"},
			want: []rec{
				{Stdout, true, long[:MaxRecordSize]},
				{Stdout, true, long[MaxRecordSize : 2*MaxRecordSize]},
				{Stdout, false, long[2*MaxRecordSize:]},
			},
		},
		"exactly one record long": {
			writes: []string{exact, "\n"},
			want:   []rec{{Stdout, false, exact}},
		},
		"one byte longer than a record": {
			writes: []string{exact + "z\n"},
			want:   []rec{{Stdout, true, exact}, {Stdout, false, "z"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			w := NewWriter(NewSink(&out, testingclock.NewFakePassiveClock(t0), nil), Stdout)
			for _, s := range tc.writes {
				if _, err := w.Write([]byte(s)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if got := summarize(parseAll(t, out.Bytes())); !slices.Equal(got, tc.want) {
				t.Errorf("got %d records, want %d", len(got), len(tc.want))
				for i := range got {
					t.Logf("record %d: %s partial=%v len=%d", i, got[i].stream, got[i].partial, len(got[i].content))
				}
			}

			// Reading the file gives the lines back whole.
			path := filepath.Join(t.TempDir(), "0.log")
			if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
				t.Fatal(err)
			}
			lines := readAll(t, path, ReadOptions{Tail: AllLines})
			joined := strings.Join(tc.writes, "")
			wantLines := strings.Split(strings.TrimSuffix(joined, "\n"), "\n")
			if !slices.Equal(contents(lines), wantLines) {
				t.Errorf("ReadLog gave %d lines, want %d", len(lines), len(wantLines))
			}
		})
	}
}

func TestWriterPartialLastLine(t *testing.T) {
	var out bytes.Buffer
	w := NewWriter(NewSink(&out, testingclock.NewFakePassiveClock(t0), nil), Stderr)
	if _, err := w.Write([]byte("done\nno newline")); err != nil {
		t.Fatal(err)
	}
	if got := summarize(parseAll(t, out.Bytes())); !slices.Equal(got, []rec{{Stderr, false, "done"}}) {
		t.Fatalf("before Close: %v", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := []rec{{Stderr, false, "done"}, {Stderr, false, "no newline"}}
	if got := summarize(parseAll(t, out.Bytes())); !slices.Equal(got, want) {
		t.Fatalf("after Close: %v, want %v", got, want)
	}
	if _, err := w.Write([]byte("more")); err == nil {
		t.Error("Write after Close succeeded")
	}
}

func TestInterleavedStreams(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakePassiveClock(t0)
	var observed []rec
	sink := NewSink(f, clk, func(r Record) {
		observed = append(observed, rec{r.Stream, r.Partial, string(r.Content)})
	})
	stdout, stderr := NewWriter(sink, Stdout), NewWriter(sink, Stderr)
	long := strings.Repeat("o", MaxRecordSize+5)

	write := func(w *Writer, s string) {
		t.Helper()
		clk.SetTime(clk.Now().Add(time.Second))
		if _, err := w.Write([]byte(s)); err != nil {
			t.Fatal(err)
		}
	}
	write(stdout, "out 1\n")
	write(stdout, long[:MaxRecordSize+1]) // one partial record goes out
	write(stderr, "err 1\nerr 2")
	write(stdout, long[MaxRecordSize+1:]+"\nout 3\n")
	if err := stderr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := stdout.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}

	wantRecords := []rec{
		{Stdout, false, "out 1"},
		{Stdout, true, long[:MaxRecordSize]},
		{Stderr, false, "err 1"},
		{Stdout, false, long[MaxRecordSize:]},
		{Stdout, false, "out 3"},
		{Stderr, false, "err 2"},
	}
	if !slices.Equal(observed, wantRecords) {
		t.Errorf("observed records differ from the written ones")
	}

	tests := map[string]struct {
		opts ReadOptions
		want []string
	}{
		"both streams": {ReadOptions{Tail: AllLines}, []string{"out 1", "err 1", long, "out 3", "err 2"}},
		"stdout only":  {ReadOptions{Tail: AllLines, Stream: Stdout}, []string{"out 1", long, "out 3"}},
		"stderr only":  {ReadOptions{Tail: AllLines, Stream: Stderr}, []string{"err 1", "err 2"}},
		"tail 2":       {ReadOptions{Tail: 2}, []string{"out 3", "err 2"}},
		"tail 0":       {ReadOptions{Tail: 0}, nil},
		"tail beyond":  {ReadOptions{Tail: 100}, []string{"out 1", "err 1", long, "out 3", "err 2"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := readAll(t, path, tc.opts)
			if !slices.Equal(contents(got), tc.want) {
				t.Errorf("lines %q, want %q", shorten(contents(got)), shorten(tc.want))
			}
		})
	}

	// A reassembled line carries the time of its first record.
	lines := readAll(t, path, ReadOptions{Tail: AllLines, Stream: Stdout})
	if want := t0.Add(2 * time.Second); !lines[1].Time.Equal(want) {
		t.Errorf("long line time %v, want %v", lines[1].Time, want)
	}
}

func TestReadLogUnfinished(t *testing.T) {
	// A writer that is still at work: a partial record without its full
	// one, and half a record at the end of the file.
	data := "2026-03-04T05:06:07Z stdout F one\n" +
		"2026-03-04T05:06:08Z stdout P tw\n" +
		"2026-03-04T05:06:09Z stdout F th"
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	got := contents(readAll(t, path, ReadOptions{Tail: AllLines}))
	if want := []string{"one", "tw"}; !slices.Equal(got, want) {
		t.Errorf("lines %q, want %q", got, want)
	}
}

func TestFollow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriter(NewSink(f, testingclock.NewFakePassiveClock(t0), nil), Stdout)
	if _, err := w.Write([]byte("old 1\nold 2\n")); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lines := make(chan string)
	done := make(chan error, 1)
	go func() {
		done <- ReadLog(ctx, path, ReadOptions{Follow: true, Tail: 1}, func(l Line) error {
			select {
			case lines <- string(l.Content):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()

	expect := func(want string) {
		t.Helper()
		select {
		case got := <-lines:
			if got != want {
				t.Fatalf("line %q, want %q", got, want)
			}
		case err := <-done:
			t.Fatalf("ReadLog returned early: %v", err)
		case <-time.After(10 * time.Second):
			t.Fatalf("no line %q within 10s", want)
		}
	}
	expect("old 2")
	// The follower has caught up; what is appended now must wake it.
	if _, err := w.Write([]byte("new 1\nnew ")); err != nil {
		t.Fatal(err)
	}
	expect("new 1")
	if _, err := w.Write([]byte("2\n")); err != nil {
		t.Fatal(err)
	}
	expect("new 2")

	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ReadLog = %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadLog did not return after cancel")
	}
}

func TestParse(t *testing.T) {
	valid := map[string]struct {
		line string
		want Record
	}{
		"full":             {"2026-03-04T05:06:07.000000001Z stdout F hello world\n", Record{Time: t0.Truncate(time.Second).Add(1), Stream: Stdout, Content: []byte("hello world")}},
		"partial":          {"2026-03-04T05:06:07Z stderr P part", Record{Time: t0.Truncate(time.Second), Stream: Stderr, Partial: true, Content: []byte("part")}},
		"empty content":    {"2026-03-04T05:06:07Z stdout F \n", Record{Time: t0.Truncate(time.Second), Stream: Stdout, Content: []byte{}}},
		"no space at end":  {"2026-03-04T05:06:07Z stdout F", Record{Time: t0.Truncate(time.Second), Stream: Stdout}},
		"extra tags":       {"2026-03-04T05:06:07Z stdout P:x y", Record{Time: t0.Truncate(time.Second), Stream: Stdout, Partial: true, Content: []byte("y")}},
		"other time zone":  {"2026-03-04T07:06:07+02:00 stdout F a", Record{Time: t0.Truncate(time.Second), Stream: Stdout, Content: []byte("a")}},
		"spaces in output": {"2026-03-04T05:06:07Z stdout F  a  ", Record{Time: t0.Truncate(time.Second), Stream: Stdout, Content: []byte(" a  ")}},
	}
	for name, tc := range valid {
		t.Run(name, func(t *testing.T) {
			got, err := Parse([]byte(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			if !got.Time.Equal(tc.want.Time) || got.Stream != tc.want.Stream || got.Partial != tc.want.Partial || !bytes.Equal(got.Content, tc.want.Content) {
				t.Errorf("Parse = %+v, want %+v", got, tc.want)
			}
		})
	}

	malformed := map[string]string{
		"empty":          "",
		"no stream":      "2026-03-04T05:06:07Z",
		"bad timestamp":  "yesterday stdout F a",
		"unknown stream": "2026-03-04T05:06:07Z stdin F a",
		"no tag":         "2026-03-04T05:06:07Z stdout",
		"unknown tag":    "2026-03-04T05:06:07Z stdout X a",
		"plain text":     "hello world",
	}
	for name, line := range malformed {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse([]byte(line)); !errors.Is(err, ErrMalformed) {
				t.Errorf("Parse(%q) error = %v, want ErrMalformed", line, err)
			}
		})
	}
}

func TestReadLogMalformed(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	data := "2026-03-04T05:06:07Z stdout F fine\nnot a record\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	err := ReadLog(context.Background(), path, ReadOptions{Tail: AllLines}, func(Line) error { return nil })
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), ":2:") {
		t.Errorf("ReadLog = %v, want ErrMalformed at line 2", err)
	}
}

func TestReadLogStopsOnCallbackError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	data := "2026-03-04T05:06:07Z stdout F a\n2026-03-04T05:06:07Z stdout F b\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	stop := errors.New("stop")
	calls := 0
	err := ReadLog(context.Background(), path, ReadOptions{Tail: AllLines}, func(Line) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("ReadLog = %v after %d calls, want stop after 1", err, calls)
	}
}

// readAll reads the log with ReadLog and joins the pieces of each line:
// a line is complete, and listed, at its last piece.
func readAll(t *testing.T, path string, opts ReadOptions) []Line {
	t.Helper()
	var lines []Line
	j := &lineJoiner{t: t}
	err := ReadLog(context.Background(), path, opts, func(l Line) error {
		if l, ok := j.add(l); ok {
			lines = append(lines, l)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("ReadLog: %v", err)
	}
	return lines
}

// lineJoiner joins the pieces of lines that ReadLog hands over, checking
// that they fit together.
type lineJoiner struct {
	t    *testing.T
	open [2]*Line // by stream: the line whose pieces are being joined
}

// add takes the next piece and returns the line it completes, if it does.
func (j *lineJoiner) add(l Line) (Line, bool) {
	i := streamIndex(l.Stream)
	switch {
	case l.Continued && j.open[i] == nil:
		j.t.Errorf("a piece %q continues no line of %s", l.Content, l.Stream)
	case !l.Continued && j.open[i] != nil:
		j.t.Errorf("a line of %s starts (%q) before the end of %q", l.Stream, l.Content, j.open[i].Content)
	case l.Continued && !l.Time.Equal(j.open[i].Time):
		j.t.Errorf("a piece of a line has the time %v, the line %v", l.Time, j.open[i].Time)
	}
	if j.open[i] == nil || !l.Continued {
		j.open[i] = &Line{Time: l.Time, Stream: l.Stream, Content: []byte{}}
	}
	j.open[i].Content = append(j.open[i].Content, l.Content...)
	if l.Partial {
		return Line{}, false
	}
	line := *j.open[i]
	j.open[i] = nil
	return line, true
}

func contents(lines []Line) []string {
	var out []string
	for _, l := range lines {
		out = append(out, string(l.Content))
	}
	return out
}

func shorten(lines []string) []string {
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) > 20 {
			l = l[:20] + "..."
		}
		out[i] = l
	}
	return out
}

func TestReadLogOffset(t *testing.T) {
	first := "2026-03-04T05:06:07Z stdout F one\n"
	data := first + "2026-03-04T05:06:08Z stdout F two\n" + "2026-03-04T05:06:09Z stderr F three\n"
	path := filepath.Join(t.TempDir(), "0.log")
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		offset int64
		want   []string
	}{
		"start":           {0, []string{"one", "two", "three"}},
		"record boundary": {int64(len(first)), []string{"two", "three"}},
		// An offset inside a record skips the rest of it.
		"inside a record":       {int64(len(first)) + 3, []string{"three"}},
		"on a record's newline": {int64(len(first)) - 1, []string{"two", "three"}},
		"end":                   {int64(len(data)), nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := contents(readAll(t, path, ReadOptions{Tail: AllLines, Offset: tc.offset}))
			if !slices.Equal(got, tc.want) {
				t.Errorf("lines %q, want %q", got, tc.want)
			}
		})
	}
}

// piece is a Line as ReadLog hands it over, for comparisons.
type piece struct {
	stream             string
	content            string
	continued, partial bool
}

func readPieces(t *testing.T, path string, opts ReadOptions) []piece {
	t.Helper()
	var got []piece
	err := ReadLog(context.Background(), path, opts, func(l Line) error {
		got = append(got, piece{l.Stream, string(l.Content), l.Continued, l.Partial})
		return nil
	})
	if err != nil {
		t.Fatalf("ReadLog: %v", err)
	}
	return got
}

func shortenPieces(ps []piece) []piece {
	out := slices.Clone(ps)
	for i := range out {
		out[i].content = shorten([]string{out[i].content})[0]
	}
	return out
}

// TestReadLogPieces: a line of several records comes in its pieces as
// they are read, each with what says where it is in its line.
func TestReadLogPieces(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(NewSink(f, testingclock.NewFakePassiveClock(t0), nil), Stdout)
	long := strings.Repeat("x", 2*MaxRecordSize+10)
	if _, err := w.Write([]byte(long + "\nshort\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got := readPieces(t, path, ReadOptions{Tail: AllLines})
	x := strings.Repeat("x", MaxRecordSize)
	want := []piece{
		{Stdout, x, false, true},
		{Stdout, x, true, true},
		{Stdout, "xxxxxxxxxx", true, false},
		{Stdout, "short", false, false},
	}
	if !slices.Equal(got, want) {
		t.Errorf("pieces %+v, want %+v", shortenPieces(got), shortenPieces(want))
	}
}

func TestFollowUntil(t *testing.T) {
	path := filepath.Join(t.TempDir(), "0.log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := NewWriter(NewSink(f, testingclock.NewFakePassiveClock(t0), nil), Stdout)
	if _, err := w.Write([]byte("before\n")); err != nil {
		t.Fatal(err)
	}
	until := make(chan struct{})
	lines := make(chan string, 10)
	done := make(chan error, 1)
	j := &lineJoiner{t: t}
	go func() {
		done <- ReadLog(context.Background(), path, ReadOptions{Follow: true, Tail: AllLines, Until: until}, func(l Line) error {
			if l, ok := j.add(l); ok {
				lines <- string(l.Content)
			}
			return nil
		})
	}()
	select {
	case got := <-lines:
		if got != "before" {
			t.Fatalf("line %q, want before", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no first line within 10s")
	}
	// The writer's last words, then it is done: they must all be read,
	// a partial line whose end never came too.
	if _, err := w.Write([]byte("last\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte(AppendRecord(nil, Record{Time: t0, Stream: Stderr, Partial: true, Content: []byte("half")}))); err != nil {
		t.Fatal(err)
	}
	close(until)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("ReadLog = %v, want nil once Until is closed", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadLog did not return after Until was closed")
	}
	close(lines)
	var got []string
	for l := range lines {
		got = append(got, l)
	}
	if want := []string{"last", "half"}; !slices.Equal(got, want) {
		t.Errorf("lines after the first %q, want %q", got, want)
	}
}
