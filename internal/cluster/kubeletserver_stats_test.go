package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/podward/podward/internal/runtime"
)

// fakeStats is one pod with one container whose counters grow at each
// read: a second of CPU and a MiB of memory.
type fakeStats struct {
	mu    sync.Mutex
	reads uint64
}

var statsT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func (f *fakeStats) PodStats(context.Context) ([]runtime.PodStats, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	at := statsT0.Add(time.Duration(f.reads) * 10 * time.Second)
	cpu := runtime.CPUUsage{Time: at, UsageCoreNanoSeconds: f.reads * 1e9}
	mem := runtime.MemoryUsage{Time: at, UsageBytes: f.reads<<20 + 4096, WorkingSetBytes: f.reads << 20, RSSBytes: 1 << 19}
	return []runtime.PodStats{{
		UID: "uid-1", Namespace: "default", Name: "web",
		CPU: &cpu, Memory: &mem,
		Containers: []runtime.ContainerStats{{Name: "app", ID: "c1", StartedAt: statsT0, CPU: cpu, Memory: mem}},
	}}, nil
}

// TestKubeletServerStats: /stats/summary and /metrics/resource serve the
// runtime's counters to a user allowed nodes/stats and nodes/metrics, as
// the kubelet's (kubelet 1.37, pkg/kubelet/server/auth.go: /stats needs
// nodes/stats, /metrics/resource nodes/metrics); nodes/proxy is not
// enough.
func TestKubeletServerStats(t *testing.T) {
	f, api, _ := webhookServer(t, func(c *KubeletServerConfig) { c.Stats = &fakeStats{} })
	api.allow("metrics-server", "stats")
	api.allow("metrics-server", "metrics")
	api.allow("kube-apiserver-kubelet-client", "proxy")
	ms := f.client(t, f.ca.clientCert(t, "metrics-server"))

	code, body := kubeletGet(t, f.apiServer(t), f.url+"/stats/summary")
	if want := "Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[stats])\n"; code != http.StatusForbidden || body != want {
		t.Errorf("/stats/summary with nodes/proxy: %d %q, want 403 %q", code, body, want)
	}
	code, body = kubeletGet(t, ms, f.url+"/stats/summary")
	if code != http.StatusOK {
		t.Fatalf("/stats/summary: %d %s", code, body)
	}
	var sum statsv1alpha1.Summary
	if err := json.Unmarshal([]byte(body), &sum); err != nil {
		t.Fatalf("/stats/summary is not a Summary: %v\n%s", err, body)
	}
	n := sum.Node
	if n.NodeName != "worker-1" || n.CPU == nil || n.CPU.UsageCoreNanoSeconds == nil || *n.CPU.UsageCoreNanoSeconds == 0 ||
		n.Memory == nil || n.Memory.WorkingSetBytes == nil || *n.Memory.WorkingSetBytes == 0 || n.StartTime.IsZero() {
		t.Errorf("node stats %+v: want the node's name, its CPU and memory from /proc, its boot time", n)
	}
	if len(sum.Pods) != 1 {
		t.Fatalf("pods %+v, want web", sum.Pods)
	}
	p := sum.Pods[0]
	if p.PodRef != (statsv1alpha1.PodReference{Name: "web", Namespace: "default", UID: "uid-1"}) || !p.StartTime.Time.Equal(statsT0) ||
		p.CPU == nil || *p.CPU.UsageCoreNanoSeconds != 1e9 || *p.Memory.WorkingSetBytes != 1<<20 {
		t.Errorf("pod stats %+v", p)
	}
	if len(p.Containers) != 1 || p.Containers[0].Name != "app" || *p.Containers[0].Memory.UsageBytes != 1<<20+4096 ||
		*p.Containers[0].Memory.RSSBytes != 1<<19 || !p.Containers[0].CPU.Time.Time.Equal(statsT0.Add(10*time.Second)) {
		t.Errorf("container stats %+v", p.Containers)
	}

	code, body = kubeletGet(t, f.apiServer(t), f.url+"/metrics/resource")
	if code != http.StatusForbidden {
		t.Errorf("/metrics/resource with nodes/proxy: %d, want 403", code)
	}
	first := scrapeResource(t, ms, f.url)
	second := scrapeResource(t, ms, f.url)
	for _, c := range []struct {
		family string
		labels map[string]string
		first  float64
		moves  bool
	}{
		{"container_cpu_usage_seconds_total", map[string]string{"container": "app", "namespace": "default", "pod": "web"}, 2, true},
		{"container_memory_working_set_bytes", map[string]string{"container": "app", "namespace": "default", "pod": "web"}, 2 << 20, true},
		{"container_start_time_seconds", map[string]string{"container": "app", "namespace": "default", "pod": "web"}, float64(statsT0.Unix()), false},
		{"pod_cpu_usage_seconds_total", map[string]string{"namespace": "default", "pod": "web"}, 2, true},
		{"pod_memory_working_set_bytes", map[string]string{"namespace": "default", "pod": "web"}, 2 << 20, true},
		{"resource_scrape_error", nil, 0, false},
	} {
		v1, ts := sampleOf(t, first, c.family, c.labels)
		v2, _ := sampleOf(t, second, c.family, c.labels)
		if v1 != c.first || (v2 > v1) != c.moves {
			t.Errorf("%s%v = %v then %v; want %v first, moving: %v", c.family, c.labels, v1, v2, c.first, c.moves)
		}
		if c.family == "container_cpu_usage_seconds_total" && ts != statsT0.Add(20*time.Second).UnixMilli() {
			t.Errorf("%s timestamp %d, want the read's time in ms", c.family, ts)
		}
	}
	for _, fam := range []string{"node_cpu_usage_seconds_total", "node_memory_working_set_bytes"} {
		if v, _ := sampleOf(t, first, fam, nil); v <= 0 {
			t.Errorf("%s = %v, want the node's usage (metrics-server drops a node without both)", fam, v)
		}
	}
	if first["container_cpu_usage_seconds_total"].GetType() != dto.MetricType_COUNTER || first["container_memory_working_set_bytes"].GetType() != dto.MetricType_GAUGE {
		t.Error("the CPU counters must be counters, the working sets gauges")
	}
}

