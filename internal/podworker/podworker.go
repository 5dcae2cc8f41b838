package podworker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
)

// cleanupTimeout bounds the removal of a terminated pod's content.
const cleanupTimeout = time.Minute

// maxRoundsPerStep bounds how often one step re-plans after acting, so that
// a bug can never spin a worker.
const maxRoundsPerStep = 64

// podWorker is the state of one pod. Fields under "owned by run" are only
// touched by the pod's goroutine; the others are guarded by mu.
type podWorker struct {
	w      *Workers
	uid    types.UID
	notify chan struct{} // 1-slot: "there is something new"
	done   chan struct{} // closed when run returns
	// terminated is closed when the pod is terminated, before its content
	// is removed: a delete waits for this, never for the clean-up.
	terminated chan struct{}
	log        *slog.Logger

	mu            sync.Mutex
	pendingPod    *model.Pod
	pendingKill   *KillOptions
	killRequested bool
	exits         []runtime.Event
	hooks         []hookResult
	probeResults  []ProbeResult
	signalled     []signalNote
	prePulled     []string // defer containers whose image a pre-pull brought
	// prePullFinished: the pre-pull is over (for tests).
	prePullFinished bool
	setupCtx        context.Context
	setupCancel     context.CancelFunc
	phase           Phase
	published       *v1.Pod
	// publishedPhase is the phase published is of: PodStatus answers
	// with both, so that they always agree.
	publishedPhase Phase

	// owned by run
	pod        *model.Pod
	ctrs       []*ctr // in model.Pod.Containers order
	byName     map[string]*ctr
	term       *planner.Termination
	termReason string
	prepared   bool
	retryAt    time.Time
	startTime  time.Time
	backoffs   map[string]time.Time
	gpReported bool
	// deleted is set once a kill was applied: the published pod then
	// carries deletionTimestamp = the termination deadline, as the API
	// server shows a deleted pod.
	deleted bool
	// recovering: restored from a checkpoint, not yet reconciled with the
	// runtime.
	recovering bool
	// deferGivenUp: the event saying the defer containers were given up
	// before the deadline was emitted.
	deferGivenUp bool
	// saved is the last checkpoint written.
	saved []byte
	// prePullStarted: the defer images' pre-pull was started (once per
	// worker); prepulled names the defer containers it brought.
	prePullStarted bool
	prepulled      map[string]bool
	// imageWake is the earliest retry of an image pull the last round
	// put off (zero: none).
	imageWake time.Time
}

// ctr is what the worker knows of one container.
type ctr struct {
	ref  model.ContainerRef
	obs  planner.Observed
	id   string
	exit runtime.ExitStatus // of the latest instance, once it exited
	// last is how the previous instance ended (Kubernetes' lastState).
	last *v1.ContainerStateTerminated
	// backoffAnnounced is the end of the backoff the BackOff event was
	// emitted for, so that one wait gives one event.
	backoffAnnounced time.Time
	// pending is a start in flight, checkpointed before it happens.
	pending *pendingStart
	// hookCancel cuts off the running postStart hook.
	hookCancel context.CancelFunc
	// ready is the readiness probe's verdict (containers with one).
	ready bool
	// image is what the last pulls of its image gave.
	image imageState
}

func newPodWorker(w *Workers, pod *model.Pod) *podWorker {
	ctx, cancel := context.WithCancel(w.ctx)
	pw := &podWorker{
		w:           w,
		uid:         pod.UID,
		notify:      make(chan struct{}, 1),
		done:        make(chan struct{}),
		terminated:  make(chan struct{}),
		log:         w.log.With("pod", pod.Key(), "podUID", pod.UID),
		setupCtx:    ctx,
		setupCancel: cancel,
		phase:       Syncing,
		pod:         pod,
		byName:      map[string]*ctr{},
		backoffs:    map[string]time.Time{},
		prepulled:   map[string]bool{},
	}
	for _, ref := range pod.Containers() {
		c := &ctr{ref: ref, obs: planner.Observed{State: planner.Waiting}}
		pw.ctrs = append(pw.ctrs, c)
		pw.byName[ref.Name] = c
	}
	pw.published = pw.snapshot(w.cfg.Clock.Now())
	pw.publishedPhase = pw.phase
	return pw
}

