package e2e

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// metricsPod has a sidecar, a regular container and a defer container that
// runs about half a second; the containers exit on SIGTERM.
const metricsPod = `
apiVersion: v1
kind: Pod
metadata:
  name: metrics
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "flush", "image": "bash", "command": ["{{.Bash}}", "-c", "echo flushing; sleep 0.5; echo flushed"]}]
spec:
  terminationGracePeriodSeconds: 60
  initContainers:
  - name: proxy
    image: bash
    restartPolicy: Always
    command: ["{{.Bash}}", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
`

// httpGet GETs url through hc within the CLI's timeout and returns the
// status code and the body.
func httpGet(t *testing.T, hc *http.Client, url string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), cliTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// scrapeMetrics GETs url through hc and parses the Prometheus text format.
func scrapeMetrics(t *testing.T, hc *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := httpGet(t, hc, url)
	if code != http.StatusOK {
		t.Fatalf("GET %s: %d %.4096s", url, code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse %s: %v", url, err)
	}
	return fams
}

// metricValue is the value of the series of name whose labels include
// labels (name, value, ...): a counter's or gauge's value, a histogram's
// sample count; 0 when there is no such series yet.
func metricValue(fams map[string]*dto.MetricFamily, name string, labels ...string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	var sum float64
	for _, m := range f.Metric {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
				match = false
			}
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			sum += m.Counter.GetValue()
		case m.Gauge != nil:
			sum += m.Gauge.GetValue()
		case m.Histogram != nil:
			sum += float64(m.Histogram.GetSampleCount())
		}
	}
	return sum
}

// socketClient is an HTTP client of the agent's socket.
func (a *agent) socketClient(t *testing.T) *http.Client {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", a.socket)
		},
	}}
	t.Cleanup(hc.CloseIdleConnections)
	return hc
}

// TestMetricsMoveWithAPodsLife: `podward serve` serves /metrics on its
// socket in the Prometheus text format; applying a pod with a sidecar and
// a defer container, then deleting it, moves the kubelet's metrics (starts
// by container type, the pod start, the worker's syncs, the running pods
// and containers) and podward's (the defer container's run, the
// termination that ended early with most of its grace period left, the
// checkpoint writes, the store's size).
func TestMetricsMoveWithAPodsLife(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	hc := a.socketClient(t)
	const url = "http://podward/metrics"
	before := scrapeMetrics(t, hc, url)
	for _, name := range []string{"kubelet_running_pods", "kubelet_started_containers_total", "podward_store_size_bytes", "go_goroutines"} {
		if before[name] == nil {
			t.Errorf("%s is not served before any pod", name)
		}
	}
	if v := metricValue(before, "kubelet_running_pods"); v != 0 {
		t.Errorf("kubelet_running_pods before any pod = %g", v)
	}

	a.apply("metrics", writeManifest(t, t.TempDir(), metricsPod, map[string]string{"Bash": "/bin/bash"}))
	a.waitPod("metrics", "condition=Ready", lineTimeout)
	running := scrapeMetrics(t, hc, url)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kubelet_running_pods", nil, 1},
		{"kubelet_running_containers", []string{"container_state", "running"}, 2},
		{"kubelet_started_containers_total", []string{"container_type", "init_container"}, 1},
		{"kubelet_started_containers_total", []string{"container_type", "container"}, 1},
		{"kubelet_started_containers_total", []string{"container_type", "defer_container"}, 0},
		{"kubelet_pod_start_duration_seconds", nil, 1},
		{"kubelet_pod_worker_start_duration_seconds", nil, 1},
	} {
		if got := metricValue(running, c.name, c.labels...); got != c.want {
			t.Errorf("running: %s%v = %g, want %g", c.name, c.labels, got, c.want)
		}
	}
	if n := metricValue(running, "kubelet_started_containers_errors_total"); n != 0 {
		t.Errorf("running: %g failed starts", n)
	}

	if _, err := a.cliWithin(lineTimeout, "delete", "pod", "metrics", "--wait=true", "--timeout", lineTimeout.String()); err != nil {
		t.Fatal(err)
	}
	gone := scrapeMetrics(t, hc, url)
	for _, c := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"kubelet_running_pods", nil, 0},
		{"kubelet_running_containers", []string{"container_state", "running"}, 0},
		{"kubelet_started_containers_total", []string{"container_type", "defer_container"}, 1},
		{"podward_defer_container_duration_seconds", []string{"outcome", "completed"}, 1},
		{"podward_pod_terminations_total", []string{"reason", "Deleted", "outcome", "ended_early"}, 1},
		{"podward_pod_terminations_total", []string{"outcome", "killed_at_deadline"}, 0},
		{"podward_pod_termination_grace_left_seconds", nil, 1},
		// The sync that started the pod and its checkpoints are timed at
		// the end of the worker's step, which may follow the Ready the
		// first scrape waited for: they are checked once the pod is gone.
		{"kubelet_pod_worker_duration_seconds", []string{"operation_type", "create"}, 1},
	} {
		if got := metricValue(gone, c.name, c.labels...); got != c.want {
			t.Errorf("after the delete: %s%v = %g, want %g", c.name, c.labels, got, c.want)
		}
	}
	if n := metricValue(gone, "podward_checkpoint_write_duration_seconds"); n < 3 {
		t.Errorf("after the delete: %g checkpoint writes timed, want one per start at least", n)
	}
	if n := metricValue(gone, "kubelet_pod_worker_duration_seconds", "operation_type", "kill"); n < 1 {
		t.Errorf("after the delete: no kill sync timed")
	}
	// The defer container ran about half a second; the pod ended with most
	// of its 60 s left.
	h := series(gone, "podward_defer_container_duration_seconds", "outcome", "completed").GetHistogram()
	if s := h.GetSampleSum(); s < 0.4 || s > 20 {
		t.Errorf("defer container ran %gs by the histogram, want about 0.5 s", s)
	}
	if left := series(gone, "podward_pod_termination_grace_left_seconds").GetHistogram().GetSampleSum(); left < 30 || left > 60 {
		t.Errorf("grace left %gs, want most of 60 s", left)
	}
	if size := metricValue(gone, "podward_store_size_bytes"); size <= 0 {
		t.Errorf("podward_store_size_bytes = %g", size)
	}
}

