package podworker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/timeline"
)

// writeAhead records, and checkpoints, what the actions are about to do,
// so that an agent that dies half-way neither repeats a stop nor loses a
// start. It returns the actions to carry out now.
//
// When the checkpoint cannot be saved (a full disk), the stops and kills
// are carried out all the same, since stopping is always safe: their marks
// stay in memory, so that this agent never sends a stop signal or a kill
// twice, and the checkpoint is saved again at the next try (see save). An
// agent that restarts before a save succeeds reads the last checkpoint that
// was saved, without the marks, and begins such a stop again: at worst the
// container gets its stop signal a second time (harmless: it is stopping
// already) and its preStop hook runs again, as the kubelet's would after a
// restart. Starts wait, their marks undone: a start the checkpoint does not
// record could be made twice by a restarted agent; the next plan brings
// them back once a save succeeds.
func (pw *podWorker) writeAhead(actions []planner.Action) []planner.Action {
	now := pw.w.cfg.Clock.Now()
	for _, a := range actions {
		c := pw.ctrs.byName[a.Container.Name]
		switch a.Kind {
		case planner.Start:
			attempt := 0
			if c.obs.State != planner.Waiting {
				attempt = c.obs.Restarts + 1
			}
			c.pending = &pendingStart{attempt: attempt, backoffSteps: a.BackoffSteps}
		case planner.Stop:
			c.obs.StopRequestedAt = now
			if a.Reason.ContainerStop() {
				// A stop for a failed probe or postStart hook, or a
				// resize: its kill time and why, for the kill and the
				// restart that follow (also after an agent restart).
				c.obs.KillAt = a.KillAt
				c.obs.ProbeKilled = a.Reason == planner.ReasonProbeFailed
				c.obs.ResizeRestart = a.Reason == planner.ReasonResize
			}
			if !pw.hasPreStop(c, a) {
				// The signal follows at once: recorded with the intent,
				// so that a crash in between never sends it twice nor
				// restarts the prompt-kill time.
				c.obs.SignalledAt = now
			}
		case planner.Kill:
			c.obs.Killed = true
		}
	}
	if err := pw.save(); err == nil {
		return actions
	}
	// Only the starts wait for the record.
	var stops []planner.Action
	for _, a := range actions {
		if a.Kind == planner.Start {
			pw.ctrs.byName[a.Container.Name].pending = nil
			continue
		}
		stops = append(stops, a)
	}
	return stops
}

// execute carries out one action. It reports whether the pod's state
// changed; a start put off for its image says when to try again (retry).
func (pw *podWorker) execute(ctx context.Context, a planner.Action) (changed bool, retry time.Time) {
	c := pw.ctrs.byName[a.Container.Name]
	switch a.Kind {
	case planner.Start:
		return pw.start(ctx, c, a)
	case planner.Stop:
		pw.stop(ctx, c, a)
		return true, time.Time{}
	case planner.Kill:
		if err := pw.w.cfg.Runtime.Signal(ctx, c.id, syscall.SIGKILL); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			pw.log.Error("kill container", "container", c.ref.Name, "err", err)
		}
		pw.noteInstance(timeline.NoteKilled, c, pw.w.cfg.Clock.Now())
		// The GracePeriodExceeded event names the kills at the deadline;
		// a kill after the 2 s that follow a stop signal has its own.
		if !pw.ending.killedAtDeadline(c.ref.Name) {
			pw.eventf(c.ref.FieldPath(), events.Normal, events.Killing, "Killing container %s: it did not stop in time", c.ref.Name)
		}
		return true, time.Time{}
	}
	return false, time.Time{}
}

// start starts a container's next instance, its image first (see
// ensureImage). It reports whether the pod's state changed; when the image
// is not there yet, retry is when to try again.
func (pw *podWorker) start(ctx context.Context, c *ctr, a planner.Action) (changed bool, retry time.Time) {
	sc, ok, retry := pw.beginStart(ctx, c, a)
	if !ok {
		return false, retry
	}
	sc.call(pw.alloc.pod, pw.w.cfg.Runtime)
	return pw.endStart(ctx, sc)
}

