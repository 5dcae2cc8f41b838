package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// The line without a newline of TestLogsOfALongLineInBoundedMemory: 200 MB,
// as in issue 12's report, which saw one GET of it raise the agent from
// 177 MB to 1.2 GB and three concurrent tailLines=1 to 3.2 GB.
const (
	longLineBytes = 200_000_000
	// recordBytes is what one partial CRI record carries (16 KiB, in
	// podward's writer as in containerd's): of a line still being written,
	// the log holds all but the piece the writer keeps until more comes.
	recordBytes = 16 * 1024
	// runningLineBytes is what the log of the running instance holds of
	// its line.
	runningLineBytes = (longLineBytes - 1) / recordBytes * recordBytes
	// maxLogMemoryGrowth bounds how much the agent's resident memory may
	// grow while it serves the line.
	maxLogMemoryGrowth = 32 << 20
	// logReadTimeout bounds one log request: sending 200 MB over a unix
	// socket takes a second or two.
	logReadTimeout = 90 * time.Second
)

// longLinePod writes a 200 MB line without a newline; the first instance
// then exits (and is restarted), the second stays.
const longLinePod = `
apiVersion: v1
kind: Pod
metadata:
  name: long-line
spec:
  restartPolicy: Always
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c", "n=$(cat {{.Dir}}/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > {{.Dir}}/n; head -c {{.Bytes}} /dev/zero | tr '\\0' x; [ $n = 1 ] && exit 1; trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
`

// TestLogsOfALongLineInBoundedMemory: a container whose log holds one
// 200 MB line without a newline, served by the agent's API in every way a
// client can ask for it — whole, its last line (three clients at once),
// followed, the previous instance's, with timestamps — costs the agent
// less than 32 MB of resident memory each time: the reader streams the
// line's partial records, it never holds the line.
//
// It does not run in parallel with the other tests: it measures the
// agent's memory, and writes and reads 400 MB.
func TestLogsOfALongLineInBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	a := startAgent(t)
	a.apply("long-line", writeManifest(t, dir, longLinePod, map[string]any{"Dir": dir, "Bytes": longLineBytes}))
	a.waitPod("long-line", "jsonpath={.status.containerStatuses[0].restartCount}=1", 2*lineTimeout)
	a.waitPod("long-line", "jsonpath={.status.containerStatuses[0].state.running.startedAt}", lineTimeout)
	waitLogContent(t, filepath.Join(a.dir, "root", "process", "pods", "*", "logs", "app", "1.log"), runningLineBytes)

	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", a.socket)
		},
	}}
	t.Cleanup(hc.CloseIdleConnections)
	get := func(query string, want lineCheck) error {
		ctx, cancel := context.WithTimeout(context.Background(), logReadTimeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, "GET", "http://podward/api/v1/namespaces/default/pods/long-line/log?container=app&"+query, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			return fmt.Errorf("%s: %s", resp.Status, body)
		}
		return want.check(resp.Body)
	}

	cases := []struct {
		name    string
		query   string
		clients int
		want    lineCheck
	}{
		{"whole", "", 1, lineCheck{x: runningLineBytes, newline: true}},
		{"tail1_three_clients", "tailLines=1", 3, lineCheck{x: runningLineBytes, newline: true}},
		// The response stays open: the line goes on.
		{"follow_tail1", "follow=true&tailLines=1", 1, lineCheck{x: runningLineBytes}},
		{"previous", "previous=true", 1, lineCheck{x: longLineBytes, newline: true}},
		{"previous_timestamps_tail1", "previous=true&timestamps=true&tailLines=1", 1, lineCheck{timestamp: true, x: longLineBytes, newline: true}},
	}
	pid := a.cmd.Process.Pid
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			grew := measureGrowth(t, pid, func() {
				errs := make(chan error, tc.clients)
				var wg sync.WaitGroup
				for range tc.clients {
					wg.Go(func() { errs <- get(tc.query, tc.want) })
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					if err != nil {
						t.Error(err)
					}
				}
			})
			t.Logf("the agent's resident memory grew by %.1f MB", float64(grew)/1e6)
			if grew > maxLogMemoryGrowth {
				t.Errorf("the agent's resident memory grew by %.1f MB, want at most %d MiB", float64(grew)/1e6, maxLogMemoryGrowth>>20)
			}
		})
	}
}

