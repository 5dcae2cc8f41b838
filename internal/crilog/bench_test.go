package crilog

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	testingclock "k8s.io/utils/clock/testing"
)

// benchLineBytes is the length of the one line of the benchmarks' log.
const benchLineBytes = 32 << 20

// writeLongLine writes a log whose only line is n bytes long, written the
// way a container's output is (partial records, then a full one).
func writeLongLine(tb testing.TB, n int) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "0.log")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := NewWriter(NewSink(f, testingclock.NewFakePassiveClock(t0), nil), Stdout)
	chunk := bytes.Repeat([]byte{'x'}, 64<<10)
	for written := 0; written < n; written += len(chunk) {
		if _, err := w.Write(chunk[:min(len(chunk), n-written)]); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// BenchmarkReadLogLongLine reads a log that holds one 32 MiB line, all of
// it and its last line: what serving a container that never writes a
// newline costs. Run with -benchmem: bytes per op must not grow with the
// line.
func BenchmarkReadLogLongLine(b *testing.B) {
	path := writeLongLine(b, benchLineBytes)
	for name, tail := range map[string]int{"all": AllLines, "tail1": 1} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(benchLineBytes)
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				err := ReadLog(context.Background(), path, ReadOptions{Tail: tail}, func(l Line) error {
					n += len(l.Content)
					return nil
				})
				if err != nil || n != benchLineBytes {
					b.Fatalf("ReadLog = %v after %d bytes, want %d", err, n, benchLineBytes)
				}
			}
		})
	}
}
