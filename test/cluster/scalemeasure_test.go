package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/internal/bench"
	"github.com/podward/podward/test/internal/bintest"
)

// latencyMS is a distribution of per-pod latencies, in milliseconds.
type latencyMS struct {
	P50 float64 `json:"p50_ms"`
	P90 float64 `json:"p90_ms"`
	P99 float64 `json:"p99_ms"`
	Max float64 `json:"max_ms"`
}

func latencies(ds []time.Duration) latencyMS {
	ms := make([]float64, len(ds))
	for i, d := range ds {
		ms[i] = float64(d) / float64(time.Millisecond)
	}
	slices.Sort(ms)
	if len(ms) == 0 {
		return latencyMS{}
	}
	return latencyMS{P50: bench.Percentile(ms, 50), P90: bench.Percentile(ms, 90), P99: bench.Percentile(ms, 99), Max: ms[len(ms)-1]}
}

// scaleResult is one run's figures. Times are from the Deployment's
// creation (t0) or, per pod, from the watch's first sight of it.
type scaleResult struct {
	Pods    int    `json:"pods"`
	LoadAvg string `json:"loadavg_at_start"`
	// AllStartedS and AllReadyS: t0 until the last pod's containers all
	// started, and until the last pod was Ready; LastCreatedS: until the
	// ReplicaSet's last pod was seen (the controller's share).
	AllStartedS  float64 `json:"all_started_s"`
	AllReadyS    float64 `json:"all_ready_s"`
	LastCreatedS float64 `json:"last_created_s"`
	// Startup: seen → all containers started (the SLO's pod startup
	// latency, image pull included: IfNotPresent, the image is pulled by
	// the first pods); Ready: seen → Ready; Bound: seen → bound by the
	// scheduler; OnNode: bound → started (the node's share).
	Startup latencyMS `json:"startup"`
	Ready   latencyMS `json:"ready"`
	Bound   latencyMS `json:"bound"`
	OnNode  latencyMS `json:"on_node"`
	// The agent from t0 until all ready: CPU seconds (utime+stime) and
	// their share of the wall time; VmRSS then, and VmHWM (its peak since
	// it started).
	AgentCPUS       float64 `json:"agent_cpu_s"`
	AgentCPUPercent float64 `json:"agent_cpu_percent"`
	AgentRSSMB      float64 `json:"agent_rss_mb"`
	AgentPeakRSSMB  float64 `json:"agent_peak_rss_mb"`
	// The agent at rest with every pod running, over the steady window
	// (PODWARD_SCALE_STEADY; 0 when none).
	SteadyWindowS         float64 `json:"steady_window_s,omitempty"`
	AgentSteadyCPUPercent float64 `json:"agent_steady_cpu_percent,omitempty"`
	AgentSteadyRSSMB      float64 `json:"agent_steady_rss_mb,omitempty"`
	// containerd (its own process, not its shims) as the agent, but its
	// peak is since it started: it serves every run (and, in the suite,
	// every test); the shims (one per pod sandbox) their count and summed
	// PSS once all are ready.
	ContainerdCPUS      float64 `json:"containerd_cpu_s,omitempty"`
	ContainerdRSSMB     float64 `json:"containerd_rss_mb,omitempty"`
	ContainerdPeakRSSMB float64 `json:"containerd_peak_rss_mb,omitempty"`
	Shims               int     `json:"shims,omitempty"`
	ShimsPSSMB          float64 `json:"shims_pss_mb,omitempty"`
	// DeleteAllS: the Deployment's deletion until the watch saw every pod
	// gone.
	DeleteAllS float64 `json:"delete_all_s"`
	// Floor: the same pods straight through the CRI just before (on the
	// idle node); OverFloorS is AllStartedS over its AllStartedS.
	Floor      floorResult `json:"floor"`
	OverFloorS float64     `json:"over_floor_s"`
}