// measureGrowth runs fn and returns how far the resident memory of pid
// rose above what it was before: its peak during fn (VmHWM, reset before
// fn) less its resident memory before.
func measureGrowth(t *testing.T, pid int, fn func()) int64 {
	t.Helper()
	if err := bintest.ResetPeakMemory(pid); err != nil {
		t.Fatalf("reset the agent's peak memory: %v", err)
	}
	before, _, err := bintest.Memory(pid)
	if err != nil {
		t.Fatal(err)
	}
	fn()
	_, peak, err := bintest.Memory(pid)
	if err != nil {
		t.Fatal(err)
	}
	return peak - before
}

// lineCheck is what a log response must be: one line of x bytes 'x',
// prefixed with a timestamp and a space when timestamp is set, ended by a
// newline and the end of the response when newline is set. Without
// newline, the response stays open: check reads the x bytes and returns.
type lineCheck struct {
	timestamp bool
	x         int64
	newline   bool
}

func (c lineCheck) check(body io.Reader) error {
	br := bufio.NewReaderSize(body, 64<<10)
	if c.timestamp {
		ts, err := br.ReadString(' ')
		if err != nil {
			return fmt.Errorf("read the timestamp: %w", err)
		}
		if _, err := time.Parse(time.RFC3339Nano, strings.TrimSuffix(ts, " ")); err != nil {
			return fmt.Errorf("timestamp %q: %w", ts, err)
		}
	}
	var n int64
	buf := make([]byte, 64<<10)
	for n < c.x {
		m, err := br.Read(buf[:min(int64(len(buf)), c.x-n)])
		if i := bytes.IndexFunc(buf[:m], func(r rune) bool { return r != 'x' }); i >= 0 {
			return fmt.Errorf("byte %d of the line is %q, want x", n+int64(i), buf[i])
		}
		n += int64(m)
		if err != nil {
			return fmt.Errorf("read %d bytes of the line, want %d: %w", n, c.x, err)
		}
	}
	if !c.newline {
		return nil
	}
	rest, err := io.ReadAll(io.LimitReader(br, 64))
	if err != nil || string(rest) != "\n" {
		return fmt.Errorf("after the %d bytes of the line: %q (%v), want a newline and the end", n, rest, err)
	}
	return nil
}

// waitLogContent waits until the one CRI log that pattern (a glob)
// matches holds want bytes of content: the runtime's shim copies what the
// container wrote into the log after it was written.
func waitLogContent(t *testing.T, pattern string, want int64) {
	t.Helper()
	deadline := time.Now().Add(2 * lineTimeout)
	for {
		var n int64
		matches, err := filepath.Glob(pattern)
		if err == nil && len(matches) == 1 {
			n, err = logContentBytes(matches[0])
		}
		if err == nil && n == want {
			return
		}
		if time.Now().After(deadline) || n > want {
			t.Fatalf("log %q holds %d bytes of content (%v), want %d", matches, n, err, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// logContentBytes adds up the content of the complete records of a CRI
// log ("<time> <stream> <tag> <content>\n"), without holding a record.
func logContentBytes(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 64<<10)
	var n, record int64 // record: content of the record being read
	spaces := 0         // of the record's header seen so far
	for {
		chunk, err := br.ReadSlice('\n')
		ended := len(chunk) > 0 && chunk[len(chunk)-1] == '\n'
		if ended {
			chunk = chunk[:len(chunk)-1]
		}
		for spaces < 3 && len(chunk) > 0 {
			i := bytes.IndexByte(chunk, ' ')
			if i < 0 {
				chunk = nil
				break
			}
			chunk = chunk[i+1:]
			spaces++
		}
		record += int64(len(chunk))
		if ended {
			n += record
			record, spaces = 0, 0
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF):
			return n, nil
		default:
			return n, err
		}
	}
}
