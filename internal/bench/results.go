package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Results are one run's figures, as `podward bench --out` writes them.
type Results struct {
	Version int       `json:"version"`
	When    time.Time `json:"when"`
	Runtime string    `json:"runtime"`
	// Command is the bench's command line, to run it again.
	Command []string  `json:"command,omitempty"`
	Machine Machine   `json:"machine"`
	Agent   AgentInfo `json:"agent"`
	// Empty is the fresh agent with no pods, over an idle window (with
	// the scale scenario).
	Empty   *Idle        `json:"idle_no_pods,omitempty"`
	Start   *StartResult `json:"start,omitempty"`
	Stop    *StopResult  `json:"stop,omitempty"`
	Scale   *ScaleResult `json:"scale,omitempty"`
	Churn   *ChurnResult `json:"churn,omitempty"`
	Targets []Target     `json:"targets"`
	// Error is why the run ended early, if it did: the figures before it
	// are kept.
	Error string `json:"error,omitempty"`
}

// Machine is where the run was measured.
type Machine struct {
	CPUs   int    `json:"cpus"`
	Model  string `json:"cpu_model"`
	Kernel string `json:"kernel"`
	// LoadBefore and LoadAfter are /proc/loadavg's 1-minute load at the
	// run's start and end: the machine may be shared.
	LoadBefore float64 `json:"load1_before"`
	LoadAfter  float64 `json:"load1_after"`
}

// AgentInfo names the agent the run measured.
type AgentInfo struct {
	Binary string `json:"binary"`
	PID    int    `json:"pid"`
	Root   string `json:"root"`
	Log    string `json:"log"`
}

// Load is the 1-minute load average before and after a scenario.
type Load struct {
	Before float64 `json:"load1_before"`
	After  float64 `json:"load1_after"`
}

// StartResult: from the create call to the last container's own stamp.
type StartResult struct {
	Pod           string  `json:"pod"`
	Containers    int     `json:"containers"`
	Sequential    Compare `json:"sequential"`
	Parallel      Compare `json:"parallel"`
	ParallelWidth int     `json:"parallel_width"`
	Load          Load    `json:"load"`
}

// StopResult: from the delete call to the pod's removal.
type StopResult struct {
	Term Compare `json:"term"`
	// Defer is the stop of pods with two defer containers that take
	// DeferWorkMS in all, with a DeferGraceS grace period;
	// DeferExcessMS is its median minus that work.
	Defer         Summary `json:"defer"`
	DeferWorkMS   float64 `json:"defer_work_ms"`
	DeferGraceS   int     `json:"defer_grace_s"`
	DeferExcessMS float64 `json:"defer_excess_ms"`
	Load          Load    `json:"load"`
}

// AgentSnapshot is the agent's process at one moment.
type AgentSnapshot struct {
	RSSMB float64 `json:"rss_mb"`
	// AnonMB and FileMB split RSSMB: the agent's own memory, and the
	// pages of the files it maps (its binary, the state file).
	AnonMB  float64 `json:"rss_anon_mb"`
	FileMB  float64 `json:"rss_file_mb"`
	PSSMB   float64 `json:"pss_mb"`
	Threads int     `json:"threads"`
	FDs     int     `json:"fds"`
	// Goroutines is known when the agent serves /metrics or pprof.
	Goroutines *int  `json:"goroutines,omitempty"`
	StoreBytes int64 `json:"store_bytes"`
}

// Idle is one idle window.
type Idle struct {
	WindowS float64 `json:"window_s"`
	// CPUPercent is the agent's CPU over the window, in % of one core;
	// WithChildren adds its children it reaped meanwhile.
	CPUPercent             float64       `json:"cpu_percent"`
	CPUPercentWithChildren float64       `json:"cpu_percent_with_children"`
	Agent                  AgentSnapshot `json:"agent"`
	Shims                  int           `json:"shims"`
	ShimPSSMB              float64       `json:"shim_pss_mb"`
	ShimPSSPerContainerMB  float64       `json:"shim_pss_per_container_mb"`
}

// ScalePoint is one size of the scale scenario.
type ScalePoint struct {
	Pods           int     `json:"pods"`
	Containers     int     `json:"containers"`
	ReadinessProbe bool    `json:"readiness_probe"`
	AllRunningS    float64 `json:"all_running_s"`
	Idle           Idle    `json:"idle"`
	DeleteAllS     float64 `json:"delete_all_s"`
	Load           Load    `json:"load"`
}

// ScaleResult is the scale scenario.
type ScaleResult struct {
	Points []ScalePoint `json:"points"`
	Probe  *ScalePoint  `json:"probe,omitempty"`
}

