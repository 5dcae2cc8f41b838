package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/podward/podward/internal/client"
)

// churnSettle is how long after the last pod of the churn is gone the
// bench looks at what is left: the agent's own clean-up of a removed pod
// (its log directory, its records) follows the removal.
const churnSettle = 2 * time.Second

// Tolerances of the leak check: an fd or a few goroutines of the agent's
// own (an HTTP connection being closed, a timer) come and go.
const (
	leakFDSlack        = 2
	leakGoroutineSlack = 5
)

// churnScenario: ChurnInFlight workers each create a pod of one sleeping
// container, wait until it runs, delete it, wait until it is gone, and go
// again, for ChurnWindow; then what is left is compared with before.
func (r *run) churnScenario(ctx context.Context, res *Results) error {
	out := &ChurnResult{InFlight: r.o.ChurnInFlight, Pod: "1 container: sleep"}
	loadBefore := readLoad()
	if err := r.snapshotAgent(ctx, &out.Before); err != nil {
		return err
	}
	r.progress("churn: %d in flight for %v", r.o.ChurnInFlight, r.o.ChurnWindow)
	var (
		mu     sync.Mutex
		cycles []time.Duration
	)
	t0 := time.Now()
	deadline := t0.Add(r.o.ChurnWindow)
	err := forEach(r.o.ChurnInFlight, r.o.ChurnInFlight, func(int) error {
		for time.Now().Before(deadline) {
			c0 := time.Now()
			if err := r.churnCycle(ctx); err != nil {
				return err
			}
			if end := time.Now(); end.Before(deadline) || end.Equal(deadline) {
				mu.Lock()
				cycles = append(cycles, end.Sub(c0))
				mu.Unlock()
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	out.WindowS = r.o.ChurnWindow.Seconds()
	out.Cycles = len(cycles)
	out.CyclesPerSecond = float64(len(cycles)) / r.o.ChurnWindow.Seconds()
	out.Cycle = Summarize(cycles)

	if err := sleepCtx(ctx, churnSettle); err != nil {
		return err
	}
	if err := r.snapshotAgent(ctx, &out.After); err != nil {
		return err
	}
	if err := r.leftovers(ctx, out); err != nil {
		return err
	}
	out.Load = loadPair(loadBefore, readLoad())
	res.Churn = out
	return nil
}

func (r *run) churnCycle(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, r.o.PodTimeout)
	defer cancel()
	pod := r.env.sleepPod(r.name("churn"), 1, false)
	if _, err := r.agent.client.CreatePod(ctx, pod); err != nil {
		return fmt.Errorf("create %s: %w", pod.Name, err)
	}
	if err := r.pods.waitRunning(ctx, pod.Name); err != nil {
		return err
	}
	if _, err := r.agent.client.DeletePod(ctx, namespace, pod.Name, client.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete %s: %w", pod.Name, err)
	}
	return r.pods.waitGone(ctx, pod.Name)
}

// leftovers fills in what the churn left: pods, shims, container
// processes, and whether any of it (or the agent's fds and goroutines)
// is beyond the baseline.
func (r *run) leftovers(ctx context.Context, out *ChurnResult) error {
	list, err := r.agent.client.ListPods(ctx, namespace, client.ListOptions{})
	if err != nil {
		return err
	}
	out.PodsLeft = len(list.Items)
	// Spares idle until a start are no leftovers while the agent runs
	// (they exit with it: the run's end checks that); a shim that still
	// holds a container is.
	shims, err := FindShims(r.agent.root)
	if err != nil {
		return err
	}
	marked, err := FindProcs(markedWith(r.env.marker()))
	if err != nil {
		return err
	}
	out.ShimsLeft, out.ProcessesLeft = len(shims.Holding), len(marked)
	for _, p := range append(shims.Holding, marked...) {
		out.Left = append(out.Left, describeProc(p))
	}
	var why []string
	if out.PodsLeft > 0 {
		why = append(why, fmt.Sprintf("%d pods left", out.PodsLeft))
	}
	if out.ShimsLeft > 0 || out.ProcessesLeft > 0 {
		why = append(why, fmt.Sprintf("%d shims and %d container processes left", out.ShimsLeft, out.ProcessesLeft))
	}
	if d := out.After.FDs - out.Before.FDs; d > leakFDSlack {
		why = append(why, fmt.Sprintf("the agent holds %d more fds", d))
	}
	if b, a := out.Before.Goroutines, out.After.Goroutines; a != nil && b != nil && *a-*b > leakGoroutineSlack {
		why = append(why, fmt.Sprintf("the agent runs %d more goroutines", *a-*b))
	}
	out.Leaks = why
	out.Leaked = len(why) > 0
	return nil
}
