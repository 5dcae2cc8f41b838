package podworker

import (
	"context"
	"fmt"
	"sort"
	"syscall"
	"time"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/timeline"
)

// recover reconciles a restored worker with the instances the runtime has,
// container by container (recoverContainer).
func (pw *podWorker) recover(ctx context.Context) error {
	lister, ok := pw.w.cfg.Runtime.(runtime.ContainerLister)
	if !ok {
		return fmt.Errorf("the runtime cannot list containers: pod %s cannot be resumed", pw.pod.Key())
	}
	list, err := lister.ListContainers(ctx, pw.uid)
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", pw.pod.Key(), err)
	}
	byName := map[string][]runtime.ContainerStatus{}
	for _, st := range list {
		byName[st.Container] = append(byName[st.Container], st)
	}
	now := pw.w.cfg.Clock.Now()
	for _, c := range pw.ctrs.list {
		insts := byName[c.ref.Name]
		sort.Slice(insts, func(i, j int) bool { return insts[i].Attempt < insts[j].Attempt })
		pw.recoverContainer(ctx, c, insts, now)
	}
	return nil
}

// recoverContainer reconciles one container with its instances, oldest
// first: a running instance is adopted (never started again), an exit that
// happened while the agent was down is recorded with its real exit code, a
// start that may have happened is found or known not to have, and an
// instance the checkpoint believed running but the runtime lost is counted
// as exited with an unknown status. A stop the agent was in the middle of
// goes on with its signal.
func (pw *podWorker) recoverContainer(ctx context.Context, c *ctr, insts []runtime.ContainerStatus, now time.Time) {
	// Never two running instances of one container: keep the newest.
	for i := 0; i+1 < len(insts); i++ {
		if insts[i].Exit == nil {
			pw.log.Warn("killing a stray instance", "container", c.ref.Name, "id", insts[i].ID)
			if err := pw.w.cfg.Runtime.Signal(ctx, insts[i].ID, syscall.SIGKILL); err != nil {
				pw.log.Error("kill stray instance", "container", c.ref.Name, "err", err)
			}
		}
	}
	pending := c.pending
	c.pending = nil
	if len(insts) == 0 {
		if c.obs.State == planner.Running {
			c.exited(runtime.ExitStatus{ExitCode: 137, Reason: runtime.ReasonStatusUnknown, Message: "The container could not be located when the agent restarted", FinishedAt: now})
			pw.noteExit(c)
		}
		return
	}
	latest := insts[len(insts)-1]
	if latest.ID != c.id {
		pw.adopt(c, latest, pending)
	}
	if latest.Exit != nil && c.obs.State == planner.Running {
		pw.observeExit(runtime.Event{PodUID: pw.uid, Container: c.ref.Name, ID: latest.ID, Exit: *latest.Exit})
	}
	if c.obs.State != planner.Running {
		return
	}
	if !c.obs.StopRequestedAt.IsZero() && c.obs.SignalledAt.IsZero() && !c.obs.Killed {
		// The agent stopped during the preStop hook (or right before the
		// signal): the hook is not run twice; the stop goes on with its
		// signal.
		killAt := c.obs.KillAt
		if pw.ending.term != nil {
			killAt = pw.ending.term.Deadline
		}
		pw.signalStop(ctx, pw.pod, c.ref, c.id, pw.pod.Container(c.ref), killAt)
		c.obs.SignalledAt = now
		pw.noteSignal(c, now)
	}
	if !c.obs.Started {
		// Its postStart hook (or startup probe) was running when the agent
		// stopped; its outcome is lost with the agent. Like the kubelet,
		// which never runs a hook twice, count the container as started.
		c.obs.Started, c.obs.StartedOnce = true, true
	}
	if c.obs.StopRequestedAt.IsZero() {
		// The readiness verdict on this instance is kept (the
		// checkpoint's); its probes go on from it.
		pw.resumeProbes(c, pw.pod.Container(c.ref))
	}
}

// adopt takes over an instance that started but whose start the agent died
// before recording; pending (the write-ahead of that start) gives its
// backoff steps.
func (pw *podWorker) adopt(c *ctr, inst runtime.ContainerStatus, pending *pendingStart) {
	if c.obs.State == planner.Exited {
		c.last = c.terminatedState()
	}
	steps := c.obs.BackoffSteps
	if pending != nil && pending.attempt == inst.Attempt {
		steps = pending.backoffSteps
	}
	c.id = inst.ID
	// The checkpoint's readiness verdict was another instance's.
	c.ready = false
	c.obs = planner.Observed{
		State: planner.Running, Started: true, StartedOnce: true, StartedAt: inst.StartedAt,
		Restarts: inst.Attempt, BackoffSteps: steps,
	}
	pw.noteInstance(timeline.NoteStarted, c, inst.StartedAt)
	pw.log.Info("adopted a container started before the restart", "container", c.ref.Name, "attempt", inst.Attempt)
}

// Restore resumes a pod after an agent restart from the checkpoint its
// worker saved: the worker takes the runtime's instances as they are and
// goes on from there. It fails when a worker for the pod exists already or
// the checkpoint cannot be read.
func (w *Workers) Restore(pod *model.Pod, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pods[pod.UID]; ok {
		return fmt.Errorf("pod %s has a worker already", pod.UID)
	}
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("restore pod %s: %w", pod.Key(), err)
	}
	pw := newPodWorker(w, pod)
	if err := pw.restore(data); err != nil {
		return fmt.Errorf("restore pod %s: %w", pod.Key(), err)
	}
	pw.storeStatus(w.cfg.Clock.Now())
	w.pods[pod.UID] = pw
	w.wg.Add(1)
	go pw.run(w.ctx)
	pw.inbox.ring()
	return nil
}
