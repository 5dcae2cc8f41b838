package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/client"
)

// Scenarios, in the order they run.
const (
	ScenarioStart = "start"
	ScenarioStop  = "stop"
	ScenarioScale = "scale"
	ScenarioChurn = "churn"
)

// Scenarios lists every scenario, in the order Run runs them.
var Scenarios = []string{ScenarioStart, ScenarioStop, ScenarioScale, ScenarioChurn}

// Options say what to measure, and how much of it.
type Options struct {
	// Podward is the podward binary to run as `podward serve`.
	Podward string
	// Runtime is "process" or "cri"; CRIEndpoint the CRI runtime's socket.
	Runtime     string
	CRIEndpoint string
	// Dir holds the agent's root, socket and log and the stamps; empty: a
	// new temporary directory, removed afterwards.
	Dir string
	// Only lists the scenarios to run (Scenarios' names); empty: all.
	Only []string

	// StartPods pods are started one after another; ParallelRounds
	// rounds of Parallel pods at once.
	StartPods, Parallel, ParallelRounds int
	// StopPods pods are stopped with TERM-responsive containers,
	// DeferPods with two defer containers.
	StopPods, DeferPods int
	// Scale lists the pod counts of the scale scenario (3 containers
	// each); ScaleProbePods the count with exec readiness probes (0:
	// none). Idle is each idle window, Settle the wait before it.
	Scale          []int
	ScaleProbePods int
	Idle, Settle   time.Duration
	// ChurnWindow is how long churn creates pods, ChurnInFlight how many
	// cycles run at once.
	ChurnWindow   time.Duration
	ChurnInFlight int
	// Concurrency bounds the API calls in flight when many pods are
	// created or deleted at once.
	Concurrency int
	// PodTimeout bounds each wait on one pod (or one batch of them).
	PodTimeout time.Duration
	// ProfileDir, when set, runs the agent with --pprof and writes its
	// profiles there: for each scale size, CPU profiles of the apply and
	// of the delete of all (in chunks: see profileChunk), and the heap and
	// goroutines at the end of each idle window.
	ProfileDir string

	// Progress gets a line per phase; nil: none.
	Progress io.Writer
}

// Defaults are the sizes of issue 14's measurements.
func Defaults() Options {
	return Options{
		Runtime:   "process",
		StartPods: 100, Parallel: 20, ParallelRounds: 5,
		StopPods: 100, DeferPods: 100,
		Scale: []int{100, 300, 1000}, ScaleProbePods: 300,
		Idle: 60 * time.Second, Settle: 5 * time.Second,
		ChurnWindow: 60 * time.Second, ChurnInFlight: 50,
		Concurrency: 50,
		PodTimeout:  5 * time.Minute,
	}
}

func (o Options) validate() error {
	switch o.Runtime {
	case "process":
	case "cri":
		if o.CRIEndpoint == "" {
			return errors.New("--runtime cri needs --cri-endpoint")
		}
	default:
		return fmt.Errorf("runtime %q: want process or cri", o.Runtime)
	}
	for _, s := range o.Only {
		if !slices.Contains(Scenarios, s) {
			return fmt.Errorf("scenario %q: want one of %s", s, strings.Join(Scenarios, ", "))
		}
	}
	for name, v := range map[string]int{"start pods": o.StartPods, "parallel": o.Parallel, "parallel rounds": o.ParallelRounds,
		"stop pods": o.StopPods, "defer pods": o.DeferPods, "churn in flight": o.ChurnInFlight, "concurrency": o.Concurrency} {
		if v < 1 {
			return fmt.Errorf("%s: %d, want at least 1", name, v)
		}
	}
	for _, n := range o.Scale {
		if n < 1 {
			return fmt.Errorf("scale: %d pods, want at least 1", n)
		}
	}
	if o.Idle <= 0 || o.ChurnWindow <= 0 || o.PodTimeout <= 0 {
		return errors.New("idle, churn window and pod timeout must be positive")
	}
	return nil
}

