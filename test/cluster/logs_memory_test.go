package cluster

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/test/internal/bintest"
)

// The line without a newline of TestKubeletPortServesALongLineInBoundedMemory:
// 200 MB, as in issue 12's report.
const (
	longLineBytes = 200_000_000
	// runningLineBytes is what the running instance's log holds of its
	// line: all but the piece (under 16 KiB, the CRI record size) that the
	// writer keeps until more comes.
	runningLineBytes = (longLineBytes - 1) / (16 << 10) * (16 << 10)
	// maxLogMemoryGrowth bounds how much the node's resident memory may
	// grow while it serves the line.
	maxLogMemoryGrowth = 32 << 20
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
    command: ["/bin/bash", "-c", "n=$(cat DIR/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > DIR/n; head -c BYTES /dev/zero | tr '\\0' x; [ $n = 1 ] && exit 1; trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
`

// TestKubeletPortServesALongLineInBoundedMemory: the node's kubelet port,
// reached through the API server as by kubectl logs, serves a container's
// 200 MB line without a newline — its last line to three clients at once,
// limitBytes, followed, the previous instance's with timestamps and since
// — while the node's resident memory grows by less than 32 MB each time.
//
// It does not run in parallel with the other tests: it measures the node's
// memory, and writes and reads 400 MB.
func TestKubeletPortServesALongLineInBoundedMemory(t *testing.T) {
	c := needControlPlane(t)
	// One 200 MB line in one file: rotation (10Mi by default) is not what
	// this measures.
	n := startNode(t, c, nodeName(t, "a"), "--container-log-max-size", "0")
	dir := t.TempDir()
	n.apply(t, strings.NewReplacer("DIR", dir, "BYTES", strconv.Itoa(longLineBytes)).Replace(longLinePod))
	c.waitPod(t, "default", "long-line", "the second instance running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 1 &&
			p.Status.ContainerStatuses[0].State.Running != nil
	})
	if err := bintest.WaitLogContent(filepath.Join(n.root, "process", "pods", "*", "logs", "app", "1.log"), runningLineBytes, waitTimeout); err != nil {
		t.Fatal(err)
	}

	get := func(opts v1.PodLogOptions, want bintest.LongLine) error {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		opts.Container = "app"
		body, err := c.client.CoreV1().Pods("default").GetLogs("long-line", &opts).Stream(ctx)
		if err != nil {
			return err
		}
		defer body.Close()
		return want.Check(body)
	}
	one, hour, limit := int64(1), int64(3600), int64(1_000_000)
	cases := []struct {
		name    string
		opts    v1.PodLogOptions
		clients int
		want    bintest.LongLine
	}{
		{"tail1_three_clients", v1.PodLogOptions{TailLines: &one}, 3, bintest.LongLine{X: runningLineBytes, Newline: true}},
		{"limitBytes", v1.PodLogOptions{LimitBytes: &limit}, 1, bintest.LongLine{X: limit}},
		// The response stays open: the line goes on.
		{"follow_tail1", v1.PodLogOptions{Follow: true, TailLines: &one}, 1, bintest.LongLine{X: runningLineBytes}},
		{"previous_timestamps_tail1", v1.PodLogOptions{Previous: true, Timestamps: true, TailLines: &one}, 1, bintest.LongLine{Timestamp: true, X: longLineBytes, Newline: true}},
		{"previous_since", v1.PodLogOptions{Previous: true, SinceSeconds: &hour}, 1, bintest.LongLine{X: longLineBytes, Newline: true}},
	}
	pid := n.cmd.Process.Pid
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			grew, err := bintest.PeakGrowth(pid, func() {
				errs := make(chan error, tc.clients)
				var wg sync.WaitGroup
				for range tc.clients {
					wg.Go(func() { errs <- get(tc.opts, tc.want) })
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
			t.Logf("the node's resident memory grew by %.1f MB (%v)", float64(grew)/1e6, time.Since(start).Round(time.Millisecond))
			if grew > maxLogMemoryGrowth {
				t.Errorf("the node's resident memory grew by %.1f MB, want at most %d MiB", float64(grew)/1e6, maxLogMemoryGrowth>>20)
			}
		})
	}
}
