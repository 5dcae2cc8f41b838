package bench

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/client"
)

// deferWorkTotal is what the two defer containers of a defer pod take
// together: the part of its stop that is the pod's own work.
const deferWorkTotal = 100 * time.Millisecond

// stopSample creates pod, waits until all its containers run, then
// returns the time from the delete call to the pod's removal.
func (r *run) stopSample(ctx context.Context, pod *v1.Pod) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.PodTimeout)
	defer cancel()
	if _, err := r.agent.client.CreatePod(ctx, pod); err != nil {
		return 0, fmt.Errorf("create %s: %w", pod.Name, err)
	}
	if _, err := r.stamps.wait(ctx, stampFiles(pod.Name)); err != nil {
		return 0, err
	}
	if err := r.pods.waitRunning(ctx, pod.Name); err != nil {
		return 0, err
	}
	t0 := time.Now()
	if _, err := r.agent.client.DeletePod(ctx, namespace, pod.Name, client.DeleteOptions{}); err != nil {
		return 0, fmt.Errorf("delete %s: %w", pod.Name, err)
	}
	if err := r.pods.waitGone(ctx, pod.Name); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// floorStopSample starts a floor pod, and returns the time its stop takes.
func (r *run) floorStopSample(ctx context.Context) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, r.o.PodTimeout)
	defer cancel()
	name := r.name("floor")
	p, err := r.floor.start(ctx, name)
	if err != nil {
		return 0, err
	}
	if _, err := r.stamps.wait(ctx, stampFiles(name)); err != nil {
		_ = r.floor.stop(ctx, p)
		return 0, err
	}
	t0 := time.Now()
	if err := r.floor.stop(ctx, p); err != nil {
		return 0, err
	}
	return time.Since(t0), nil
}

// stopScenario: StopPods start pods deleted (each beside a floor pod
// stopped directly), then DeferPods pods with two defer containers.
func (r *run) stopScenario(ctx context.Context, res *Results) error {
	out := &StopResult{DeferWorkMS: ms(deferWorkTotal), DeferGraceS: 60}
	loadBefore := readLoad()
	r.progress("stop: %d pods of TERM-responsive containers, each beside a floor pod", r.o.StopPods)
	var pw, fl []time.Duration
	for range r.o.StopPods {
		d, err := r.stopSample(ctx, r.env.startPod(r.name("stop"), 30))
		if err != nil {
			return err
		}
		pw = append(pw, d)
		if d, err = r.floorStopSample(ctx); err != nil {
			return err
		}
		fl = append(fl, d)
	}
	out.Term = NewCompare(pw, fl)

	r.progress("stop: %d pods with two defer containers of %ss each", r.o.DeferPods, deferWork)
	var dd []time.Duration
	for range r.o.DeferPods {
		pod, err := r.env.deferPod(r.name("defer"))
		if err != nil {
			return err
		}
		d, err := r.stopSample(ctx, pod)
		if err != nil {
			return err
		}
		dd = append(dd, d)
	}
	out.Defer = Summarize(dd)
	out.DeferExcessMS = out.Defer.P50 - out.DeferWorkMS
	out.Load = loadPair(loadBefore, readLoad())
	res.Stop = out
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