// ChurnResult is the churn scenario.
type ChurnResult struct {
	Pod             string        `json:"pod"`
	InFlight        int           `json:"in_flight"`
	WindowS         float64       `json:"window_s"`
	Cycles          int           `json:"cycles"`
	CyclesPerSecond float64       `json:"cycles_per_second"`
	Cycle           Summary       `json:"cycle"`
	Before          AgentSnapshot `json:"before"`
	After           AgentSnapshot `json:"after"`
	PodsLeft        int           `json:"pods_left"`
	ShimsLeft       int           `json:"shims_left"`
	ProcessesLeft   int           `json:"processes_left"`
	// Left describes each shim and container process left: PID, parent,
	// state and command line.
	Left   []string `json:"left,omitempty"`
	Leaked bool     `json:"leaked"`
	Leaks  []string `json:"leaks,omitempty"`
	Load   Load     `json:"load"`
}

// Target is one of issue 14's targets, against this run.
type Target struct {
	Name string `json:"name"`
	Want string `json:"want"`
	Got  string `json:"got"`
	Met  bool   `json:"met"`
}

func readMachine() Machine {
	m := Machine{CPUs: runtime.NumCPU(), LoadBefore: readLoad()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.Model = strings.TrimSpace(v)
				break
			}
		}
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	return m
}

func readLoad() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _, _ := strings.Cut(string(b), " ")
	v, _ := strconv.ParseFloat(f, 64)
	return v
}

func loadPair(before, after float64) Load { return Load{Before: before, After: after} }

// targets checks the run against issue 14's targets, for what it measured.
func targets(res *Results) []Target {
	var out []Target
	add := func(name, want, got string, met bool) {
		out = append(out, Target{Name: name, Want: want, Got: got, Met: met})
	}
	if s := res.Start; s != nil {
		q := s.Sequential
		if res.Runtime == "process" {
			add("start p50, sequential", "≤ floor + 10 ms", fmt.Sprintf("%.1f ms = floor %.1f + %.1f ms", q.Podward.P50, q.Floor.P50, q.OverMS), q.OverMS <= 10)
		} else {
			add("start p50, sequential", "≤ 1.1 × floor", fmt.Sprintf("%.1f ms = %.2f × floor %.1f ms", q.Podward.P50, q.Ratio, q.Floor.P50), q.Ratio <= 1.1)
		}
	}
	if s := res.Stop; s != nil && res.Runtime == "process" {
		q := s.Term
		add("stop p50", "≤ floor + 10 ms", fmt.Sprintf("%.1f ms = floor %.1f + %.1f ms", q.Podward.P50, q.Floor.P50, q.OverMS), q.OverMS <= 10)
	}
	if s := res.Scale; s != nil && res.Runtime == "process" {
		for _, p := range s.Points {
			if p.Pods != 1000 {
				continue
			}
			add("1000 pods all running", "≤ 30 s", fmt.Sprintf("%.1f s", p.AllRunningS), p.AllRunningS <= 30)
			add("1000 pods all gone after a delete", "≤ 10 s", fmt.Sprintf("%.1f s", p.DeleteAllS), p.DeleteAllS <= 10)
			add("agent idle CPU at 1000 pods", "≤ 0.5 %", fmt.Sprintf("%.2f %%", p.Idle.CPUPercent), p.Idle.CPUPercent <= 0.5)
			add("agent RSS at 1000 pods", "≤ 60 MB", fmt.Sprintf("%.1f MB", p.Idle.Agent.RSSMB), p.Idle.Agent.RSSMB <= 60)
		}
		if n := len(s.Points); n > 0 {
			p := s.Points[n-1]
			add(fmt.Sprintf("shim PSS per container at %d pods", p.Pods), "≤ 1 MB", fmt.Sprintf("%.2f MB", p.Idle.ShimPSSPerContainerMB), p.Idle.ShimPSSPerContainerMB <= 1)
		}
		if p := s.Probe; p != nil && p.Pods == 300 {
			add("agent CPU, 300 pods with exec readiness probes at 1 s", "≤ 10 %", fmt.Sprintf("%.2f %% (%.2f %% with its children)", p.Idle.CPUPercent, p.Idle.CPUPercentWithChildren), p.Idle.CPUPercent <= 10)
		}
	}
	if e := res.Empty; e != nil && res.Runtime == "process" {
		add("agent RSS with no pods", "≤ 20 MB", fmt.Sprintf("%.1f MB", e.Agent.RSSMB), e.Agent.RSSMB <= 20)
	}
	if c := res.Churn; c != nil {
		add(fmt.Sprintf("churn, %d in flight", c.InFlight), "≥ 50 cycles/s", fmt.Sprintf("%.1f cycles/s", c.CyclesPerSecond), c.CyclesPerSecond >= 50)
		got := "none"
		if c.Leaked {
			got = strings.Join(c.Leaks, "; ")
		}
		add("leaks after churn", "none", got, !c.Leaked)
	}
	return out
}

// WriteJSON writes res, indented.
func (res *Results) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(res)
}

