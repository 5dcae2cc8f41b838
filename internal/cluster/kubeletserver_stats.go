package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/runtime"
)

// The kubelet's resource usage endpoints, as its stats provider serves
// them from the runtime's stats (kubelet 1.37: pkg/kubelet/server/stats/
// handler.go for /stats/summary, pkg/kubelet/metrics/collectors/
// resource_metrics.go for /metrics/resource), so that a metrics-server
// pointed at the node makes `kubectl top` work:
//
//	GET /stats/summary       statsv1alpha1.Summary: the node (from /proc), each running pod and container
//	GET /metrics/resource    the same counters in the Prometheus text format, metrics-server's input
//
// Authorized as the kubelet's: nodes/stats and nodes/metrics (see
// requestAttributes). Unlike the kubelet's, the summary has no file
// system, network or volume stats, no usageNanoCores (metrics-server
// computes rates from two scrapes itself), and /metrics/cadvisor is not
// served.

// StatsSource is the optional source of the pods' resource usage for the
// kubelet server: *agent.Agent's PodStats, the runtime's counters. It
// returns agent.ErrNoStats when the runtime reports none.
type StatsSource interface {
	PodStats(ctx context.Context) ([]runtime.PodStats, error)
}

var _ StatsSource = (*agent.Agent)(nil)

// statsTimeout bounds one read of the usage.
const statsTimeout = 10 * time.Second

// handleStats registers the usage endpoints on mux when cfg.Stats is set.
func (s *KubeletServer) handleStats(mux *http.ServeMux) {
	if s.cfg.Stats == nil {
		return
	}
	mux.HandleFunc("GET /stats/summary", s.statsSummary)
	mux.HandleFunc("GET /metrics/resource", s.resourceMetrics)
}

// podStats reads the pods' usage; a runtime without stats has no pods.
func (s *KubeletServer) podStats(ctx context.Context) ([]runtime.PodStats, error) {
	ctx, cancel := context.WithTimeout(ctx, statsTimeout)
	defer cancel()
	pods, err := s.cfg.Stats.PodStats(ctx)
	if errors.Is(err, agent.ErrNoStats) {
		return nil, nil
	}
	return pods, err
}

func (s *KubeletServer) statsSummary(w http.ResponseWriter, r *http.Request) {
	pods, err := s.podStats(r.Context())
	if err != nil {
		s.log.Warn("stats summary", "err", err)
		http.Error(w, "Internal Error: failed to get the pods' stats: "+err.Error(), http.StatusInternalServerError)
		return
	}
	machine, err := readMachineUsage(s.cfg.Clock.Now())
	if err != nil {
		s.log.Warn("stats summary", "err", err)
		http.Error(w, "Internal Error: failed to get the node's stats: "+err.Error(), http.StatusInternalServerError)
		return
	}
	sum := summary(s.cfg.NodeName, machine, pods)
	b, err := json.Marshal(&sum)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b)
}

// summary is the kubelet's Summary of the node and of pods.
func summary(nodeName string, machine machineUsage, pods []runtime.PodStats) statsv1alpha1.Summary {
	sum := statsv1alpha1.Summary{
		Node: statsv1alpha1.NodeStats{
			NodeName:  nodeName,
			StartTime: metav1.NewTime(machine.bootTime),
			CPU:       cpuStats(machine.cpu),
			Memory:    memoryStats(machine.memory),
		},
		Pods: make([]statsv1alpha1.PodStats, 0, len(pods)),
	}
	sum.Node.Memory.AvailableBytes = ptr.To(machine.availableBytes)
	for _, p := range pods {
		ps := statsv1alpha1.PodStats{
			PodRef:     statsv1alpha1.PodReference{Name: p.Name, Namespace: p.Namespace, UID: string(p.UID)},
			Containers: make([]statsv1alpha1.ContainerStats, 0, len(p.Containers)),
		}
		if p.CPU != nil {
			ps.CPU = cpuStats(*p.CPU)
		}
		if p.Memory != nil {
			ps.Memory = memoryStats(*p.Memory)
		}
		for _, c := range p.Containers {
			if ps.StartTime.IsZero() || c.StartedAt.Before(ps.StartTime.Time) {
				ps.StartTime = metav1.NewTime(c.StartedAt)
			}
			ps.Containers = append(ps.Containers, statsv1alpha1.ContainerStats{
				Name: c.Name, StartTime: metav1.NewTime(c.StartedAt),
				CPU: cpuStats(c.CPU), Memory: memoryStats(c.Memory),
			})
		}
		sum.Pods = append(sum.Pods, ps)
	}
	return sum
}

func cpuStats(u runtime.CPUUsage) *statsv1alpha1.CPUStats {
	return &statsv1alpha1.CPUStats{Time: metav1.NewTime(u.Time), UsageCoreNanoSeconds: ptr.To(u.UsageCoreNanoSeconds)}
}

func memoryStats(u runtime.MemoryUsage) *statsv1alpha1.MemoryStats {
	return &statsv1alpha1.MemoryStats{
		Time: metav1.NewTime(u.Time), UsageBytes: ptr.To(u.UsageBytes),
		WorkingSetBytes: ptr.To(u.WorkingSetBytes), RSSBytes: ptr.To(u.RSSBytes),
	}
}

