package crilog

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"
)

// readRecords reads every record of a log file, gunzipping a .gz one.
func readRecords(t *testing.T, path string) []Record {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return parseAll(t, data)
}

// logFiles lists the files of dir, sorted.
func logFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

// TestLogFileRotates follows the kubelet's container log manager
// (pkg/kubelet/logs/container_log_manager.go): once the log reaches
// MaxSize it is renamed to <log>.<YYYYMMDD-hhmmss> and a new one is
// written; rotated files but the newest are compressed (.gz); at most
// MaxFiles files are kept, the oldest removed first.
func TestLogFileRotates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	clk := testingclock.NewFakeClock(t0)
	var warnings []string
	content := func(line int) string { return fmt.Sprintf("line %03d %s", line, strings.Repeat("x", 30)) }
	// A batch of 14 lines reaches MaxSize with its last line.
	size := len(AppendRecord(nil, Record{Time: t0, Stream: Stdout, Content: []byte(content(1))}))
	lf, err := OpenLogFile(path, Rotation{MaxSize: int64(14*size - 10), MaxFiles: 3}, clk, func(msg string, err error) {
		warnings = append(warnings, fmt.Sprintf("%s: %v", msg, err))
	})
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(NewSink(lf, clk, nil), Stdout)
	// A second passes between batches, so that each rotation has a name
	// of its own.
	line := 0
	for batch := range 5 {
		if batch > 0 {
			clk.Step(time.Second)
		}
		for range 14 {
			line++
			fmt.Fprintln(w, content(line))
		}
	}
	if err := lf.Close(); err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("warnings: %q", warnings)
	}
	// Rotated at the first record of batches 2 to 5, each file named by
	// the time it was rotated: the files of batches 1 and 2 are gone, 3
	// is compressed, 4 plain, 5 is the live log.
	want := []string{
		"0.log",
		"0.log." + t0.Add(4*time.Second).Format("20060102-150405"),
		"0.log." + t0.Add(3*time.Second).Format("20060102-150405") + ".gz",
	}
	slices.Sort(want)
	if got := logFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
	rotated, err := RotatedLogs(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range append(rotated, path) {
		for _, r := range readRecords(t, f) {
			got = append(got, string(r.Content))
		}
	}
	var wantLines []string
	for i := 29; i <= 70; i++ {
		wantLines = append(wantLines, content(i))
	}
	if !slices.Equal(got, wantLines) {
		t.Fatalf("lines of the kept files, oldest first:\n%q\nwant\n%q", got, wantLines)
	}
}