// startCall is the runtime's part of one start, which may run beside the
// other starts of a plan (startAll): it reads the pod and writes only its
// own result.
type startCall struct {
	c       *ctr
	a       planner.Action
	ctx     context.Context
	attempt int
	inst    runtime.Container
	err     error
}

// call starts the instance of pod, the pod as the node allocated its
// resources (allocState.pod).
func (sc *startCall) call(pod *model.Pod, rt runtime.Runtime) {
	sc.inst, sc.err = rt.StartContainer(sc.ctx, pod, sc.c.ref, sc.attempt)
}

// startAll carries out starts, the runtime's calls side by side when the
// runtime takes them so (runtime.ConcurrentStarter), each start's state
// changes applied by this goroutine, in the plan's order, once every call
// returned: the worker's state has no other owner. It reports as execute
// does, for all of them.
func (pw *podWorker) startAll(ctx context.Context, starts []planner.Action) (changed bool, retry time.Time) {
	cs, ok := pw.w.cfg.Runtime.(runtime.ConcurrentStarter)
	if len(starts) < 2 || !ok || !cs.ConcurrentStarts() {
		for _, a := range starts {
			ch, r := pw.start(ctx, pw.ctrs.byName[a.Container.Name], a)
			changed, retry = changed || ch, earliest(retry, r)
		}
		return changed, retry
	}
	var calls []*startCall
	for _, a := range starts {
		sc, ok, r := pw.beginStart(ctx, pw.ctrs.byName[a.Container.Name], a)
		retry = earliest(retry, r)
		if ok {
			calls = append(calls, sc)
		}
	}
	var wg sync.WaitGroup
	for _, sc := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc.call(pw.alloc.pod, pw.w.cfg.Runtime)
		}()
	}
	wg.Wait()
	for _, sc := range calls {
		ch, r := pw.endStart(ctx, sc)
		changed, retry = changed || ch, earliest(retry, r)
	}
	return changed, retry
}

// beginStart is a start up to the runtime's call: ok says whether the call
// is to be made; when not, retry is when to try again (zero: on news).
//
// While the pod syncs, the start runs under the setup context, so that a
// kill cancels it, and it does not happen at all once a kill is recorded.
// The kill flag is read from the inbox, not from the goroutine's own
// state: a kill recorded while this goroutine is busy (not yet drained)
// must stop the starts of the same step.
func (pw *podWorker) beginStart(ctx context.Context, c *ctr, a planner.Action) (sc *startCall, ok bool, retry time.Time) {
	startCtx := ctx
	if pw.phase == Syncing {
		if pw.inbox.killRecorded() {
			return nil, false, time.Time{}
		}
		startCtx = pw.setup.ctx
	}
	attempt := 0
	if c.obs.State != planner.Waiting {
		attempt = c.obs.Restarts + 1
	}
	if ok, wake := pw.ensureImage(startCtx, c, pw.pod.Container(c.ref)); !ok {
		c.pending = nil
		return nil, false, wake
	}
	pw.w.cfg.Metrics.ContainerStarted(c.ref.Role)
	return &startCall{c: c, a: a, ctx: startCtx, attempt: attempt}, true, time.Time{}
}

