package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
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
	// One 200 MB line in one file: rotation (10Mi by default) is not what
	// this measures.
	a := startAgent(t, "--container-log-max-size", "0")
	a.apply("long-line", writeManifest(t, dir, longLinePod, map[string]any{"Dir": dir, "Bytes": longLineBytes}))
	a.waitPod("long-line", "jsonpath={.status.containerStatuses[0].restartCount}=1", 2*lineTimeout)
	a.waitPod("long-line", "jsonpath={.status.containerStatuses[0].state.running.startedAt}", lineTimeout)
	if err := bintest.WaitLogContent(filepath.Join(a.dir, "root", "process", "pods", "*", "logs", "app", "1.log"), runningLineBytes, 2*lineTimeout); err != nil {
		t.Fatal(err)
	}

	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", a.socket)
		},
	}}
	t.Cleanup(hc.CloseIdleConnections)
	get := func(query string, want bintest.LongLine) error {
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
		return want.Check(resp.Body)
	}

	cases := []struct {
		name    string
		query   string
		clients int
		want    bintest.LongLine
	}{
		{"whole", "", 1, bintest.LongLine{X: runningLineBytes, Newline: true}},
		{"tail1_three_clients", "tailLines=1", 3, bintest.LongLine{X: runningLineBytes, Newline: true}},
		// The response stays open: the line goes on.
		{"follow_tail1", "follow=true&tailLines=1", 1, bintest.LongLine{X: runningLineBytes}},
		{"previous", "previous=true", 1, bintest.LongLine{X: longLineBytes, Newline: true}},
		{"previous_timestamps_tail1", "previous=true&timestamps=true&tailLines=1", 1, bintest.LongLine{Timestamp: true, X: longLineBytes, Newline: true}},
	}
	pid := a.cmd.Process.Pid
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			grew, err := bintest.PeakGrowth(pid, func() {
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
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("the agent's resident memory grew by %.1f MB", float64(grew)/1e6)
			if grew > maxLogMemoryGrowth {
				t.Errorf("the agent's resident memory grew by %.1f MB, want at most %d MiB", float64(grew)/1e6, maxLogMemoryGrowth>>20)
			}
		})
	}
}