// TestResourceMetricsShape: /metrics/resource has the kubelet 1.37's
// families (pkg/kubelet/metrics/collectors/resource_metrics.go, gathered
// by its registry): resource_scrape_error and not scrape_error, which
// was deprecated in 1.29 and is hidden since; container_start_time_seconds
// without a timestamp; no family without samples; each help text with its
// stability level.
func TestResourceMetricsShape(t *testing.T) {
	machine := machineUsage{
		cpu:    runtime.CPUUsage{Time: statsT0, UsageCoreNanoSeconds: 5e9},
		memory: runtime.MemoryUsage{Time: statsT0, WorkingSetBytes: 1 << 30},
	}
	pod := runtime.PodStats{Namespace: "default", Name: "web", Containers: []runtime.ContainerStats{{
		Name: "app", StartedAt: statsT0.Add(-time.Minute),
		CPU:    runtime.CPUUsage{Time: statsT0, UsageCoreNanoSeconds: 1e9},
		Memory: runtime.MemoryUsage{Time: statsT0, WorkingSetBytes: 1 << 20},
	}}}
	ms := strconv.FormatInt(statsT0.UnixMilli(), 10)
	for _, tc := range []struct {
		name        string
		haveMachine bool
		pods        []runtime.PodStats
		scrapeErr   bool
		want        []string // the sample lines, values as Prometheus' text encoder writes them
	}{
		{"no pods", true, nil, false, []string{
			"node_cpu_usage_seconds_total 5 " + ms,
			"node_memory_working_set_bytes 1.073741824e+09 " + ms,
			"resource_scrape_error 0",
		}},
		{"a pod", true, []runtime.PodStats{pod}, false, []string{
			`container_cpu_usage_seconds_total{container="app",namespace="default",pod="web"} 1 ` + ms,
			`container_memory_working_set_bytes{container="app",namespace="default",pod="web"} 1.048576e+06 ` + ms,
			`container_start_time_seconds{container="app",namespace="default",pod="web"} ` + strconv.FormatFloat(float64(statsT0.Add(-time.Minute).Unix()), 'g', -1, 64),
			"node_cpu_usage_seconds_total 5 " + ms,
			"node_memory_working_set_bytes 1.073741824e+09 " + ms,
			"resource_scrape_error 0",
		}},
		{"no usage", false, nil, true, []string{"resource_scrape_error 1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := resourceMetricsText(machine, tc.haveMachine, tc.pods, tc.scrapeErr)
			var samples []string
			families := map[string]bool{}
			for _, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
				if help, ok := strings.CutPrefix(line, "# HELP "); ok {
					name, text, _ := strings.Cut(help, " ")
					families[name] = true
					if !strings.HasPrefix(text, "[STABLE] ") {
						t.Errorf("help of %s: %q, want the kubelet's stability level", name, text)
					}
					continue
				}
				if !strings.HasPrefix(line, "#") {
					samples = append(samples, line)
					name, _, _ := strings.Cut(line, "{")
					name, _, _ = strings.Cut(name, " ")
					if !families[name] {
						t.Errorf("sample %q before its family's help", line)
					}
					delete(families, name)
				}
			}
			if !slices.Equal(samples, tc.want) {
				t.Errorf("samples:\n%s\nwant:\n%s", strings.Join(samples, "\n"), strings.Join(tc.want, "\n"))
			}
			if len(families) > 0 {
				t.Errorf("families without samples: %v\n%s", families, text)
			}
		})
	}
}

