package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/internal/bench"
	"github.com/podward/podward/test/internal/bintest"
)

// smokeArgs are sizes that make `podward bench` a quick run: every
// scenario, a few pods each, windows of a second or two.
var smokeArgs = []string{
	"--start-pods", "3", "--parallel", "3", "--parallel-rounds", "1",
	"--stop-pods", "2", "--defer-pods", "2",
	"--scale", "2,3", "--scale-probe-pods", "2", "--idle", "1s", "--settle", "0s",
	"--churn-window", "2s", "--churn-in-flight", "3",
}

// `podward bench` end to end at tiny sizes: it starts its own agent,
// runs every scenario (on the CRI runtime those of the CRI
// figures), and writes JSON with every figure, each positive where it
// must be and consistent with the others (p50 ≤ p90 ≤ p99, a defer stop
// no shorter than its defer containers' work, one shim per container).
func TestBenchSmoke(t *testing.T) {
	bintest.EachRuntime(t, func(t *testing.T, rt bintest.Runtime) {
		needRoot(t)
		out := filepath.Join(t.TempDir(), "results.json")
		args := append([]string{"bench", "--out", out}, smokeArgs...)
		args = append(args, rt.Args...)
		if rt.IsCRI() {
			// A CRI pod's start and stop take 2 s and more on a loaded
			// 2-core machine: a 2 s window saw no cycle end (CI-like load,
			// 3 node-conformance shards beside it). The last flag wins.
			args = append(args, "--only", "start,stop,churn", "--churn-window", "6s")
		}
		cmd := exec.Command(podwardBin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		done := make(chan error, 1)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { done <- cmd.Wait() }()
		timer := time.NewTimer(3 * time.Minute)
		defer timer.Stop()
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("podward bench: %v\nstdout:\n%s\nstderr:\n%s", err, &stdout, &stderr)
			}
		case <-timer.C:
			_ = cmd.Process.Kill()
			<-done
			t.Fatalf("podward bench did not end within 3 minutes\nstderr:\n%s", &stderr)
		}
		t.Logf("podward bench:\n%s", &stdout)
		raw, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		var generic any
		if err := json.Unmarshal(raw, &generic); err != nil {
			t.Fatalf("--out is not JSON: %v", err)
		}
		for _, bad := range checkFigures("", generic) {
			t.Error(bad)
		}
		var res bench.Results
		if err := json.Unmarshal(raw, &res); err != nil {
			t.Fatal(err)
		}
		checkBenchResults(t, &res, rt.IsCRI())
		for _, want := range []string{"start, sequential", "stop, TERM", "churn", "target"} {
			if !strings.Contains(stdout.String(), want) {
				t.Errorf("the table has no %q row", want)
			}
		}
	})
}

// checkFigures walks the JSON: no number is negative but a difference
// (over_ms: podward minus its floor, which is negative where podward is
// faster), and every summary is ordered (min ≤ p50 ≤ p90 ≤ p99 ≤ max).
func checkFigures(path string, v any) []string {
	var bad []string
	switch v := v.(type) {
	case float64:
		if v < 0 && !strings.HasSuffix(path, ".over_ms") {
			bad = append(bad, fmt.Sprintf("%s = %v, negative", path, v))
		}
	case []any:
		for i, e := range v {
			bad = append(bad, checkFigures(fmt.Sprintf("%s[%d]", path, i), e)...)
		}
	case map[string]any:
		if p50, ok := v["p50_ms"].(float64); ok {
			order := []string{"min_ms", "p50_ms", "p90_ms", "p99_ms", "max_ms"}
			prev, prevKey := -1.0, ""
			for _, k := range order {
				x, ok := v[k].(float64)
				if !ok {
					continue
				}
				if x < prev {
					bad = append(bad, fmt.Sprintf("%s: %s %v < %s %v", path, k, x, prevKey, prev))
				}
				prev, prevKey = x, k
			}
			if n, _ := v["n"].(float64); n < 1 || p50 <= 0 {
				bad = append(bad, fmt.Sprintf("%s: %v samples, p50 %v", path, n, p50))
			}
		}
		for k, e := range v {
			bad = append(bad, checkFigures(path+"."+k, e)...)
		}
	}
	return bad
}