// TestLogFileRotatesOncePerSecond: a second rotation within the same
// second would take the first one's name; it waits for the next second,
// the log growing past MaxSize meanwhile.
func TestLogFileRotatesOncePerSecond(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	clk := testingclock.NewFakeClock(t0)
	lf, err := OpenLogFile(path, Rotation{MaxSize: 100, MaxFiles: 5}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(NewSink(lf, clk, nil), Stderr)
	for i := range 20 {
		fmt.Fprintf(w, "line %d\n", i)
	}
	if got := logFiles(t, dir); len(got) != 2 {
		t.Fatalf("files %q: want the live log and one rotation", got)
	}
	clk.Step(time.Second)
	fmt.Fprintln(w, "next second")
	if err := lf.Close(); err != nil {
		t.Fatal(err)
	}
	if got := logFiles(t, dir); len(got) != 3 {
		t.Fatalf("files %q: want the live log and two rotations", got)
	}
	if recs := readRecords(t, path); len(recs) != 1 || string(recs[0].Content) != "next second" {
		t.Fatalf("live log %v", summarize(recs))
	}
}

// TestPruneRotatedRemovesLeftovers: what a rotation cut short leaves (a
// temporary file, a file already compressed) is removed, as the kubelet's
// cleanupUnusedLogs does, and RotatedLogs does not list it.
func TestPruneRotatedRemovesLeftovers(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	for _, name := range []string{"0.log", "0.log.20260101-000000", "0.log.20260101-000000.gz", "0.log.20260101-000001.gz.tmp", "0.log.20260101-000002", "1.log.20260101-000003"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(AppendRecord(nil, Record{Time: t0, Stream: Stdout, Content: []byte(name)})), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	rotated, err := RotatedLogs(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(dir, "0.log.20260101-000000.gz"), filepath.Join(dir, "0.log.20260101-000002")}; !slices.Equal(rotated, want) {
		t.Fatalf("RotatedLogs = %q, want %q", rotated, want)
	}
	if err := PruneRotated(path, 3, 0); err != nil {
		t.Fatal(err)
	}
	want := []string{"0.log", "0.log.20260101-000000.gz", "0.log.20260101-000002.gz", "1.log.20260101-000003"}
	if got := logFiles(t, dir); !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
}

// follower reads the log at path (ReadLog, Follow) into lines until until
// is closed.
func follower(t *testing.T, path string, until <-chan struct{}) (lines <-chan string, done <-chan error) {
	t.Helper()
	ch := make(chan string, 1000)
	d := make(chan error, 1)
	go func() {
		d <- ReadLog(context.Background(), path, ReadOptions{Follow: true, Tail: AllLines, Until: until}, func(l Line) error {
			ch <- string(l.Content)
			return nil
		})
		close(ch)
	}()
	return ch, d
}

// waitLine waits for the follower's next line.
func waitLine(t *testing.T, lines <-chan string, want string) {
	t.Helper()
	select {
	case got := <-lines:
		if got != want {
			t.Fatalf("line %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("no line %q within 10s", want)
	}
}

// TestFollowAcrossRotation is `logs -f` across a rotation done the CRI
// way, as the kubelet's container log manager does it: the log is renamed,
// its writer goes on in the renamed file for a while (until the runtime
// reopens the log, ReopenContainerLog), then writes to a new file at the
// path — the old writer flushing its last line to the old file after the
// new one has begun. The follower gets every line once, in order, and then
// follows the new file. (The kubelet's follower reopens the path as soon
// as it sees the rename, pkg/kubelet/kuberuntime/logs/logs.go, and so
// loses what is written to the old file after that.)
func TestFollowAcrossRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	clk := testingclock.NewFakePassiveClock(t0)
	open := func() (*os.File, *Writer) {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		return f, NewWriter(NewSink(f, clk, nil), Stdout)
	}
	f, w := open()
	fmt.Fprintln(w, "one")
	until := make(chan struct{})
	lines, done := follower(t, path, until)
	waitLine(t, lines, "one")

	// Rotate: the writer still has the old file and writes to it.
	if err := os.Rename(path, path+".20260304-050607"); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(w, "two, in the rotated file")
	waitLine(t, lines, "two, in the rotated file")
	// The runtime reopens the log: a new file at the path, which gets the
	// next line, while the old writer flushes what it had to the old file
	// and closes it (containerd's ReopenContainerLog does so).
	oldF, oldW := f, w
	f, w = open()
	defer f.Close()
	fmt.Fprintln(w, "four, in the new file")
	fmt.Fprintln(oldW, "three, in the rotated file")
	oldF.Close()
	waitLine(t, lines, "three, in the rotated file")
	waitLine(t, lines, "four, in the new file")

	fmt.Fprintln(w, "five")
	close(until)
	if err := <-done; err != nil {
		t.Fatalf("ReadLog = %v", err)
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if want := []string{"five"}; !slices.Equal(rest, want) {
		t.Fatalf("lines after the rotation %q, want %q", rest, want)
	}
}

// TestFollowAcrossLogFileRotation: a follower of a LogFile that rotates
// itself many times while it is read gets every line exactly once, in
// order.
func TestFollowAcrossLogFileRotation(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "0.log")
	clk := testingclock.NewFakeClock(t0)
	lf, err := OpenLogFile(path, Rotation{MaxSize: 200, MaxFiles: 2}, clk, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := NewWriter(NewSink(lf, clk, nil), Stdout)
	until := make(chan struct{})
	lines, done := follower(t, path, until)
	// Five lines at a time, each batch a second after the last one, so
	// that the log rotates at most once between two looks of the
	// follower, which must go on in each new file.
	const n = 300
	for i := range n {
		if i%5 == 0 && i > 0 {
			for j := i - 5; j < i; j++ {
				waitLine(t, lines, fmt.Sprintf("line %d", j))
			}
			clk.Step(time.Second)
		}
		fmt.Fprintf(w, "line %d\n", i)
	}
	if err := lf.Close(); err != nil {
		t.Fatal(err)
	}
	close(until)
	if err := <-done; err != nil {
		t.Fatalf("ReadLog = %v", err)
	}
	var rest []string
	for l := range lines {
		rest = append(rest, l)
	}
	if want := []string{"line 295", "line 296", "line 297", "line 298", "line 299"}; !slices.Equal(rest, want) {
		t.Fatalf("last lines %q, want %q", rest, want)
	}
	if got := logFiles(t, dir); len(got) != 2 {
		t.Fatalf("files %q, want 2 (MaxFiles)", got)
	}
}

// failingOut is an output that fails with ENOSPC while full is set.
type failingOut struct {
	bytes.Buffer
	full bool
}

func (o *failingOut) Write(p []byte) (int, error) {
	if o.full {
		return 0, &os.PathError{Op: "write", Path: "0.log", Err: syscall.ENOSPC}
	}
	return o.Buffer.Write(p)
}

// TestSinkMarksDroppedOutput: output the log cannot take (a full disk) is
// dropped; once the log takes records again, a marker record on the stream
// that lost output says how many bytes were dropped and why, and OnDrop is
// told.
func TestSinkMarksDroppedOutput(t *testing.T) {
	out := &failingOut{}
	clk := testingclock.NewFakePassiveClock(t0)
	sink := NewSink(out, clk, nil)
	var drops []Drop
	sink.OnDrop(func(d Drop) { drops = append(drops, d) })
	stdout, stderr := NewWriter(sink, Stdout), NewWriter(sink, Stderr)
	fmt.Fprintln(stdout, "before")
	out.full = true
	if _, err := fmt.Fprintln(stdout, "lost 1"); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("a write to a full log: %v, want ENOSPC", err)
	}
	fmt.Fprintln(stdout, "lost 22")
	fmt.Fprint(stderr, "err\n")
	out.full = false
	fmt.Fprintln(stdout, "after")
	fmt.Fprintln(stdout, "and on")
	want := []rec{
		{Stdout, false, "before"},
		{Stdout, false, "podward: 15 bytes of log dropped: no space left on device"},
		{Stderr, false, "podward: 4 bytes of log dropped: no space left on device"},
		{Stdout, false, "after"},
		{Stdout, false, "and on"},
	}
	if got := summarize(parseAll(t, out.Bytes())); !slices.Equal(got, want) {
		t.Fatalf("log %+v\nwant %+v", got, want)
	}
	if len(drops) != 2 || drops[0].Stream != Stdout || drops[0].Bytes != 15 || !drops[0].Marked || !errors.Is(drops[0].Cause, syscall.ENOSPC) ||
		drops[1].Stream != Stderr || drops[1].Bytes != 4 {
		t.Fatalf("drops %+v", drops)
	}

	// Lost until the end: no marker, Unmarked has it.
	out.full = true
	fmt.Fprintln(stderr, "never")
	if got := sink.Unmarked(); len(got) != 1 || got[0].Stream != Stderr || got[0].Bytes != 6 || got[0].Marked {
		t.Fatalf("Unmarked = %+v", got)
	}
	if got := sink.Unmarked(); got != nil {
		t.Fatalf("Unmarked again = %+v", got)
	}
}
