package cluster

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/crilog"
)

// writeLongLine writes a line of n bytes 'x' as a container's output
// through crilog's writer into the log at path; closed, the writer ends the
// line with a full record, else the log has only its partial records.
func writeLongLine(t *testing.T, path string, n int, closed bool) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := crilog.NewWriter(crilog.NewSink(f, clocktesting.NewFakePassiveClock(logT0), nil), crilog.Stdout)
	chunk := bytes.Repeat([]byte{'x'}, 64<<10)
	for written := 0; written < n; written += len(chunk) {
		if _, err := w.Write(chunk[:min(len(chunk), n-written)]); err != nil {
			t.Fatal(err)
		}
	}
	if closed {
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestKubeletServerServesALongLineInBoundedMemory: a 16 MiB line without a
// newline, in the running instance's log (partial records only) and in
// the previous one's, is served in every way the API server asks for it
// without the node holding it: serving it allocates far less than the
// line's size. The handler writes to a counting ResponseWriter, so that
// only the server's own allocations count (over TLS, under the race
// detector, crypto/tls allocates a buffer per record: the detector drops
// sync.Pool items at random).
func TestKubeletServerServesALongLineInBoundedMemory(t *testing.T) {
	const lineBytes = 16 << 20
	const maxAlloc = 1 << 20
	// The fixture's configuration, for a server of our own whose handler
	// is called directly, by an anonymous client.
	var cfg KubeletServerConfig
	f := startKubeletServer(t, func(c *KubeletServerConfig) {
		c.AllowAnonymous = true
		cfg = *c
	})
	logs := f.logs
	s, err := NewKubeletServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	running := filepath.Join(logs.dir, "app-1.log")
	writeLongLine(t, running, lineBytes, false)
	writeLongLine(t, filepath.Join(logs.dir, "app-0.log"), lineBytes, true)
	// The follow case reads the log to its end, as once the instance ended.
	ended := make(chan struct{})
	close(ended)
	logs.ended[running] = ended
	// What the running instance's log holds of the line: the writer keeps
	// its last piece until more comes.
	inLog := (lineBytes - 1) / crilog.MaxRecordSize * crilog.MaxRecordSize
	const stamp = "2026-01-01T00:00:00.000000000Z "

	for _, tc := range []struct {
		name, query string
		want        int // bytes of 'x'
		prefix      string
		newline     bool
	}{
		{"whole", "", inLog, "", true},
		{"tailLines=1", "?tailLines=1", inLog, "", true},
		{"limitBytes", "?limitBytes=100000", 100000, "", false},
		{"limitBytes with timestamps", "?limitBytes=100000&timestamps=true&tailLines=1", 100000 - len(stamp), stamp, false},
		{"follow", "?follow=true&tailLines=1", inLog, "", true},
		{"previous", "?previous=true&tailLines=1", lineBytes, "", true},
		{"previous timestamps", "?previous=true&timestamps=true", lineBytes, stamp, true},
		{"sinceTime", "?previous=true&sinceTime=2026-01-01T00:00:00Z", lineBytes, "", true},
		{"sinceTime after the line", "?previous=true&sinceTime=2026-01-01T00:00:01Z", 0, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := httptest.NewRequestWithContext(t.Context(), "GET", "/containerLogs/default/web/app"+tc.query, nil)
			w := &countingResponse{prefix: len(tc.prefix), header: http.Header{}}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			s.Handler().ServeHTTP(w, req)
			runtime.ReadMemStats(&after)
			if w.code != http.StatusOK || string(w.head) != tc.prefix || w.x != tc.want || w.newline != tc.newline || w.other != 0 {
				t.Errorf("got %d %q, %d x, a newline at the end %v, %d other bytes; want 200 %q, %d x, %v",
					w.code, w.head, w.x, w.newline, w.other, tc.prefix, tc.want, tc.newline)
			}
			alloc := after.TotalAlloc - before.TotalAlloc
			t.Logf("serving allocated %d bytes", alloc)
			if alloc > maxAlloc {
				t.Errorf("serving a %d-byte line allocated %d bytes, want at most %d", lineBytes, alloc, maxAlloc)
			}
		})
	}
}

// countingResponse is an http.ResponseWriter (and Flusher) that keeps the
// first prefix bytes of the body, then counts the bytes 'x' and whether a
// newline came last.
type countingResponse struct {
	header   http.Header
	code     int
	prefix   int
	head     []byte
	x, other int
	newline  bool
}

func (w *countingResponse) Header() http.Header { return w.header }
func (w *countingResponse) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}
func (w *countingResponse) Flush() {}

func (w *countingResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	n := len(p)
	if k := min(w.prefix-len(w.head), len(p)); k > 0 {
		w.head = append(w.head, p[:k]...)
		p = p[k:]
	}
	for _, b := range p {
		switch {
		case w.newline:
			w.other++
		case b == 'x':
			w.x++
		case b == '\n':
			w.newline = true
		default:
			w.other++
		}
	}
	return n, nil
}
