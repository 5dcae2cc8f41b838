package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
)

// scaleContainers is the number of containers of each scale pod.
const scaleContainers = 3

// idle measures the agent over one idle window of o.Idle, with pods pods
// (and containers containers) running: its CPU, and at the window's end
// its memory, threads, fds, goroutines and its shims' PSS; with profiles,
// its heap and goroutines then, named after prefix.
func (r *run) idle(ctx context.Context, containers int, prefix string) (Idle, error) {
	if err := sleepCtx(ctx, r.o.Settle); err != nil {
		return Idle{}, err
	}
	pid := r.agent.pid
	c0, err := ReadCPU(pid)
	if err != nil {
		return Idle{}, fmt.Errorf("agent CPU: %w", err)
	}
	t0 := time.Now()
	if err := sleepCtx(ctx, r.o.Idle); err != nil {
		return Idle{}, err
	}
	c1, err := ReadCPU(pid)
	if err != nil {
		return Idle{}, fmt.Errorf("agent CPU: %w", err)
	}
	window := time.Since(t0)
	out := Idle{
		WindowS:                window.Seconds(),
		CPUPercent:             100 * float64(c1.Own()-c0.Own()) / float64(window),
		CPUPercentWithChildren: 100 * float64(c1.WithChildren()-c0.WithChildren()) / float64(window),
	}
	if err := r.snapshotAgent(ctx, &out.Agent); err != nil {
		return Idle{}, err
	}
	if err := r.prof.snapshot(ctx, prefix); err != nil {
		return Idle{}, err
	}
	shims, err := FindShims(r.agent.root)
	if err != nil {
		return Idle{}, err
	}
	// The idle spares are the runtime's overhead too: their PSS counts.
	var pss int64
	for _, p := range shims.All() {
		if v, err := ReadPSS(p.PID); err == nil {
			pss += v
		}
	}
	out.Shims = len(shims.Holding)
	out.ShimPSSMB = mb(pss)
	if containers > 0 {
		out.ShimPSSPerContainerMB = out.ShimPSSMB / float64(containers)
	}
	return out, nil
}

// snapshotAgent reads the agent's process now.
func (r *run) snapshotAgent(ctx context.Context, s *AgentSnapshot) error {
	pid := r.agent.pid
	st, err := ReadStatus(pid)
	if err != nil {
		return fmt.Errorf("agent status: %w", err)
	}
	pss, err := ReadPSS(pid)
	if err != nil {
		return fmt.Errorf("agent PSS: %w", err)
	}
	// The bench's own idle connections are the agent's fds too.
	r.agent.client.Close()
	fds, err := CountFDs(pid)
	if err != nil {
		return fmt.Errorf("agent fds: %w", err)
	}
	s.RSSMB, s.PSSMB, s.Threads, s.FDs = mb(st.RSSBytes), mb(pss), st.Threads, fds
	s.AnonMB, s.FileMB = mb(st.AnonBytes), mb(st.FileBytes)
	if n, ok := r.agent.goroutines(ctx); ok {
		s.Goroutines = &n
	}
	if fi, err := os.Stat(filepath.Join(r.agent.root, "state.db")); err == nil {
		s.StoreBytes = fi.Size()
	}
	return nil
}

func mb(b int64) float64 { return float64(b) / (1 << 20) }

// scalePoint runs n pods of 3 sleeping containers (with exec readiness
// probes when probe is set): the time until all run, an idle window, the
// time until a delete of all is over.
func (r *run) scalePoint(ctx context.Context, n int, probe bool) (ScalePoint, error) {
	out := ScalePoint{Pods: n, Containers: n * scaleContainers, ReadinessProbe: probe}
	loadBefore := readLoad()
	pods := make([]*v1.Pod, n)
	names := make([]string, n)
	for i := range pods {
		pods[i] = r.env.sleepPod(r.name(fmt.Sprintf("scale%d", n)), scaleContainers, probe)
		names[i] = pods[i].Name
	}
	r.progress("scale: %d pods × %d containers (readiness probes: %v)", n, scaleContainers, probe)
	prefix := fmt.Sprintf("scale%d", n)
	if probe {
		prefix += "-probe"
	}
	stopProfile := r.prof.cpu(ctx, prefix+"-apply")
	t0 := time.Now()
	if err := r.createAll(ctx, pods); err != nil {
		return out, errors.Join(err, stopProfile())
	}
	out.AllRunningS = time.Since(t0).Seconds()
	if err := stopProfile(); err != nil {
		return out, err
	}
	r.progress("scale: all %d running after %.1fs; idle %v", n, out.AllRunningS, r.o.Idle)
	idle, err := r.idle(ctx, out.Containers, prefix+"-idle")
	if err != nil {
		return out, err
	}
	out.Idle = idle
	stopProfile = r.prof.cpu(ctx, prefix+"-delete")
	t0 = time.Now()
	if err := r.deleteAll(ctx, names, false); err != nil {
		return out, errors.Join(err, stopProfile())
	}
	out.DeleteAllS = time.Since(t0).Seconds()
	if err := stopProfile(); err != nil {
		return out, err
	}
	out.Load = loadPair(loadBefore, readLoad())
	return out, nil
}

func (r *run) scaleScenario(ctx context.Context, res *Results) error {
	out := &ScaleResult{}
	// Kept as they come: a size that fails leaves the ones before it.
	res.Scale = out
	for _, n := range r.o.Scale {
		p, err := r.scalePoint(ctx, n, false)
		if err != nil {
			return fmt.Errorf("%d pods: %w", n, err)
		}
		out.Points = append(out.Points, p)
	}
	if r.o.ScaleProbePods > 0 {
		p, err := r.scalePoint(ctx, r.o.ScaleProbePods, true)
		if err != nil {
			return fmt.Errorf("%d pods with readiness probes: %w", r.o.ScaleProbePods, err)
		}
		out.Probe = &p
	}
	return nil
}