func (pw *podWorker) ring() {
	select {
	case pw.notify <- struct{}{}:
	default:
	}
}

// update records an update under the lock and wakes the goroutine.
func (pw *podWorker) update(opts UpdateOptions) {
	pw.mu.Lock()
	if pw.phase == Terminated {
		pw.mu.Unlock()
		return
	}
	pw.pendingPod = opts.Pod
	if opts.Kill != nil {
		pw.killRequested = true
		pw.pendingKill = mergeKill(pw.pendingKill, opts.Kill)
		pw.setupCancel()
	}
	pw.mu.Unlock()
	pw.ring()
}

// mergeKill coalesces two pending kills: the shorter grace period wins.
func mergeKill(old, next *KillOptions) *KillOptions {
	if old == nil {
		k := *next
		return &k
	}
	k := *old
	if next.GracePeriodSeconds != nil && (k.GracePeriodSeconds == nil || *next.GracePeriodSeconds < *k.GracePeriodSeconds) {
		g := *next.GracePeriodSeconds
		k.GracePeriodSeconds = &g
	}
	return &k
}

// Phase returns the worker's phase.
func (pw *podWorker) Phase() Phase {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.phase
}

func (pw *podWorker) setPhase(p Phase) {
	pw.mu.Lock()
	pw.phase = p
	pw.mu.Unlock()
}

// run is the pod's goroutine: it steps whenever something new arrives or
// the plan's wake-up time comes, and returns when the pod is terminated and
// cleaned up, or when the agent stops.
func (pw *podWorker) run(ctx context.Context) {
	defer pw.w.wg.Done()
	defer close(pw.done)
	defer pw.setupCancel()
	clk := pw.w.cfg.Clock
	var timer interface {
		C() <-chan time.Time
		Stop() bool
	}
	for {
		select {
		case <-ctx.Done():
			return
		default:
		}
		wake := pw.step(ctx)
		if pw.Phase() == Terminated {
			pw.cleanup(ctx)
			return
		}
		if timer != nil {
			timer.Stop()
			timer = nil
		}
		if !wake.IsZero() && !wake.After(clk.Now()) {
			continue // already due
		}
		var timerC <-chan time.Time
		if !wake.IsZero() {
			timer = clk.NewTimer(wake.Sub(clk.Now()))
			timerC = timer.C()
		}
		select {
		case <-ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-pw.notify:
		case <-timerC:
		}
	}
}

