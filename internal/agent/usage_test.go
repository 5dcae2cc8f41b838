package agent

import (
	"context"
	"errors"
	"log/slog"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
	"github.com/podward/podward/internal/wire"
)

func TestCPURate(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration, ns uint64) runtime.CPUUsage {
		return runtime.CPUUsage{Time: t0.Add(d), UsageCoreNanoSeconds: ns}
	}
	for name, tc := range map[string]struct {
		prev, last runtime.CPUUsage
		nano       uint64
		window     time.Duration
		ok         bool
	}{
		"half a core over two seconds": {prev: at(0, 1e9), last: at(2*time.Second, 2e9), nano: 5e8, window: 2 * time.Second, ok: true},
		"two cores":                    {prev: at(0, 0), last: at(time.Second, 2e9), nano: 2e9, window: time.Second, ok: true},
		"idle":                         {prev: at(0, 7), last: at(time.Second, 7), nano: 0, window: time.Second, ok: true},
		"no previous sample":           {last: at(time.Second, 5)},
		"same time":                    {prev: at(time.Second, 1), last: at(time.Second, 5)},
		"counter went back":            {prev: at(0, 10), last: at(time.Second, 5)},
	} {
		t.Run(name, func(t *testing.T) {
			nano, window, ok := CPURate(tc.prev, tc.last)
			if nano != tc.nano || window != tc.window || ok != tc.ok {
				t.Errorf("CPURate = %d, %v, %v; want %d, %v, %v", nano, window, ok, tc.nano, tc.window, tc.ok)
			}
		})
	}
}

// statsRuntime is a fake runtime whose one pod's container uses half a
// core and 64 MiB, read from the clock.
type statsRuntime struct {
	*fake.Runtime
	clk   *clocktesting.FakeClock
	start time.Time

	mu      sync.Mutex
	running bool
}

func (r *statsRuntime) PodStats(context.Context) ([]runtime.PodStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.running {
		return nil, nil
	}
	now := r.clk.Now()
	return []runtime.PodStats{{UID: "u1", Namespace: "default", Name: "web", Containers: []runtime.ContainerStats{{
		Name: "app", ID: "c1",
		CPU:    runtime.CPUUsage{Time: now, UsageCoreNanoSeconds: uint64(now.Sub(r.start)) / 2},
		Memory: runtime.MemoryUsage{Time: now, WorkingSetBytes: 64 << 20, UsageBytes: 80 << 20},
	}}}}, nil
}

func TestPodMetrics(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := &statsRuntime{Runtime: fake.New(clk), clk: clk, start: clk.Now(), running: true}
	a := New(ctx, Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { cancel(); a.Wait() })
	clk.Step(10 * time.Second)

	check := func(got []wire.PodMetrics, window time.Duration) {
		t.Helper()
		if len(got) != 1 || got[0].Name != "web" || len(got[0].Containers) != 1 {
			t.Fatalf("PodMetrics = %+v, want web's app", got)
		}
		u := got[0].Containers[0].Usage
		if cpu, mem := u.Cpu().MilliValue(), u.Memory().Value(); cpu != 500 || mem != 64<<20 {
			t.Errorf("usage = %dm, %d bytes; want 500m, 64Mi", cpu, mem)
		}
		if got[0].Window.Duration != window || !got[0].Timestamp.Time.Equal(clk.Now()) {
			t.Errorf("window %v at %v, want %v at %v", got[0].Window.Duration, got[0].Timestamp, window, clk.Now())
		}
	}

	// The first call has no earlier sample: it waits a window for a
	// second.
	type result struct {
		pm  []wire.PodMetrics
		err error
	}
	done := make(chan result, 1)
	go func() {
		pm, err := a.PodMetrics(ctx, "default", "")
		done <- result{pm, err}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !clk.HasWaiters() {
		if time.Now().After(deadline) {
			t.Fatal("PodMetrics never waited for a second sample")
		}
		goruntime.Gosched()
	}
	clk.Step(UsageWindow)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	check(r.pm, UsageWindow)

	// Later calls compute the rate since the sample before, at once.
	clk.Step(3 * time.Second)
	pm, err := a.PodMetrics(ctx, "default", "web")
	if err != nil {
		t.Fatal(err)
	}
	check(pm, 3*time.Second)

	// A call within the window keeps the rate over the last full one.
	clk.Step(UsageWindow / 2)
	if pm, err = a.PodMetrics(ctx, "", ""); err != nil || pm[0].Window.Duration != 3*time.Second {
		t.Fatalf("PodMetrics within the window = %+v, %v; want the 3s window kept", pm, err)
	}

	// Other namespaces and names are left out; an unknown name is
	// NotFound.
	if pm, err = a.PodMetrics(ctx, "other", ""); err != nil || len(pm) != 0 {
		t.Errorf("PodMetrics(other) = %+v, %v; want none", pm, err)
	}
	if _, err = a.PodMetrics(ctx, "default", "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("PodMetrics(nope): err = %v, want ErrNotFound", err)
	}

	// A container that ends is forgotten: the samples stay bounded by the
	// running ones.
	rt.mu.Lock()
	rt.running = false
	rt.mu.Unlock()
	if _, err = a.PodMetrics(ctx, "", ""); err != nil {
		t.Fatal(err)
	}
	if n := len(a.usage.byID); n != 0 {
		t.Errorf("%d samples kept after the container ended, want 0", n)
	}
}

func TestPodMetricsWithoutStats(t *testing.T) {
	a, _ := newAgent(t)
	if _, err := a.PodMetrics(context.Background(), "", ""); !errors.Is(err, ErrNoStats) {
		t.Errorf("err = %v, want ErrNoStats", err)
	}
}