// fillTimes computes the run's times from the pods' stamps.
func (r *scaleResult) fillTimes(pods []podTimes, t0 time.Time) {
	var startup, ready, bound, onNode []time.Duration
	var lastStarted, lastReady, lastSeen time.Time
	for _, p := range pods {
		startup = append(startup, p.started.Sub(p.seen))
		ready = append(ready, p.ready.Sub(p.seen))
		bound = append(bound, p.bound.Sub(p.seen))
		onNode = append(onNode, p.started.Sub(p.bound))
		lastStarted = later(lastStarted, p.started)
		lastReady = later(lastReady, p.ready)
		lastSeen = later(lastSeen, p.seen)
	}
	r.AllStartedS, r.AllReadyS = lastStarted.Sub(t0).Seconds(), lastReady.Sub(t0).Seconds()
	r.LastCreatedS = lastSeen.Sub(t0).Seconds()
	r.Startup, r.Ready, r.Bound, r.OnNode = latencies(startup), latencies(ready), latencies(bound), latencies(onNode)
	r.OverFloorS = r.AllStartedS - r.Floor.AllStartedS
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

func (r scaleResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pods (loadavg %s at start): all started %.1fs, all ready %.1fs after the Deployment's creation (last pod created at %.1fs)\n",
		r.Pods, r.LoadAvg, r.AllStartedS, r.AllReadyS, r.LastCreatedS)
	for _, l := range []struct {
		what string
		l    latencyMS
	}{{"startup (created→started)", r.Startup}, {"created→ready", r.Ready}, {"created→bound", r.Bound}, {"bound→started", r.OnNode}} {
		fmt.Fprintf(&b, "  %-26s p50 %6.0f ms  p90 %6.0f ms  p99 %6.0f ms  max %6.0f ms\n", l.what, l.l.P50, l.l.P90, l.l.P99, l.l.Max)
	}
	fmt.Fprintf(&b, "  agent: %.2f CPU s (%.0f%% of a core), RSS %.1f MB, peak %.1f MB",
		r.AgentCPUS, r.AgentCPUPercent, r.AgentRSSMB, r.AgentPeakRSSMB)
	if r.SteadyWindowS > 0 {
		fmt.Fprintf(&b, "; at rest over %.0fs: %.1f%% CPU, RSS %.1f MB", r.SteadyWindowS, r.AgentSteadyCPUPercent, r.AgentSteadyRSSMB)
	}
	fmt.Fprintf(&b, "\n  containerd: %.2f CPU s, RSS %.1f MB, peak %.1f MB; %d shims, PSS %.1f MB\n",
		r.ContainerdCPUS, r.ContainerdRSSMB, r.ContainerdPeakRSSMB, r.Shims, r.ShimsPSSMB)
	fmt.Fprintf(&b, "  floor (the same pods straight through the CRI): all started %.1fs, per pod p50 %.0f ms p99 %.0f ms; podward %+.1fs over it\n",
		r.Floor.AllStartedS, r.Floor.Startup.P50, r.Floor.Startup.P99, r.OverFloorS)
	fmt.Fprintf(&b, "  deleted: all pods gone %.1fs after the Deployment's deletion", r.DeleteAllS)
	return b.String()
}

func mb(bytes int64) float64 { return float64(bytes) / (1 << 20) }

// scaleProcs are the processes the run measures: the agent, and
// containerd when its pid file is found beside its socket (as
// hack/cri-up.sh writes it).
type scaleProcs struct {
	agent, containerd int // containerd 0: not measured
	socket            string
	t0                time.Time
	agent0, ctrd0     bench.CPUTimes
}

func startScaleProcs(t *testing.T, agent int) *scaleProcs {
	t.Helper()
	p := &scaleProcs{agent: agent}
	p.socket = strings.TrimPrefix(os.Getenv(bintest.CRIEndpointEnv), "unix://")
	if b, err := os.ReadFile(filepath.Join(filepath.Dir(p.socket), "containerd.pid")); err == nil {
		p.containerd, _ = strconv.Atoi(strings.TrimSpace(string(b)))
	}
	if p.containerd == 0 {
		t.Logf("containerd: no pid file beside %s, not measured", p.socket)
	}
	var err error
	if p.agent0, err = bench.ReadCPU(agent); err != nil {
		t.Fatalf("agent CPU: %v", err)
	}
	if p.containerd != 0 {
		p.ctrd0, _ = bench.ReadCPU(p.containerd)
	}
	p.t0 = time.Now()
	return p
}

// measureRun reads the processes once all pods are ready.
func (p *scaleProcs) measureRun(t *testing.T, r *scaleResult) {
	t.Helper()
	wall := time.Since(p.t0)
	a1, err := bench.ReadCPU(p.agent)
	if err != nil {
		t.Fatalf("agent CPU: %v", err)
	}
	st, err := bench.ReadStatus(p.agent)
	if err != nil {
		t.Fatalf("agent status: %v", err)
	}
	used := a1.Own() - p.agent0.Own()
	r.AgentCPUS, r.AgentCPUPercent = used.Seconds(), 100*float64(used)/float64(wall)
	r.AgentRSSMB, r.AgentPeakRSSMB = mb(st.RSSBytes), mb(st.PeakRSSBytes)
	if p.containerd == 0 {
		return
	}
	if c1, err := bench.ReadCPU(p.containerd); err == nil {
		r.ContainerdCPUS = (c1.Own() - p.ctrd0.Own()).Seconds()
	}
	if st, err := bench.ReadStatus(p.containerd); err == nil {
		r.ContainerdRSSMB, r.ContainerdPeakRSSMB = mb(st.RSSBytes), mb(st.PeakRSSBytes)
	}
	shims, err := bench.FindProcs(func(argv []string, _ func() []string) bool {
		return len(argv) > 0 && strings.HasPrefix(filepath.Base(argv[0]), "containerd-shim") && slices.Contains(argv, p.socket)
	})
	if err != nil {
		t.Logf("shims: %v", err)
		return
	}
	var pss int64
	for _, s := range shims {
		if v, err := bench.ReadPSS(s.PID); err == nil {
			pss += v
		}
	}
	r.Shims, r.ShimsPSSMB = len(shims), mb(pss)
}

