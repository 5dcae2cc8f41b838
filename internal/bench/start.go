package bench

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// startSample creates a start pod and returns the time from the API call
// to the last of its containers' stamps; the pod is deleted (and gone)
// before it returns.
func (r *run) startSample(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.PodTimeout)
	defer cancel()
	name := r.name("start")
	pod := r.env.startPod(name, 30)
	t0 := time.Now()
	if _, err := r.agent.client.CreatePod(ctx, pod); err != nil {
		return 0, fmt.Errorf("create %s: %w", name, err)
	}
	at, err := r.stamps.wait(ctx, stampFiles(name))
	if err != nil {
		return 0, err
	}
	d := latest(at).Sub(t0)
	if err := r.pods.waitRunning(ctx, name); err != nil {
		return 0, err
	}
	return d, r.deleteAll(ctx, []string{name}, false)
}

// floorStartSample starts the same processes through the floor and
// returns the same span; the floor's pod is stopped before it returns.
func (r *run) floorStartSample(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.PodTimeout)
	defer cancel()
	name := r.name("floor")
	t0 := time.Now()
	p, err := r.floor.start(ctx, name)
	if err != nil {
		return 0, err
	}
	at, err := r.stamps.wait(ctx, stampFiles(name))
	stopErr := r.floor.stop(ctx, p)
	if err != nil {
		return 0, err
	}
	return latest(at).Sub(t0), stopErr
}

func latest(at []time.Time) time.Time {
	return slices.MaxFunc(at, func(a, b time.Time) int { return a.Compare(b) })
}

// startScenario: StartPods pods one after another, each followed by a
// floor pod (interleaved, so that a change of the machine's load meets
// both); then rounds of Parallel pods at once, each round followed by a
// round of the floor.
func (r *run) startScenario(ctx context.Context, res *Results) error {
	out := &StartResult{Containers: len(startContainers), Pod: "1 sidecar + 2 regular containers, bash writing $EPOCHREALTIME then exec sleep"}
	loadBefore := readLoad()
	var pw, fl []time.Duration
	r.progress("start: %d pods one after another, each beside a floor pod", r.o.StartPods)
	for range r.o.StartPods {
		d, err := r.startSample(ctx)
		if err != nil {
			return err
		}
		pw = append(pw, d)
		if d, err = r.floorStartSample(ctx); err != nil {
			return err
		}
		fl = append(fl, d)
	}
	out.Sequential = NewCompare(pw, fl)

	r.progress("start: %d rounds of %d pods at once", r.o.ParallelRounds, r.o.Parallel)
	pw, fl = nil, nil
	for range r.o.ParallelRounds {
		d, err := r.parallel(ctx, r.o.Parallel, r.startSampleKeep)
		if err != nil {
			return err
		}
		pw = append(pw, d.samples...)
		if err := r.deleteAll(ctx, d.names, false); err != nil {
			return err
		}
		f, err := r.parallel(ctx, r.o.Parallel, r.floorStartKeep)
		if err != nil {
			return err
		}
		fl = append(fl, f.samples...)
		if err := f.stopAll(); err != nil {
			return err
		}
	}
	out.Parallel = NewCompare(pw, fl)
	out.ParallelWidth = r.o.Parallel
	out.Load = loadPair(loadBefore, readLoad())
	res.Start = out
	return nil
}

// parallelRound is what a round of pods started at once left.
type parallelRound struct {
	names   []string
	samples []time.Duration
	stops   []func() error
}

func (p *parallelRound) stopAll() error {
	return forEach(len(p.stops), len(p.stops), func(i int) error { return p.stops[i]() })
}

// parallel runs n samples at once: each returns its pod's name, its
// span, and (for the floor) how to stop it.
func (r *run) parallel(ctx context.Context, n int, sample func(context.Context) (string, time.Duration, func() error, error)) (*parallelRound, error) {
	out := &parallelRound{}
	var mu sync.Mutex
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			name, d, stop, err := sample(ctx)
			mu.Lock()
			defer mu.Unlock()
			if name != "" {
				out.names = append(out.names, name)
			}
			if stop != nil {
				out.stops = append(out.stops, stop)
			}
			if errs[i] = err; err == nil {
				out.samples = append(out.samples, d)
			}
		})
	}
	close(start)
	wg.Wait()
	return out, errors.Join(errs...)
}

// startSampleKeep is startSample without the delete: the pod stays, for
// the round's delete.
func (r *run) startSampleKeep(ctx context.Context) (string, time.Duration, func() error, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.PodTimeout)
	defer cancel()
	name := r.name("start")
	t0 := time.Now()
	if _, err := r.agent.client.CreatePod(ctx, r.env.startPod(name, 30)); err != nil {
		return "", 0, nil, fmt.Errorf("create %s: %w", name, err)
	}
	at, err := r.stamps.wait(ctx, stampFiles(name))
	if err != nil {
		return name, 0, nil, err
	}
	return name, latest(at).Sub(t0), nil, r.pods.waitRunning(ctx, name)
}

func (r *run) floorStartKeep(ctx context.Context) (string, time.Duration, func() error, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.PodTimeout)
	defer cancel()
	name := r.name("floor")
	t0 := time.Now()
	p, err := r.floor.start(ctx, name)
	if err != nil {
		return "", 0, nil, err
	}
	stop := func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.o.PodTimeout)
		defer cancel()
		return r.floor.stop(ctx, p)
	}
	at, err := r.stamps.wait(ctx, stampFiles(name))
	if err != nil {
		return "", 0, stop, err
	}
	return "", latest(at).Sub(t0), stop, nil
}