// step takes what is pending, then plans and acts until the plan has
// nothing more to do now. It returns when it wants to be woken again.
func (pw *podWorker) step(ctx context.Context) time.Time {
	pw.mu.Lock()
	if pw.pendingPod != nil {
		pw.pod = pw.pendingPod
		pw.pendingPod = nil
	}
	kill := pw.pendingKill
	pw.pendingKill = nil
	exits := pw.exits
	pw.exits = nil
	hooks := pw.hooks
	pw.hooks = nil
	signalled := pw.signalled
	pw.signalled = nil
	probeResults := pw.probeResults
	pw.probeResults = nil
	for _, name := range pw.prePulled {
		pw.prepulled[name] = true
	}
	pw.prePulled = nil
	setupCtx := pw.setupCtx
	pw.mu.Unlock()

	clk := pw.w.cfg.Clock
	now := clk.Now()
	if pw.startTime.IsZero() {
		pw.startTime = now
	}
	if pw.recovering {
		if err := pw.recover(ctx); err != nil {
			pw.log.Error("resume pod", "err", err)
			return now.Add(pw.w.cfg.Planner.BackoffBase)
		}
		pw.recovering = false
	}
	for _, ev := range exits {
		pw.observeExit(ev)
	}
	for _, r := range hooks {
		pw.observeHook(ctx, r)
	}
	for _, r := range probeResults {
		pw.observeProbe(ctx, r)
	}
	for _, n := range signalled {
		if c := pw.byName[n.container]; c != nil && c.id == n.id && c.obs.State == planner.Running {
			c.obs.SignalledAt = n.at
		}
	}
	if kill != nil {
		pw.applyKill(kill, now)
	}
	defer func() {
		// What the step learnt (exits, signals, hooks) is kept too.
		_ = pw.save()
		pw.publish()
	}()

	if pw.Phase() == Syncing && !pw.prepared {
		if now.Before(pw.retryAt) {
			return pw.retryAt
		}
		if err := pw.w.cfg.Runtime.PreparePod(setupCtx, pw.pod); err != nil {
			if setupCtx.Err() != nil {
				// A kill cancelled the setup; it is pending and
				// rang the notify channel.
				return time.Time{}
			}
			pw.eventf("", events.Warning, "FailedMount", "Preparing the pod's volumes failed: %v", err)
			pw.retryAt = clk.Now().Add(pw.w.cfg.Planner.BackoffBase)
			return pw.retryAt
		}
		pw.prepared = true
		for _, vol := range pw.pod.Spec.Volumes {
			pw.eventf("", events.Normal, "SuccessfulMountVolume", "MountVolume.SetUp succeeded for volume %q", vol.Name)
		}
	}

	for round := 0; round < maxRoundsPerStep; round++ {
		plan := planner.Next(pw.input(now))
		pw.noteBackoffs(plan)
		deadlinePassed := pw.term != nil && !now.Before(pw.term.Deadline)
		switch {
		case deadlinePassed && (hasKillFor(plan, planner.ReasonGracePeriodExceeded) || plan.DeferIncomplete != nil):
			pw.reportGracePeriodExceeded(plan)
		case !deadlinePassed && plan.DeferIncomplete != nil && !pw.deferGivenUp:
			pw.deferGivenUp = true
			pw.eventf("", events.Warning, "DeferFailed", "Giving up on the defer containers: no retry fits in the grace period left; did not complete: %s", strings.Join(plan.DeferIncomplete, ", "))
		}
		switch {
		case pw.Phase() == Syncing && plan.Completed:
			phase := planner.Phase(pw.pod, pw.observed(), false)
			pw.eventf("", events.Normal, "Completed", "Pod completed (phase %s)", phase)
			pw.begin(now, pw.pod.GracePeriodSeconds(), "Completed")
			continue
		case pw.Phase() == Terminating && plan.Done:
			pw.setPhase(Terminated)
			pw.save()
			// Whoever waits for the termination reads the final status.
			pw.publish()
			close(pw.terminated)
			pw.log.Info("pod terminated", "phase", planner.Phase(pw.pod, pw.observed(), true))
			return time.Time{}
		}
		if err := pw.writeAhead(plan.Actions); err != nil {
			// Acting without the record would break recovery: try
			// again shortly.
			pw.log.Error("write-ahead checkpoint failed; the actions wait", "err", err)
			return now.Add(time.Second)
		}
		acted := false
		pw.imageWake = time.Time{}
		for _, a := range plan.Actions {
			if pw.execute(ctx, setupCtx, a) {
				acted = true
			}
		}
		pw.save()
		pw.maybePrePull(ctx)
		if !acted {
			return earliest(plan.WakeAt, pw.imageWake)
		}
		pw.publish()
		now = clk.Now()
	}
	pw.log.Error("pod worker did not settle; retrying shortly")
	return now.Add(time.Second)
}

// earliest is the earlier of two wake-up times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

func hasKillFor(p planner.Plan, reason planner.StopReason) bool {
	for _, a := range p.Actions {
		if a.Kind == planner.Kill && a.Reason == reason {
			return true
		}
	}
	return false
}

func (pw *podWorker) observed() map[string]planner.Observed {
	m := make(map[string]planner.Observed, len(pw.ctrs))
	for _, c := range pw.ctrs {
		m[c.ref.Name] = c.obs
	}
	return m
}

func (pw *podWorker) input(now time.Time) planner.Input {
	return planner.Input{Pod: pw.pod, Containers: pw.observed(), Termination: pw.term, Now: now, Config: pw.w.cfg.Planner}
}