// measureSteady measures the agent over a window of rest, every pod
// running: a measurement window, not a wait for an event.
func (p *scaleProcs) measureSteady(t *testing.T, r *scaleResult, window time.Duration) {
	t.Helper()
	c0, err := bench.ReadCPU(p.agent)
	if err != nil {
		t.Fatalf("agent CPU: %v", err)
	}
	start := time.Now()
	timer := time.NewTimer(window)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-t.Context().Done():
		t.Fatal("the test ended in its steady window")
	}
	c1, err := bench.ReadCPU(p.agent)
	if err != nil {
		t.Fatalf("agent CPU: %v", err)
	}
	st, err := bench.ReadStatus(p.agent)
	if err != nil {
		t.Fatalf("agent status: %v", err)
	}
	elapsed := time.Since(start)
	r.SteadyWindowS = elapsed.Seconds()
	r.AgentSteadyCPUPercent = 100 * float64(c1.Own()-c0.Own()) / float64(elapsed)
	r.AgentSteadyRSSMB = mb(st.RSSBytes)
}

// scaleReport is what PODWARD_SCALE_OUT gets: every run, and the medians
// over the runs of the figures the closing note gives.
type scaleReport struct {
	Runs    []scaleResult      `json:"runs"`
	Medians map[string]float64 `json:"medians"`
}

// reportScale logs the medians over the runs and writes them out.
func reportScale(t *testing.T, cfg scaleConfig, results []scaleResult) {
	t.Helper()
	figures := []struct {
		name string
		get  func(scaleResult) float64
	}{
		{"all_started_s", func(r scaleResult) float64 { return r.AllStartedS }},
		{"all_ready_s", func(r scaleResult) float64 { return r.AllReadyS }},
		{"last_created_s", func(r scaleResult) float64 { return r.LastCreatedS }},
		{"startup_p50_ms", func(r scaleResult) float64 { return r.Startup.P50 }},
		{"startup_p90_ms", func(r scaleResult) float64 { return r.Startup.P90 }},
		{"startup_p99_ms", func(r scaleResult) float64 { return r.Startup.P99 }},
		{"on_node_p50_ms", func(r scaleResult) float64 { return r.OnNode.P50 }},
		{"on_node_p99_ms", func(r scaleResult) float64 { return r.OnNode.P99 }},
		{"agent_cpu_s", func(r scaleResult) float64 { return r.AgentCPUS }},
		{"agent_cpu_percent", func(r scaleResult) float64 { return r.AgentCPUPercent }},
		{"agent_rss_mb", func(r scaleResult) float64 { return r.AgentRSSMB }},
		{"agent_peak_rss_mb", func(r scaleResult) float64 { return r.AgentPeakRSSMB }},
		{"agent_steady_cpu_percent", func(r scaleResult) float64 { return r.AgentSteadyCPUPercent }},
		{"agent_steady_rss_mb", func(r scaleResult) float64 { return r.AgentSteadyRSSMB }},
		{"containerd_cpu_s", func(r scaleResult) float64 { return r.ContainerdCPUS }},
		{"containerd_peak_rss_mb", func(r scaleResult) float64 { return r.ContainerdPeakRSSMB }},
		{"shims_pss_mb", func(r scaleResult) float64 { return r.ShimsPSSMB }},
		{"delete_all_s", func(r scaleResult) float64 { return r.DeleteAllS }},
		{"floor_all_started_s", func(r scaleResult) float64 { return r.Floor.AllStartedS }},
		{"floor_startup_p99_ms", func(r scaleResult) float64 { return r.Floor.Startup.P99 }},
		{"over_floor_s", func(r scaleResult) float64 { return r.OverFloorS }},
	}
	rep := scaleReport{Runs: results, Medians: map[string]float64{}}
	var b strings.Builder
	fmt.Fprintf(&b, "medians over %d run(s) of %d pods:", len(results), cfg.pods)
	for _, f := range figures {
		vals := make([]float64, len(results))
		for i, r := range results {
			vals[i] = f.get(r)
		}
		rep.Medians[f.name] = median(vals)
		fmt.Fprintf(&b, "\n  %-26s %9.2f", f.name, rep.Medians[f.name])
	}
	t.Log(b.String())
	if cfg.out != "" {
		writeScaleOut(t, cfg.out, rep)
	}
}