// scrapeResource reads /metrics/resource and parses it as the Prometheus
// text format that metrics-server's decoder reads.
func scrapeResource(t *testing.T, c *http.Client, url string) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := kubeletGet(t, c, url+"/metrics/resource")
	if code != http.StatusOK {
		t.Fatalf("/metrics/resource: %d %s", code, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics/resource does not parse: %v\n%s", err, body)
	}
	return fams
}

// sampleOf is the value and timestamp (ms) of the sample of family with
// exactly labels.
func sampleOf(t *testing.T, fams map[string]*dto.MetricFamily, family string, labels map[string]string) (float64, int64) {
	t.Helper()
	fam, ok := fams[family]
	if !ok {
		t.Fatalf("no %s", family)
	}
	for _, m := range fam.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(labels) {
			continue
		}
		match := true
		for k, v := range labels {
			match = match && got[k] == v
		}
		if !match {
			continue
		}
		v := m.GetGauge().GetValue()
		if m.Counter != nil {
			v = m.GetCounter().GetValue()
		}
		if m.Untyped != nil {
			v = m.GetUntyped().GetValue()
		}
		return v, m.GetTimestampMs()
	}
	t.Fatalf("no %s%v in %v", family, labels, fam)
	return 0, 0
}

func TestParseMachineUsage(t *testing.T) {
	stat := "cpu  100 20 30 1000 50 5 6 7 0 0\ncpu0 50 10 15 500 25 2 3 3 0 0\nbtime 1764547200\n"
	meminfo := "MemTotal:       1000 kB\nMemFree:         200 kB\nMemAvailable:    600 kB\nInactive(file):  300 kB\nAnonPages:       250 kB\n"
	u, err := parseMachineUsage([]byte(stat), []byte(meminfo), statsT0)
	if err != nil {
		t.Fatal(err)
	}
	// busy jiffies: user 100 + nice 20 + system 30 + irq 5 + softirq 6 + steal 7 = 168, 10 ms each
	if u.cpu.UsageCoreNanoSeconds != 168*10_000_000 || !u.cpu.Time.Equal(statsT0) || u.bootTime.Unix() != 1764547200 {
		t.Errorf("cpu %+v boot %v", u.cpu, u.bootTime)
	}
	if u.memory.UsageBytes != 800<<10 || u.memory.WorkingSetBytes != 500<<10 || u.memory.RSSBytes != 250<<10 || u.availableBytes != 600<<10 {
		t.Errorf("memory %+v available %d", u.memory, u.availableBytes)
	}
	if _, err := parseMachineUsage([]byte("intr 1\n"), []byte(meminfo), statsT0); err == nil {
		t.Error("a /proc/stat without a cpu line parsed")
	}
}