func (pw *podWorker) applyKill(kill *KillOptions, now time.Time) {
	grace := pw.pod.GracePeriodSeconds()
	if kill.GracePeriodSeconds != nil {
		grace = *kill.GracePeriodSeconds
	}
	if grace < 0 {
		grace = 0
	}
	pw.deleted = true
	switch pw.Phase() {
	case Syncing:
		pw.begin(now, grace, kill.Reason)
	case Terminating:
		if pw.term.Shorten(now, time.Duration(grace)*time.Second) {
			pw.save()
			pw.log.Info("termination deadline shortened", "deadline", pw.term.Deadline, "reason", kill.Reason)
		}
	}
}

// begin moves the pod to Terminating with grace period grace (seconds).
func (pw *podWorker) begin(now time.Time, grace int64, reason string) {
	t := planner.Begin(pw.pod, pw.observed(), now, time.Duration(grace)*time.Second)
	pw.term = &t
	pw.termReason = reason
	pw.setPhase(Terminating)
	// Probes stop when the pod starts terminating; readiness goes first.
	if pr := pw.w.cfg.Prober; pr != nil {
		pr.RemovePod(pw.uid)
	}
	for _, c := range pw.ctrs {
		c.ready = false
	}
	pw.save()
	pw.log.Info("pod terminating", "reason", reason, "gracePeriod", grace, "deadline", t.Deadline, "runDefer", t.RunDefer)
	if len(pw.pod.Defer) > 0 && !t.RunDefer {
		why := "no regular container had started"
		if grace <= 0 {
			why = "the grace period is 0"
		}
		pw.eventf("", events.Normal, "DeferSkipped", "Skipping %d defer container(s): %s", len(pw.pod.Defer), why)
	}
}

func (pw *podWorker) observeExit(ev runtime.Event) {
	c := pw.byName[ev.Container]
	if c == nil || c.id != ev.ID || c.obs.State != planner.Running {
		return // an instance we no longer track
	}
	killed := c.obs.Killed
	pw.removeProbes(c)
	c.ready = false
	c.obs.KillAt = time.Time{}
	if c.hookCancel != nil {
		c.hookCancel()
		c.hookCancel = nil
	}
	c.obs.State = planner.Exited
	c.obs.FinishedAt = ev.Exit.FinishedAt
	c.obs.ExitCode = ev.Exit.ExitCode
	c.obs.Started = false
	c.obs.StopRequestedAt = time.Time{}
	c.obs.SignalledAt = time.Time{}
	c.obs.Killed = false
	c.exit = ev.Exit
	pw.log.Info("container exited", "container", c.ref.Name, "exitCode", ev.Exit.ExitCode)
	if c.ref.Role == model.RoleDefer {
		if ev.Exit.ExitCode == 0 {
			pw.eventf(c.ref.FieldPath(), events.Normal, "DeferCompleted", "Defer container %s completed", c.ref.Name)
		} else if killed || (pw.term != nil && !pw.w.cfg.Clock.Now().Before(pw.term.Deadline)) {
			pw.eventf(c.ref.FieldPath(), events.Warning, "DeferFailed", "Defer container %s was killed at the end of the grace period (exit code %d)", c.ref.Name, ev.Exit.ExitCode)
		} else if pw.term != nil && !pw.w.cfg.Planner.RetryAt(c.obs, 0).Before(pw.term.Deadline) {
			pw.eventf(c.ref.FieldPath(), events.Warning, "DeferFailed", "Defer container %s failed with exit code %d; no retry fits in the grace period left, the pod stops now", c.ref.Name, ev.Exit.ExitCode)
		} else {
			pw.eventf(c.ref.FieldPath(), events.Warning, "DeferFailed", "Defer container %s failed with exit code %d; it is retried", c.ref.Name, ev.Exit.ExitCode)
		}
	}
}