func (o Options) runs(s string) bool { return len(o.Only) == 0 || slices.Contains(o.Only, s) }

// maxPods is the agent's --max-pods: room for the biggest scenario.
func (o Options) maxPods() int {
	n := max(o.Parallel, o.ChurnInFlight, o.ScaleProbePods, 110)
	for _, s := range o.Scale {
		n = max(n, s)
	}
	return n + 10
}

// run is one bench run: its agent, the watch of its pods, its stamps.
type run struct {
	o      Options
	id     string
	dir    string
	env    podEnv
	agent  *agent
	pods   *tracker
	stamps *stamps
	floor  floor
	prof   *profiler // nil: no profiles
	seq    int       // names: the next pod number (Run's goroutine only)
	mu     sync.Mutex
}

// name returns a new pod name with prefix; names are never reused.
func (r *run) name(prefix string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq++
	return prefix + "-" + strconv.Itoa(r.seq)
}

func (r *run) progress(format string, args ...any) {
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, "bench: "+format+"\n", args...)
	}
}

// Run measures the scenarios of o against an agent it starts, and stops
// it again. A scenario that fails ends the run: Run returns the results
// so far (the failure in Results.Error) with the error. ctx ending stops
// the run the same way.
func Run(ctx context.Context, o Options) (res *Results, err error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	r := &run{o: o, id: newRunID()}
	if r.dir, err = workDir(o.Dir); err != nil {
		return nil, err
	}
	if o.Dir == "" {
		defer os.RemoveAll(r.dir)
	}
	stampDir := filepath.Join(r.dir, "stamps")
	if o.Runtime == "cri" {
		r.env = criEnv(stampDir, r.id)
	} else {
		r.env = processEnv(stampDir, r.id)
	}
	if r.stamps, err = newStamps(stampDir); err != nil {
		return nil, err
	}
	defer r.stamps.close()

	res = &Results{Version: 1, When: time.Now().UTC().Truncate(time.Second), Runtime: o.Runtime, Machine: readMachine()}
	args := []string{"--max-pods", strconv.Itoa(o.maxPods()), "--runtime", o.Runtime}
	if o.Runtime == "cri" {
		args = append(args, "--cri-endpoint", o.CRIEndpoint)
	}
	if o.ProfileDir != "" {
		args = append(args, "--pprof")
	}
	r.progress("starting %s serve %s (in %s)", o.Podward, strings.Join(args, " "), r.dir)
	if r.agent, err = startAgent(ctx, o.Podward, r.dir, args); err != nil {
		return nil, err
	}
	defer func() {
		if e := r.finish(); e != nil && err == nil {
			err = e
		}
	}()
	res.Agent = AgentInfo{Binary: o.Podward, PID: r.agent.pid, Root: r.agent.root, Log: r.agent.log}
	if r.prof, err = newProfiler(o.ProfileDir, r.agent.socket); err != nil {
		return nil, err
	}
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	if r.pods, err = startTracker(wctx, r.agent.client, namespace); err != nil {
		return nil, err
	}
	if o.runs(ScenarioScale) {
		// A fresh agent with no pods: before anything ran on it.
		r.progress("idle with no pods, %v", o.Idle)
		idle, err := r.idle(ctx, 0, "empty")
		if err != nil {
			return nil, err
		}
		res.Empty = &idle
	}
	if o.Runtime == "cri" {
		if r.floor, err = newCRIFloor(ctx, o.CRIEndpoint, r.env, r.id, filepath.Join(r.dir, "floor-logs")); err != nil {
			return nil, err
		}
	} else {
		r.floor = processFloor{env: r.env}
	}
	defer r.floor.close()
	if err := r.warmUp(ctx); err != nil {
		return nil, err
	}
	err = r.scenarios(ctx, res)
	if err != nil {
		res.Error = err.Error()
	}
	res.Machine.LoadAfter = readLoad()
	res.Targets = targets(res)
	return res, err
}