// checkBenchResults checks that every figure of the scenarios run is
// there and consistent.
func checkBenchResults(t *testing.T, res *bench.Results, cri bool) {
	t.Helper()
	positive := func(name string, v float64) {
		t.Helper()
		if !(v > 0) {
			t.Errorf("%s = %v, want > 0", name, v)
		}
	}
	if res.Machine.CPUs < 1 || res.Machine.Kernel == "" || len(res.Command) < 2 {
		t.Errorf("machine %+v, command %q", res.Machine, res.Command)
	}
	s := res.Start
	if s == nil {
		t.Fatal("no start figures")
	}
	for name, c := range map[string]bench.Compare{"start.sequential": s.Sequential, "start.parallel": s.Parallel} {
		if c.Podward.N != 3 || c.Floor.N != 3 {
			t.Errorf("%s: %d and %d samples, want 3 each", name, c.Podward.N, c.Floor.N)
		}
		positive(name+".podward.p50", c.Podward.P50)
		positive(name+".floor.p50", c.Floor.P50)
		positive(name+".ratio", c.Ratio)
	}
	st := res.Stop
	if st == nil {
		t.Fatal("no stop figures")
	}
	positive("stop.term.podward.p50", st.Term.Podward.P50)
	positive("stop.term.floor.p50", st.Term.Floor.P50)
	if st.Defer.N != 2 || st.Defer.P50 < st.DeferWorkMS || st.DeferExcessMS != st.Defer.P50-st.DeferWorkMS {
		t.Errorf("stop with defer containers: %+v, work %v ms, excess %v ms", st.Defer, st.DeferWorkMS, st.DeferExcessMS)
	}
	c := res.Churn
	if c == nil {
		t.Fatal("no churn figures")
	}
	if c.Cycles < 1 || c.CyclesPerSecond != float64(c.Cycles)/c.WindowS || c.Cycle.N != c.Cycles {
		t.Errorf("churn: %d cycles in %v s, %v per second, %d cycle samples", c.Cycles, c.WindowS, c.CyclesPerSecond, c.Cycle.N)
	}
	if c.PodsLeft != 0 || c.ShimsLeft != 0 || c.ProcessesLeft != 0 {
		t.Errorf("churn left %d pods, %d shims, %d container processes", c.PodsLeft, c.ShimsLeft, c.ProcessesLeft)
	}
	positive("churn.after.fds", float64(c.After.FDs))
	if len(res.Targets) == 0 {
		t.Error("no targets checked")
	}
	if cri {
		return
	}
	if e := res.Empty; e == nil {
		t.Error("no idle figures with no pods")
	} else {
		positive("idle_no_pods.agent.rss_mb", e.Agent.RSSMB)
		if e.Shims != 0 {
			t.Errorf("%d shims with no pods", e.Shims)
		}
	}
	sc := res.Scale
	if sc == nil || len(sc.Points) != 2 || sc.Probe == nil {
		t.Fatalf("scale: %+v, want 2 points and a probe point", sc)
	}
	for _, p := range append(sc.Points, *sc.Probe) {
		name := fmt.Sprintf("scale[%d pods, probe %v]", p.Pods, p.ReadinessProbe)
		positive(name+".all_running_s", p.AllRunningS)
		positive(name+".delete_all_s", p.DeleteAllS)
		positive(name+".idle.window_s", p.Idle.WindowS)
		positive(name+".idle.agent.rss_mb", p.Idle.Agent.RSSMB)
		positive(name+".idle.agent.fds", float64(p.Idle.Agent.FDs))
		positive(name+".idle.agent.threads", float64(p.Idle.Agent.Threads))
		positive(name+".idle.shim_pss_mb", p.Idle.ShimPSSMB)
		if p.Containers != 3*p.Pods || p.Idle.Shims != p.Containers {
			t.Errorf("%s: %d containers, %d shims, want 3 per pod and one per container", name, p.Containers, p.Idle.Shims)
		}
		if p.Idle.CPUPercentWithChildren < p.Idle.CPUPercent {
			t.Errorf("%s: CPU with children %v < own %v", name, p.Idle.CPUPercentWithChildren, p.Idle.CPUPercent)
		}
	}
}