// series is the first series of name whose labels include labels.
func series(fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	f := fams[name]
	if f == nil {
		return &dto.Metric{}
	}
	for _, m := range f.Metric {
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
				match = false
			}
		}
		if match {
			return m
		}
	}
	return &dto.Metric{}
}

// TestProfilingOnlyWithPprof: `--pprof` serves net/http/pprof on the socket
// and on --metrics-bind-address, which serves /metrics too; without it the
// profiles are a 404 on the socket.
func TestProfilingOnlyWithPprof(t *testing.T) {
	t.Parallel()
	port := freePort(t)
	on := startAgent(t, "--pprof", "--metrics-bind-address", fmt.Sprintf("127.0.0.1:%d", port))
	off := startAgent(t)
	tcp := &http.Client{Timeout: cliTimeout}
	tcpURL := fmt.Sprintf("http://127.0.0.1:%d", port)
	for _, c := range []struct {
		name string
		hc   *http.Client
		base string
	}{{"socket", on.socketClient(t), "http://podward"}, {"metrics address", tcp, tcpURL}} {
		if code, body := httpGet(t, c.hc, c.base+"/debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile:") {
			t.Errorf("%s with --pprof: /debug/pprof/goroutine: %d %.100q", c.name, code, body)
		}
		if code, body := httpGet(t, c.hc, c.base+"/debug/pprof/heap?debug=1"); code != 200 || !strings.Contains(body, "heap profile:") {
			t.Errorf("%s with --pprof: /debug/pprof/heap: %d %.100q", c.name, code, body)
		}
	}
	if fams := scrapeMetrics(t, tcp, tcpURL+"/metrics"); fams["kubelet_running_pods"] == nil {
		t.Error("--metrics-bind-address: /metrics has no kubelet_running_pods")
	}
	offClient := off.socketClient(t)
	if code, _ := httpGet(t, offClient, "http://podward/debug/pprof/goroutine?debug=1"); code != http.StatusNotFound {
		t.Errorf("without --pprof: /debug/pprof/goroutine: %d, want 404", code)
	}
	if code, _ := httpGet(t, offClient, "http://podward/metrics"); code != http.StatusOK {
		t.Errorf("without --pprof: /metrics: %d, want 200", code)
	}
}