// scenarios runs the scenarios o selects, in their order, into res; the
// first that fails ends them.
func (r *run) scenarios(ctx context.Context, res *Results) error {
	steps := []struct {
		name string
		run  func(context.Context, *Results) error
	}{
		{ScenarioStart, r.startScenario},
		{ScenarioStop, r.stopScenario},
		{ScenarioScale, r.scaleScenario},
		{ScenarioChurn, r.churnScenario},
	}
	for _, s := range steps {
		if !r.o.runs(s.name) {
			continue
		}
		if err := s.run(ctx, res); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

func newRunID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// workDir is dir, created, or a new temporary directory. A unix socket's
// path must fit in 108 bytes: the temporary one is short.
func workDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "podward-bench-")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if len(filepath.Join(dir, "agent.sock")) > 100 {
		return "", fmt.Errorf("--dir %s: too long for the agent's socket path", dir)
	}
	return dir, nil
}

// warmUp runs one start pod through the agent and the floor, unmeasured:
// the first pod pays for the page cache, the image pull (CRI), the
// first-use costs of the agent.
func (r *run) warmUp(ctx context.Context) error {
	r.progress("warm-up pod")
	if _, err := r.startSample(ctx); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	if _, err := r.floorStartSample(ctx); err != nil {
		return fmt.Errorf("warm-up of the floor: %w", err)
	}
	return nil
}

// finish deletes what is left of the run's pods, stops the agent, and
// kills any process of the run still there (a bench that failed midway).
func (r *run) finish() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var errs []error
	if list, err := r.agent.client.ListPods(ctx, namespace, client.ListOptions{}); err == nil && len(list.Items) > 0 {
		var names []string
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		if err := r.deleteAll(ctx, names, true); err != nil {
			errs = append(errs, fmt.Errorf("delete the pods left: %w", err))
		}
	}
	if err := r.agent.stop(time.Minute); err != nil {
		errs = append(errs, err)
	}
	left, _ := FindProcs(func(argv []string, env func() []string) bool {
		return shimOf(r.agent.root)(argv, env) || markedWith(r.env.marker())(argv, env)
	})
	for _, p := range left {
		_ = syscall.Kill(p.PID, syscall.SIGKILL)
	}
	if len(left) > 0 {
		errs = append(errs, fmt.Errorf("%d processes of the run were left: killed", len(left)))
	}
	return errors.Join(errs...)
}

// forEach runs fn(i) for i in [0, n) with at most conc at once, and
// returns the first error (the others still run to their end).
func forEach(n, conc int, fn func(i int) error) error {
	sem := make(chan struct{}, conc)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			errs[i] = fn(i)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// deleteAll deletes the pods named — at most Concurrency requests in
// flight, each pod's wait not holding up the next delete — and waits until
// every one is gone; now deletes with grace period 0.
func (r *run) deleteAll(ctx context.Context, names []string, now bool) error {
	ctx, cancel := context.WithTimeout(ctx, r.o.PodTimeout)
	defer cancel()
	var opts client.DeleteOptions
	if now {
		var zero int64
		opts.GracePeriodSeconds = &zero
	}
	err := forEach(len(names), r.o.Concurrency, func(i int) error {
		if _, err := r.agent.client.DeletePod(ctx, namespace, names[i], opts); err != nil {
			return fmt.Errorf("delete %s: %w", names[i], err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return forEach(len(names), len(names), func(i int) error { return r.pods.waitGone(ctx, names[i]) })
}

// createAll creates the pods — at most Concurrency requests in flight —
// and waits until every one runs.
func (r *run) createAll(ctx context.Context, pods []*v1.Pod) error {
	ctx, cancel := context.WithTimeout(ctx, r.o.PodTimeout)
	defer cancel()
	err := forEach(len(pods), r.o.Concurrency, func(i int) error {
		if _, err := r.agent.client.CreatePod(ctx, pods[i]); err != nil {
			return fmt.Errorf("create %s: %w", pods[i].Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return forEach(len(pods), len(pods), func(i int) error { return r.pods.waitRunning(ctx, pods[i].Name) })
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