// WriteTable prints res as a table for a terminal (and the README).
func (res *Results) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	m := res.Machine
	fmt.Fprintf(tw, "podward bench, %s runtime, %s: %d × %s, kernel %s, load %.2f → %.2f\n\n",
		res.Runtime, res.When.Format(time.DateOnly), m.CPUs, m.Model, m.Kernel, m.LoadBefore, m.LoadAfter)
	fmt.Fprintln(tw, "figure\tpodward\tfloor\tratio\tn")
	if s := res.Start; s != nil {
		compareRow(tw, "start, sequential (ms)", s.Sequential)
		compareRow(tw, fmt.Sprintf("start, %d at once (ms)", s.ParallelWidth), s.Parallel)
	}
	if s := res.Stop; s != nil {
		compareRow(tw, "stop, TERM (ms)", s.Term)
		fmt.Fprintf(tw, "stop, 2 defer × 50 ms, grace %d s (ms)\t%s\t(%.0f of work)\texcess %.1f ms\t%d\n",
			s.DeferGraceS, summaryCell(s.Defer), s.DeferWorkMS, s.DeferExcessMS, s.Defer.N)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nfigure\tvalue")
	if e := res.Empty; e != nil {
		fmt.Fprintf(tw, "idle %.0f s, no pods\tagent CPU %.2f %%, RSS %.1f MB (anon %.1f, files %.1f), %d fds, %d threads%s\n",
			e.WindowS, e.CPUPercent, e.Agent.RSSMB, e.Agent.AnonMB, e.Agent.FileMB, e.Agent.FDs, e.Agent.Threads, goroutinesCell(e.Agent.Goroutines))
	}
	if s := res.Scale; s != nil {
		points := s.Points
		if s.Probe != nil {
			points = append(points[:len(points):len(points)], *s.Probe)
		}
		for _, p := range points {
			label := fmt.Sprintf("%d pods × 3", p.Pods)
			if p.ReadinessProbe {
				label += ", exec readiness 1 s"
			}
			fmt.Fprintf(tw, "%s\tall running %.1f s; deleted %.1f s\n", label, p.AllRunningS, p.DeleteAllS)
			fmt.Fprintf(tw, "  idle %.0f s\tagent CPU %.2f %% (%.2f %% with children), RSS %.1f MB (anon %.1f, files %.1f), %d fds, %d threads%s\n",
				p.Idle.WindowS, p.Idle.CPUPercent, p.Idle.CPUPercentWithChildren, p.Idle.Agent.RSSMB, p.Idle.Agent.AnonMB, p.Idle.Agent.FileMB, p.Idle.Agent.FDs, p.Idle.Agent.Threads, goroutinesCell(p.Idle.Agent.Goroutines))
			fmt.Fprintf(tw, "  shims\t%d, PSS %.1f MB in all, %.2f MB per container\n", p.Idle.Shims, p.Idle.ShimPSSMB, p.Idle.ShimPSSPerContainerMB)
		}
	}
	if c := res.Churn; c != nil {
		fmt.Fprintf(tw, "churn, %d in flight, %.0f s\t%.1f cycles/s, %d cycles (cycle %s ms)\n", c.InFlight, c.WindowS, c.CyclesPerSecond, c.Cycles, summaryCell(c.Cycle))
		leaks := "no leaks"
		if c.Leaked {
			leaks = strings.Join(c.Leaks, "; ")
		}
		fmt.Fprintf(tw, "  after churn\t%s (pods %d, shims %d, processes %d; fds %d → %d, threads %d → %d%s, store %d → %d bytes)\n",
			leaks, c.PodsLeft, c.ShimsLeft, c.ProcessesLeft, c.Before.FDs, c.After.FDs, c.Before.Threads, c.After.Threads, goroutinesChange(c.Before.Goroutines, c.After.Goroutines), c.Before.StoreBytes, c.After.StoreBytes)
	}
	if res.Error != "" {
		fmt.Fprintf(tw, "\nthe run ended early: %s\n", res.Error)
	}
	if len(res.Targets) > 0 {
		fmt.Fprintln(tw, "\ntarget\twant\tgot\tmet\t")
		for _, t := range res.Targets {
			met := "no"
			if t.Met {
				met = "yes"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", t.Name, t.Want, t.Got, met)
		}
	}
	return tw.Flush()
}

func compareRow(w io.Writer, label string, c Compare) {
	fmt.Fprintf(w, "%s\t%s\t%s\t%.2f (%+.1f ms)\t%d\n", label, summaryCell(c.Podward), summaryCell(c.Floor), c.Ratio, c.OverMS, c.Podward.N)
}

// summaryCell is "p50" or "p50 / p90 / p99".
func summaryCell(s Summary) string {
	if s.P90 == nil || s.P99 == nil {
		return fmt.Sprintf("%.1f", s.P50)
	}
	return fmt.Sprintf("%.1f / %.1f / %.1f", s.P50, *s.P90, *s.P99)
}

func goroutinesChange(before, after *int) string {
	if before == nil || after == nil {
		return ""
	}
	return fmt.Sprintf(", goroutines %d → %d", *before, *after)
}

func goroutinesCell(g *int) string {
	if g == nil {
		return ""
	}
	return fmt.Sprintf(", %d goroutines", *g)
}