// resourceMetrics serves the kubelet's resource metrics, each usage sample
// with its read time (milliseconds), as metrics-server's decoder takes them
// (sigs.k8s.io/metrics-server pkg/scraper/client/resource/decode.go). A
// failed read of the pods is resource_scrape_error 1 with the node's
// metrics alone.
func (s *KubeletServer) resourceMetrics(w http.ResponseWriter, r *http.Request) {
	pods, podsErr := s.podStats(r.Context())
	if podsErr != nil {
		s.log.Warn("resource metrics", "err", podsErr)
	}
	machine, machineErr := readMachineUsage(s.cfg.Clock.Now())
	if machineErr != nil {
		s.log.Warn("resource metrics", "err", machineErr)
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(resourceMetricsText(machine, machineErr == nil, pods, podsErr != nil || machineErr != nil)))
}

// resourceMetricsText is the kubelet's /metrics/resource for the node
// (when known) and pods: its names, help texts, types, labels and
// timestamps, its families in the order of their names (the registry's).
func resourceMetricsText(machine machineUsage, haveMachine bool, pods []runtime.PodStats, scrapeErr bool) string {
	var w metricsText
	pods = slices.Clone(pods)
	slices.SortFunc(pods, func(a, b runtime.PodStats) int {
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	perContainer := func(name, help, typ string, value func(runtime.ContainerStats) (float64, time.Time)) {
		w.family(name, "[STABLE] "+help, typ)
		for _, p := range pods {
			for _, c := range p.Containers {
				v, at := value(c)
				w.sample(name, []string{"container", c.Name, "namespace", p.Namespace, "pod", p.Name}, v, at)
			}
		}
	}
	perContainer("container_cpu_usage_seconds_total", "Cumulative cpu time consumed by the container in core-seconds", "counter",
		func(c runtime.ContainerStats) (float64, time.Time) {
			return seconds(c.CPU.UsageCoreNanoSeconds), c.CPU.Time
		})
	perContainer("container_memory_working_set_bytes", "Current working set of the container in bytes", "gauge",
		func(c runtime.ContainerStats) (float64, time.Time) {
			return float64(c.Memory.WorkingSetBytes), c.Memory.Time
		})
	// the kubelet's start time has no timestamp
	perContainer("container_start_time_seconds", "Start time of the container since unix epoch in seconds", "gauge",
		func(c runtime.ContainerStats) (float64, time.Time) {
			return float64(c.StartedAt.UnixNano()) / 1e9, time.Time{}
		})
	if haveMachine {
		w.family("node_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the node in core-seconds", "counter")
		w.sample("node_cpu_usage_seconds_total", nil, seconds(machine.cpu.UsageCoreNanoSeconds), machine.cpu.Time)
		w.family("node_memory_working_set_bytes", "[STABLE] Current working set of the node in bytes", "gauge")
		w.sample("node_memory_working_set_bytes", nil, float64(machine.memory.WorkingSetBytes), machine.memory.Time)
	}
	w.family("pod_cpu_usage_seconds_total", "[STABLE] Cumulative cpu time consumed by the pod in core-seconds", "counter")
	for _, p := range pods {
		if p.CPU != nil {
			w.sample("pod_cpu_usage_seconds_total", []string{"namespace", p.Namespace, "pod", p.Name}, seconds(p.CPU.UsageCoreNanoSeconds), p.CPU.Time)
		}
	}
	w.family("pod_memory_working_set_bytes", "[STABLE] Current working set of the pod in bytes", "gauge")
	for _, p := range pods {
		if p.Memory != nil {
			w.sample("pod_memory_working_set_bytes", []string{"namespace", p.Namespace, "pod", p.Name}, float64(p.Memory.WorkingSetBytes), p.Memory.Time)
		}
	}
	// scrape_error, its ALPHA twin, is deprecated since 1.29 and hidden
	w.family("resource_scrape_error", "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", "gauge")
	errValue := 0.0
	if scrapeErr {
		errValue = 1
	}
	w.sample("resource_scrape_error", nil, errValue, time.Time{})
	return w.String()
}

func seconds(ns uint64) float64 { return float64(ns) / 1e9 }

// metricsText writes the Prometheus text format.
type metricsText struct {
	strings.Builder
	// header is the HELP and TYPE lines of the family begun, until its
	// first sample writes them.
	header string
}

// family begins a family: its HELP and TYPE lines come with its first
// sample, and a family without samples is left out, as the kubelet's
// registry leaves it out.
func (w *metricsText) family(name, help, typ string) {
	w.header = fmt.Sprintf("# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes one sample of the family begun with its labels (name,
// value pairs) and its time in milliseconds; none when at is zero.
func (w *metricsText) sample(name string, labels []string, v float64, at time.Time) {
	w.WriteString(w.header)
	w.header = ""
	w.WriteString(name)
	if len(labels) > 0 {
		w.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				w.WriteByte(',')
			}
			fmt.Fprintf(w, "%s=\"%s\"", labels[i], escapeLabel(labels[i+1]))
		}
		w.WriteByte('}')
	}
	w.WriteByte(' ')
	w.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	if !at.IsZero() {
		fmt.Fprintf(w, " %d", at.UnixMilli())
	}
	w.WriteByte('\n')
}

// escapeLabel escapes a label value as the Prometheus text format wants.
func escapeLabel(v string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v)
}