// endStart records what the runtime's call of sc brought.
func (pw *podWorker) endStart(ctx context.Context, sc *startCall) (changed bool, retry time.Time) {
	c, a, attempt, inst, err := sc.c, sc.a, sc.attempt, sc.inst, sc.err
	spec := pw.pod.Container(c.ref)
	c.pending = nil
	if err != nil && sc.ctx.Err() != nil {
		return false, time.Time{}
	}
	var configErr *runtime.ContainerConfigError
	if errors.As(err, &configErr) {
		pw.configFailed(c, configErr)
		return true, time.Time{}
	}
	c.configErr = ""
	if err != nil {
		pw.w.cfg.Metrics.ContainerStartFailed(c.ref.Role, StartErrorRunContainer)
	}
	if c.obs.State == planner.Exited {
		c.last = c.terminatedState()
	}
	now := pw.w.cfg.Clock.Now()
	c.obs = planner.Observed{
		State: planner.Running,
		// A restart of all containers starts the gating over: a sidecar
		// holds up what follows it until it has started again.
		StartedOnce:  c.obs.StartedOnce && !c.obs.RestartedAll,
		Restarts:     attempt,
		BackoffSteps: a.BackoffSteps,
	}
	if err != nil {
		// A container that cannot start ended at once; the restart
		// policy and backoff apply to it like to any other exit.
		c.id = ""
		c.obs.State = planner.Exited
		c.obs.StartedAt, c.obs.FinishedAt = now, now
		c.obs.ExitCode = 128
		c.exit = runtime.ExitStatus{ExitCode: 128, Reason: runtime.ReasonStartError, Message: err.Error(), FinishedAt: now}
		pw.noteInstance(timeline.NoteStarted, c, now)
		pw.noteExit(c)
		pw.eventf(c.ref.FieldPath(), events.Warning, events.Failed, "Error: %v", err)
		pw.log.Error("start container", "container", c.ref.Name, "err", err)
		return true, time.Time{}
	}
	c.id = inst.ID
	c.obs.StartedAt = inst.StartedAt
	// It has what the node allocated to it (the pod the runtime was
	// handed, alloc.pod).
	c.applied = pw.alloc.pod.Container(c.ref).Resources.DeepCopy()
	pw.noteInstance(timeline.NoteStarted, c, inst.StartedAt)
	// The container counts as started once its process runs and its
	// postStart hook has finished (the startupProbe will gate this too).
	if spec.Lifecycle != nil && spec.Lifecycle.PostStart != nil {
		pw.startPostStart(ctx, c, spec.Lifecycle.PostStart)
	} else {
		pw.running(c)
	}
	pw.eventf(c.ref.FieldPath(), events.Normal, events.Created, "Created container %s", c.ref.Name)
	if c.ref.Role == model.RoleDefer {
		pw.eventf(c.ref.FieldPath(), events.Normal, events.DeferStarted, "Started defer container %s (%d of %d)", c.ref.Name, c.ref.Index+1, len(pw.pod.Defer))
	} else {
		pw.eventf(c.ref.FieldPath(), events.Normal, events.Started, "Started container %s", c.ref.Name)
	}
	pw.log.Info("container started", "container", c.ref.Name, "attempt", attempt, "image", spec.Image)
	return true, time.Time{}
}

// stop begins a container's graceful stop: its Killing event, the preStop
// hook (in the background, bounded by the kill time) then the stop signal.
// The time of the signal comes back to the pod's goroutine (SignalledAt),
// since a prompt kill counts from it. SIGKILL, if needed, comes from a later
// plan.
func (pw *podWorker) stop(ctx context.Context, c *ctr, a planner.Action) {
	spec := pw.pod.Container(c.ref)
	pw.removeProbes(c)
	pw.noteInstance(timeline.NoteStopRequested, c, c.obs.StopRequestedAt)
	pw.eventf(c.ref.FieldPath(), events.Normal, events.Killing, "%s", pw.stopMessage(c, a.Reason))
	var hook *v1.LifecycleHandler
	if pw.hasPreStop(c, a) {
		hook = spec.Lifecycle.PreStop
	}
	if hook == nil {
		pw.signalStop(ctx, pw.pod, c.ref, c.id, spec, a.KillAt) // SignalledAt: see writeAhead
		pw.noteSignal(c, c.obs.SignalledAt)
		return
	}
	pod, ref, id, killAt := pw.pod, c.ref, c.id, a.KillAt
	// The hook ends at killAt, or earlier when the deadline is brought
	// forward meanwhile (cutPreStopHooks); the signal follows either way.
	hctx, cut := context.WithCancelCause(ctx)
	c.preStopCut = cut
	pw.w.wg.Add(1)
	go func() {
		defer pw.w.wg.Done()
		defer cut(nil)
		err := pw.runHook(hctx, pod, ref, spec, hook, killAt)
		if ctx.Err() != nil {
			// The agent is stopping, not the pod: the container keeps
			// running and the next agent goes on from here.
			return
		}
		timeUp := errors.Is(context.Cause(hctx), errHookTimeUp) || (!killAt.IsZero() && !pw.w.cfg.Clock.Now().Before(killAt))
		switch {
		case err != nil && timeUp:
			pw.eventFor(pod, ref.FieldPath(), events.Warning, events.FailedPreStopHook, "PreStop hook for container %s was cut off: it did not complete within the grace period", ref.Name)
		case err != nil:
			pw.eventFor(pod, ref.FieldPath(), events.Warning, events.FailedPreStopHook, "PreStop hook for container %s failed: %v", ref.Name, err)
		}
		pw.signalStop(ctx, pod, ref, id, spec, killAt)
		pw.inbox.push(input{kind: inputStopSignalled, signal: signalNote{container: ref.Name, id: id, at: pw.w.cfg.Clock.Now()}})
	}()
}

