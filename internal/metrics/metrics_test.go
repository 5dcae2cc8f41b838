package metrics

import (
	"errors"
	"io"
	"math"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	podmodel "github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/podworker"
	"github.com/podward/podward/internal/shutdown"
)

// scrape serves m's handler once and parses the text format, as
// Prometheus would.
func scrape(t *testing.T, m *Metrics) map[string]*dto.MetricFamily {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("GET /metrics: %d %s", rec.Code, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("Content-Type %q, want the text format", ct)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.Reader(rec.Body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return fams
}

// series finds the series of family name with labels (name=value pairs).
func series(t *testing.T, fams map[string]*dto.MetricFamily, name string, labels ...string) *dto.Metric {
	t.Helper()
	f := fams[name]
	if f == nil {
		t.Fatalf("no metric %s", name)
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			if !slices.ContainsFunc(m.Label, func(l *dto.LabelPair) bool { return l.GetName() == labels[i] && l.GetValue() == labels[i+1] }) {
				continue next
			}
		}
		return m
	}
	t.Fatalf("no series %s%v", name, labels)
	return nil
}

// TestKubeletMetricsShape: the kubelet's metrics have its names, types,
// labels and buckets (kubelet 1.37, pkg/kubelet/metrics/metrics.go), and
// exist from the start.
func TestKubeletMetricsShape(t *testing.T) {
	m := New()
	at := time.Unix(1700000000, 0)
	m.AddSources(Sources{Pods: census{}, Shutdown: fixedShutdown{BeganAt: &at, EndedAt: &at}})
	// Histograms without labels show only once observed.
	m.WorkerStarted(0)
	m.PodRunning(0)
	fams := scrape(t, m)
	tests := []struct {
		name    string
		typ     dto.MetricType
		labels  []string
		buckets []float64
	}{
		{"kubelet_pod_start_duration_seconds", dto.MetricType_HISTOGRAM, nil, podStartupBuckets},
		{"kubelet_pod_worker_start_duration_seconds", dto.MetricType_HISTOGRAM, nil, defBuckets},
		{"kubelet_pod_worker_duration_seconds", dto.MetricType_HISTOGRAM, []string{"operation_type"}, defBuckets},
		{"kubelet_started_containers_total", dto.MetricType_COUNTER, []string{"container_type"}, nil},
		{"kubelet_restarted_pods_total", dto.MetricType_COUNTER, []string{"static"}, nil},
		{"kubelet_running_pods", dto.MetricType_GAUGE, nil, nil},
		{"kubelet_running_containers", dto.MetricType_GAUGE, []string{"container_state"}, nil},
		{"kubelet_graceful_shutdown_start_time_seconds", dto.MetricType_GAUGE, nil, nil},
		{"kubelet_graceful_shutdown_end_time_seconds", dto.MetricType_GAUGE, nil, nil},
	}
	for _, tc := range tests {
		f := fams[tc.name]
		if f == nil {
			t.Errorf("%s: not served", tc.name)
			continue
		}
		if f.GetType() != tc.typ {
			t.Errorf("%s: type %v, want %v", tc.name, f.GetType(), tc.typ)
		}
		for _, s := range f.Metric {
			var names []string
			for _, l := range s.Label {
				names = append(names, l.GetName())
			}
			if !slices.Equal(names, tc.labels) {
				t.Errorf("%s: labels %v, want %v", tc.name, names, tc.labels)
			}
			if tc.buckets != nil {
				var got []float64
				for _, b := range s.GetHistogram().GetBucket() {
					if !math.IsInf(b.GetUpperBound(), 1) {
						got = append(got, b.GetUpperBound())
					}
				}
				if !slices.Equal(got, tc.buckets) {
					t.Errorf("%s: buckets %v, want %v", tc.name, got, tc.buckets)
				}
			}
		}
	}
	// The error counter's labels, once it has a series.
	m.ContainerStartFailed(podmodel.RoleMain, podworker.StartErrorRunContainer)
	s := series(t, scrape(t, m), "kubelet_started_containers_errors_total", "container_type", "container", "code", "RunContainerError")
	if len(s.Label) != 2 {
		t.Errorf("kubelet_started_containers_errors_total labels %v, want container_type and code", s.Label)
	}
}

type census podworker.Census

func (c census) Census() podworker.Census { return podworker.Census(c) }

type fixedShutdown shutdown.Status

func (s fixedShutdown) Status() shutdown.Status { return shutdown.Status(s) }

type sized int64

func (s sized) Size() (int64, error) { return int64(s), nil }

// TestRecordingMovesTheSeries: each recording method moves its own series,
// by its labels.
func TestRecordingMovesTheSeries(t *testing.T) {
	m := New()
	began := time.Unix(1700000000, 0)
	ended := began.Add(30 * time.Second)
	m.AddSources(Sources{
		Pods:     census{Pods: 3, Running: 7, Exited: 2},
		Store:    sized(65536),
		Shutdown: fixedShutdown{BeganAt: &began, EndedAt: &ended},
	})
	m.WorkerStarted(20 * time.Millisecond)
	m.PodRunning(1500 * time.Millisecond)
	m.Synced(podworker.SyncCreate, 10*time.Millisecond)
	m.Synced(podworker.SyncKill, 30*time.Millisecond)
	m.Synced(podworker.SyncKill, 30*time.Millisecond)
	m.ContainerStarted(podmodel.RoleInit)
	m.ContainerStarted(podmodel.RoleSidecar)
	m.ContainerStarted(podmodel.RoleMain)
	m.ContainerStarted(podmodel.RoleDefer)
	m.ContainerStartFailed(podmodel.RoleDefer, podworker.StartErrorImagePull)
	m.DeferExited(podworker.DeferCompleted, 2*time.Second)
	m.DeferExited(podworker.DeferKilled, 62*time.Second)
	m.PodTerminated(podworker.TerminationDeleted, podworker.EndedEarly, 58*time.Second)
	m.PodTerminated(podworker.TerminationNodeShutdown, podworker.KilledAtDeadline, 0)
	m.CheckpointSaved(2*time.Millisecond, nil)
	m.CheckpointSaved(3*time.Millisecond, errors.New("disk full"))
	m.PodRestarted(true)

	fams := scrape(t, m)
	hist := func(name string, labels ...string) (uint64, float64) {
		h := series(t, fams, name, labels...).GetHistogram()
		return h.GetSampleCount(), h.GetSampleSum()
	}
	value := func(name string, labels ...string) float64 {
		s := series(t, fams, name, labels...)
		if c := s.GetCounter(); c != nil {
			return c.GetValue()
		}
		return s.GetGauge().GetValue()
	}
	type histWant struct {
		name   string
		labels []string
		count  uint64
		sum    float64
	}
	for _, w := range []histWant{
		{"kubelet_pod_worker_start_duration_seconds", nil, 1, 0.02},
		{"kubelet_pod_start_duration_seconds", nil, 1, 1.5},
		{"kubelet_pod_worker_duration_seconds", []string{"operation_type", "create"}, 1, 0.01},
		{"kubelet_pod_worker_duration_seconds", []string{"operation_type", "kill"}, 2, 0.06},
		{"kubelet_pod_worker_duration_seconds", []string{"operation_type", "update"}, 0, 0},
		{"podward_defer_container_duration_seconds", []string{"outcome", "completed"}, 1, 2},
		{"podward_defer_container_duration_seconds", []string{"outcome", "killed"}, 1, 62},
		{"podward_defer_container_duration_seconds", []string{"outcome", "failed"}, 0, 0},
		{"podward_pod_termination_grace_left_seconds", nil, 2, 58},
		{"podward_checkpoint_write_duration_seconds", nil, 2, 0.005},
	} {
		count, sum := hist(w.name, w.labels...)
		if count != w.count || !near(sum, w.sum) {
			t.Errorf("%s%v: count %d sum %g, want %d %g", w.name, w.labels, count, sum, w.count, w.sum)
		}
	}
	type valueWant struct {
		name   string
		labels []string
		want   float64
	}
	for _, w := range []valueWant{
		{"kubelet_started_containers_total", []string{"container_type", "init_container"}, 2},
		{"kubelet_started_containers_total", []string{"container_type", "container"}, 1},
		{"kubelet_started_containers_total", []string{"container_type", "defer_container"}, 1},
		{"kubelet_started_containers_errors_total", []string{"container_type", "defer_container", "code", "ErrImagePull"}, 1},
		{"kubelet_restarted_pods_total", []string{"static", "true"}, 1},
		{"kubelet_restarted_pods_total", []string{"static", "false"}, 0},
		{"podward_pod_terminations_total", []string{"reason", "Deleted", "outcome", "ended_early"}, 1},
		{"podward_pod_terminations_total", []string{"reason", "NodeShutdown", "outcome", "killed_at_deadline"}, 1},
		{"podward_pod_terminations_total", []string{"reason", "Deleted", "outcome", "killed_at_deadline"}, 0},
		{"podward_checkpoint_write_errors_total", nil, 1},
		{"kubelet_running_pods", nil, 3},
		{"kubelet_running_containers", []string{"container_state", "running"}, 7},
		{"kubelet_running_containers", []string{"container_state", "exited"}, 2},
		{"podward_store_size_bytes", nil, 65536},
		{"kubelet_graceful_shutdown_start_time_seconds", nil, 1700000000},
		{"kubelet_graceful_shutdown_end_time_seconds", nil, 1700000030},
	} {
		if got := value(w.name, w.labels...); !near(got, w.want) {
			t.Errorf("%s%v = %g, want %g", w.name, w.labels, got, w.want)
		}
	}
	if fams["go_goroutines"] == nil || fams["process_resident_memory_bytes"] == nil {
		t.Error("the Go runtime's and the process's metrics are not served")
	}
}

// TestNoShutdownNoShutdownTimes: before any node shutdown, its gauges are
// absent, as the kubelet sets them only when one begins.
func TestNoShutdownNoShutdownTimes(t *testing.T) {
	m := New()
	m.AddSources(Sources{Shutdown: fixedShutdown{}})
	fams := scrape(t, m)
	if fams["kubelet_graceful_shutdown_start_time_seconds"] != nil || fams["kubelet_graceful_shutdown_end_time_seconds"] != nil {
		t.Error("shutdown times served before any shutdown")
	}
}

// TestFreshRegistries: two Metrics never share a series (no global
// registry).
func TestFreshRegistries(t *testing.T) {
	a, b := New(), New()
	a.ContainerStarted(podmodel.RoleMain)
	if got := series(t, scrape(t, b), "kubelet_started_containers_total", "container_type", "container").GetCounter().GetValue(); got != 0 {
		t.Errorf("a start on one Metrics shows on another: %g", got)
	}
}

func near(a, b float64) bool { d := a - b; return d < 1e-9 && d > -1e-9 }

// BenchmarkRecording: recording on the start path allocates nothing.
func BenchmarkRecording(b *testing.B) {
	m := New()
	b.ReportAllocs()
	for b.Loop() {
		m.ContainerStarted(podmodel.RoleMain)
		m.Synced(podworker.SyncOther, time.Millisecond)
		m.CheckpointSaved(time.Millisecond, nil)
	}
}