// writeAhead records, and checkpoints, what the actions are about to do,
// so that an agent that dies half-way neither repeats a stop nor loses a
// start.
func (pw *podWorker) writeAhead(actions []planner.Action) error {
	now := pw.w.cfg.Clock.Now()
	for _, a := range actions {
		c := pw.byName[a.Container.Name]
		switch a.Kind {
		case planner.Start:
			attempt := 0
			if c.obs.State != planner.Waiting {
				attempt = c.obs.Restarts + 1
			}
			c.pending = &pendingStart{Attempt: attempt, BackoffSteps: a.BackoffSteps}
		case planner.Stop:
			c.obs.StopRequestedAt = now
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
	if err := pw.save(); err != nil {
		// Undo the marks: the actions did not happen.
		for _, a := range actions {
			c := pw.byName[a.Container.Name]
			switch a.Kind {
			case planner.Start:
				c.pending = nil
			case planner.Stop:
				c.obs.StopRequestedAt = time.Time{}
				c.obs.SignalledAt = time.Time{}
			case planner.Kill:
				c.obs.Killed = false
			}
		}
		return err
	}
	return nil
}

// execute carries out one action and reports whether the pod's state
// changed.
func (pw *podWorker) execute(ctx, setupCtx context.Context, a planner.Action) bool {
	c := pw.byName[a.Container.Name]
	switch a.Kind {
	case planner.Start:
		return pw.start(ctx, setupCtx, c, a)
	case planner.Stop:
		pw.stop(ctx, c, a)
		return true
	case planner.Kill:
		if err := pw.w.cfg.Runtime.Signal(ctx, c.id, syscall.SIGKILL); err != nil && !errors.Is(err, runtime.ErrNotFound) {
			pw.log.Error("kill container", "container", c.ref.Name, "err", err)
		}
		if a.Reason != planner.ReasonGracePeriodExceeded {
			pw.eventf(c.ref.FieldPath(), events.Normal, "Killing", "Killing container %s: it did not stop in time", c.ref.Name)
		}
		return true
	}
	return false
}

func (pw *podWorker) start(ctx, setupCtx context.Context, c *ctr, a planner.Action) bool {
	startCtx := ctx
	if pw.Phase() == Syncing {
		// While syncing, starts run under the setup context so that a
		// kill cancels them; once a kill is recorded nothing starts.
		pw.mu.Lock()
		killed := pw.killRequested
		pw.mu.Unlock()
		if killed {
			return false
		}
		startCtx = setupCtx
	}
	attempt := 0
	if c.obs.State != planner.Waiting {
		attempt = c.obs.Restarts + 1
	}
	spec := pw.pod.Container(c.ref)
	if ok, wake := pw.ensureImage(startCtx, c, spec); !ok {
		c.pending = nil
		pw.imageWake = earliest(pw.imageWake, wake)
		return false
	}
	inst, err := pw.w.cfg.Runtime.StartContainer(startCtx, pw.pod, c.ref, attempt)
	c.pending = nil
	if err != nil && startCtx.Err() != nil {
		return false
	}
	if c.obs.State == planner.Exited {
		c.last = c.terminatedState()
	}
	now := pw.w.cfg.Clock.Now()
	c.obs = planner.Observed{
		State:        planner.Running,
		StartedOnce:  c.obs.StartedOnce,
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
		pw.eventf(c.ref.FieldPath(), events.Warning, "Failed", "Error: %v", err)
		pw.log.Error("start container", "container", c.ref.Name, "err", err)
		return true
	}
	c.id = inst.ID
	c.obs.StartedAt = inst.StartedAt
	// The container counts as started once its process runs and its
	// postStart hook has finished (the startupProbe will gate this too).
	if spec.Lifecycle != nil && spec.Lifecycle.PostStart != nil {
		pw.startPostStart(ctx, c, spec.Lifecycle.PostStart)
	} else {
		pw.running(c)
	}
	pw.eventf(c.ref.FieldPath(), events.Normal, "Created", "Created container %s", c.ref.Name)
	if c.ref.Role == model.RoleDefer {
		pw.eventf(c.ref.FieldPath(), events.Normal, "DeferStarted", "Started defer container %s (%d of %d)", c.ref.Name, c.ref.Index+1, len(pw.pod.Defer))
	} else {
		pw.eventf(c.ref.FieldPath(), events.Normal, "Started", "Started container %s", c.ref.Name)
	}
	pw.log.Info("container started", "container", c.ref.Name, "attempt", attempt, "image", spec.Image)
	return true
}

// stop begins a container's graceful stop: the preStop hook (in the
// background, bounded by the kill time) then the stop signal. The time of
// the signal comes back to the pod's goroutine (SignalledAt), since a
// prompt kill counts from it. SIGKILL, if needed, comes from a later plan.
func (pw *podWorker) stop(ctx context.Context, c *ctr, a planner.Action) {
	pw.stopWith(ctx, c, a, true)
}

// stopWith is stop; event says whether to record the Killing event (a
// caller with its own message passes false).
func (pw *podWorker) stopWith(ctx context.Context, c *ctr, a planner.Action, event bool) {
	spec := pw.pod.Container(c.ref)
	pw.removeProbes(c)
	if event {
		msg := "Stopping container " + c.ref.Name
		if a.Reason == planner.ReasonDeferDone {
			msg += " (defer containers completed)"
		}
		pw.eventf(c.ref.FieldPath(), events.Normal, "Killing", "%s", msg)
	}
	var hook *v1.LifecycleHandler
	if pw.hasPreStop(c, a) {
		hook = spec.Lifecycle.PreStop
	}
	if hook == nil {
		pw.signalStop(ctx, c.ref, c.id, spec, a.KillAt) // SignalledAt: see writeAhead
		return
	}
	pod, ref, id, killAt := pw.pod, c.ref, c.id, a.KillAt
	pw.w.wg.Add(1)
	go func() {
		defer pw.w.wg.Done()
		err := pw.runHook(ctx, pod, ref, spec, hook, killAt)
		if ctx.Err() != nil {
			// The agent is stopping, not the pod: the container keeps
			// running and the next agent goes on from here.
			return
		}
		if err != nil {
			pw.eventFor(pod, ref.FieldPath(), events.Warning, "FailedPreStopHook", "PreStop hook for container %s failed: %v", ref.Name, err)
		}
		pw.signalStop(ctx, ref, id, spec, killAt)
		pw.mu.Lock()
		pw.signalled = append(pw.signalled, signalNote{container: ref.Name, id: id, at: pw.w.cfg.Clock.Now()})
		pw.mu.Unlock()
		pw.ring()
	}()
}

// hasPreStop says whether a stop action runs the container's preStop hook.
func (pw *podWorker) hasPreStop(c *ctr, a planner.Action) bool {
	spec := pw.pod.Container(c.ref)
	return a.PreStop && spec != nil && spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil
}

// signalNote tells the pod's goroutine that a stop signal went out.
type signalNote struct {
	container, id string
	at            time.Time
}

func (pw *podWorker) signalStop(ctx context.Context, ref model.ContainerRef, id string, spec *v1.Container, killAt time.Time) {
	var err error
	if gs, ok := pw.w.cfg.Runtime.(runtime.GracefulStopper); ok {
		// The runtime enforces the kill time itself, even if this agent
		// is gone by then.
		timeout := time.Duration(pw.pod.GracePeriodSeconds()) * time.Second
		if !killAt.IsZero() {
			timeout = max(killAt.Sub(pw.w.cfg.Clock.Now()), 0)
		}
		err = gs.StopContainer(ctx, id, stopSignal(spec), timeout)
	} else {
		err = pw.w.cfg.Runtime.Signal(ctx, id, stopSignal(spec))
	}
	if err != nil && !errors.Is(err, runtime.ErrNotFound) {
		pw.log.Error("stop container", "container", ref.Name, "err", err)
	}
}

// stopSignal is the container's lifecycle.stopSignal, else SIGTERM.
func stopSignal(c *v1.Container) syscall.Signal {
	if c != nil && c.Lifecycle != nil && c.Lifecycle.StopSignal != nil {
		if s, ok := signals[*c.Lifecycle.StopSignal]; ok {
			return s
		}
	}
	return syscall.SIGTERM
}

var signals = map[v1.Signal]syscall.Signal{
	v1.SIGABRT: syscall.SIGABRT, v1.SIGALRM: syscall.SIGALRM, v1.SIGBUS: syscall.SIGBUS, v1.SIGCHLD: syscall.SIGCHLD,
	v1.SIGCONT: syscall.SIGCONT, v1.SIGFPE: syscall.SIGFPE, v1.SIGHUP: syscall.SIGHUP, v1.SIGILL: syscall.SIGILL,
	v1.SIGINT: syscall.SIGINT, v1.SIGIO: syscall.SIGIO, v1.SIGKILL: syscall.SIGKILL, v1.SIGPIPE: syscall.SIGPIPE,
	v1.SIGPROF: syscall.SIGPROF, v1.SIGPWR: syscall.SIGPWR, v1.SIGQUIT: syscall.SIGQUIT, v1.SIGSEGV: syscall.SIGSEGV,
	v1.SIGSTKFLT: syscall.SIGSTKFLT, v1.SIGSTOP: syscall.SIGSTOP, v1.SIGSYS: syscall.SIGSYS, v1.SIGTERM: syscall.SIGTERM,
	v1.SIGTRAP: syscall.SIGTRAP, v1.SIGTSTP: syscall.SIGTSTP, v1.SIGTTIN: syscall.SIGTTIN, v1.SIGTTOU: syscall.SIGTTOU,
	v1.SIGURG: syscall.SIGURG, v1.SIGUSR1: syscall.SIGUSR1, v1.SIGUSR2: syscall.SIGUSR2, v1.SIGVTALRM: syscall.SIGVTALRM,
	v1.SIGWINCH: syscall.SIGWINCH, v1.SIGXCPU: syscall.SIGXCPU, v1.SIGXFSZ: syscall.SIGXFSZ,
}

// noteBackoffs emits one BackOff event per backoff wait.
func (pw *podWorker) noteBackoffs(p planner.Plan) {
	clear(pw.backoffs)
	for _, b := range p.Backoffs {
		pw.backoffs[b.Container.Name] = b.Until
		c := pw.byName[b.Container.Name]
		if c.backoffAnnounced.Equal(b.Until) {
			continue
		}
		c.backoffAnnounced = b.Until
		pw.eventf(c.ref.FieldPath(), events.Warning, "BackOff", "Back-off restarting failed container %s in pod %s", c.ref.Name, pw.pod.Name)
	}
}

func (pw *podWorker) reportGracePeriodExceeded(p planner.Plan) {
	if pw.gpReported {
		return
	}
	pw.gpReported = true
	var killed []string
	for _, a := range p.Actions {
		if a.Kind == planner.Kill {
			killed = append(killed, a.Container.Name)
		}
	}
	msg := fmt.Sprintf("Grace period exceeded: killed %s", strings.Join(killed, ", "))
	if len(killed) == 0 {
		msg = "Grace period exceeded"
	}
	if len(p.DeferIncomplete) > 0 {
		msg += "; defer containers that did not complete: " + strings.Join(p.DeferIncomplete, ", ")
	}
	pw.eventf("", events.Warning, "GracePeriodExceeded", "%s", msg)
}

// eventf records an event; only run may call it (it reads pw.pod).
func (pw *podWorker) eventf(fieldPath, eventType, reason, format string, args ...any) {
	pw.eventFor(pw.pod, fieldPath, eventType, reason, format, args...)
}

func (pw *podWorker) eventFor(pod *model.Pod, fieldPath, eventType, reason, format string, args ...any) {
	if r := pw.w.cfg.Recorder; r != nil {
		r.Eventf(pod, fieldPath, eventType, reason, format, args...)
	}
}

// publish stores the status for queries and tells OnChange.
func (pw *podWorker) publish() {
	snap := pw.snapshot(pw.w.cfg.Clock.Now())
	pw.mu.Lock()
	pw.published = snap
	pw.publishedPhase = pw.phase
	pw.mu.Unlock()
	if f := pw.w.cfg.OnChange; f != nil {
		f(pw.uid)
	}
}

// cleanup removes the pod's content once it is terminated. It runs after
// the pod is known terminated, so it never holds up a delete.
func (pw *podWorker) cleanup(ctx context.Context) {
	// A clean-up that has begun finishes even when the agent stops (it
	// removes only what no container uses any more), within a bound.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	if err := pw.w.cfg.Runtime.CleanupPod(ctx, pw.pod); err != nil {
		pw.log.Error("clean up pod", "err", err)
	}
}