// errHookTimeUp is why a preStop hook is cut off past the deadline.
var errHookTimeUp = errors.New("the grace period is over")

// stopMessage is the Killing event of a stop for reason: the kubelet's
// words for the stops a container's own state asks for (a failed probe or
// postStart hook, a resize that restarts it), podward's for the others.
func (pw *podWorker) stopMessage(c *ctr, reason planner.StopReason) string {
	msg := "Stopping container " + c.ref.Name
	switch reason {
	case planner.ReasonProbeFailed:
		return pw.probeKillMessage(c, c.obs.ProbeFailed)
	case planner.ReasonPostStartHookFailed:
		return "FailedPostStartHook"
	case planner.ReasonResize:
		return fmt.Sprintf("Container %s resize requires restart", c.ref.Name)
	case planner.ReasonDeferDone:
		msg += " (defer containers completed)"
	case planner.ReasonGracePeriodExceeded:
		msg += " (grace period exceeded)"
	case planner.ReasonRestartAllContainers:
		msg += " (restarting all containers)"
	}
	return msg
}

// hasPreStop says whether a stop action runs the container's preStop hook.
func (pw *podWorker) hasPreStop(c *ctr, a planner.Action) bool {
	spec := pw.pod.Container(c.ref)
	return a.PreStop && spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil
}

// signalStop sends an instance its stop signal; background work may call
// it, so the pod comes as an argument.
func (pw *podWorker) signalStop(ctx context.Context, pod *model.Pod, ref model.ContainerRef, id string, spec *v1.Container, killAt time.Time) {
	var err error
	if gs, ok := pw.w.cfg.Runtime.(runtime.GracefulStopper); ok {
		// The runtime enforces the kill time itself, even if this agent
		// is gone by then: killAt, but never less than the minimum after
		// the signal (planner.Config.KillTime), as the kubelet's
		// StopContainer timeout is never less than 2 s.
		now := pw.w.cfg.Clock.Now()
		if killAt.IsZero() {
			killAt = now.Add(time.Duration(pod.GracePeriodSeconds()) * time.Second)
		}
		timeout := pw.w.cfg.Planner.KillTime(now, killAt).Sub(now)
		err = gs.StopContainer(ctx, id, pw.stopSignal(spec), timeout)
	} else {
		err = pw.w.cfg.Runtime.Signal(ctx, id, pw.stopSignal(spec))
	}
	if err != nil && !errors.Is(err, runtime.ErrNotFound) {
		pw.log.Error("stop container", "container", ref.Name, "err", err)
	}
}

// stopSignal is the signal that stops the container (model.StopSignal):
// exactly the one its lifecycle.stopSignal names, else SIGTERM. A name the
// model does not know cannot pass validation; should one come anyway, it
// is logged rather than replaced in silence.
func (pw *podWorker) stopSignal(c *v1.Container) syscall.Signal {
	sig, ok := model.StopSignal(c)
	if !ok {
		pw.log.Error("unknown stop signal; sending SIGTERM", "container", c.Name, "stopSignal", *c.Lifecycle.StopSignal)
	}
	return sig
}
