package podworker

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/timeline"
)

// cleanupTimeout bounds the removal of a terminated pod's content.
const cleanupTimeout = time.Minute

// maxRoundsPerStep bounds how often one step re-plans after acting, so that
// a bug can never spin a worker.
const maxRoundsPerStep = 64

// checkpointRetry is how soon a checkpoint that could not be saved is
// saved again (and the starts that wait for it are tried again).
const checkpointRetry = time.Second

// podWorker is the state of one pod, in three zones:
//
//   - Set at creation, never changed, read anywhere: w, uid, log and the
//     channels done, terminated and forgotten (and, within their parts,
//     setup.ctx and setup.cancel, prePull.done and milestones.seen).
//   - Shared, each guarding itself: the inbox (anyone pushes, only the
//     goroutine drains), status (only the goroutine publishes, anyone
//     reads) and claim (what the node counts of the pod: under
//     Workers.allocMu, and an atomic).
//   - Everything else is owned by the pod's goroutine (run), which alone
//     reads and writes it; newPodWorker, Restore and Rerun fill it in
//     before the goroutine starts.
//
// Beside the pod, its phase and what the planner is told of the pod as a
// whole, the goroutine's state is in parts, each a type of its own that
// keeps one concern and its invariants, in a file of its own:
//
//	ctrs        the containers, in order and by name   containers.go
//	setup       setting the pod up, its volumes' upkeep setup.go
//	alloc       the node's allocation, in-place resize  allocstate.go
//	ending      the termination: deadline, cause, its   termination.go
//	            grace period's events
//	saving      the checkpoint's saves                  saving.go
//	prePull     the defer images' pre-pull              prepull.go
//	milestones  what the start metrics measure          milestones.go
//
// A part's methods touch that part only. The podWorker's own are the
// stages of a step, which tie the parts together, and what talks to the
// runtime, the planner, the prober, the events and the metrics.
type podWorker struct {
	// Set at creation, never changed.
	w   *Workers
	uid types.UID
	log *slog.Logger
	// done is closed when run returns.
	done chan struct{}
	// terminated is closed when the pod is terminated, before its content
	// is removed: a delete waits for this, never for the clean-up.
	terminated chan struct{}
	// forgotten is closed by Workers.Forget: nothing of the pod is to be
	// saved any more.
	forgotten chan struct{}

	// Shared, each guarding itself.
	inbox inbox
	// status is what the goroutine last published; the queries read it.
	status atomic.Pointer[publishedStatus]
	claim  nodeClaim

	// Owned by run.
	phase     Phase
	pod       *model.Pod
	startTime time.Time
	ctrs      containers
	// recovering: restored from a checkpoint, not yet reconciled with the
	// runtime.
	recovering bool
	// restartAll is the restart of all containers in progress (KEP-5532),
	// from the plan that triggers it to the one that resets the
	// containers; nil when none.
	restartAll *planner.RestartAll
	// objectChanges counts the changes of ConfigMaps and Secrets the
	// worker was told of (retryConfigNow), the planner's
	// Input.ObjectChanges.
	objectChanges uint64
	// backoffs holds the crash-loop waits of the last plan, by container.
	backoffs map[string]time.Time

	setup      setup
	alloc      allocState
	ending     termination
	saving     saving
	prePull    prePull
	milestones milestones
}

func newPodWorker(w *Workers, pod *model.Pod) *podWorker {
	now := w.cfg.Clock.Now()
	pw := &podWorker{
		w:          w,
		uid:        pod.UID,
		log:        w.log.With("pod", pod.Key(), "podUID", pod.UID),
		done:       make(chan struct{}),
		terminated: make(chan struct{}),
		forgotten:  make(chan struct{}),
		inbox:      newInbox(),
		phase:      Syncing,
		pod:        pod,
		ctrs:       newContainers(pod),
		backoffs:   map[string]time.Time{},
		setup:      newSetup(w.ctx),
		ending:     newTermination(),
		prePull:    newPrePull(),
		alloc:      newAllocState(pod),
		milestones: milestones{seen: now},
	}
	pw.claim.requested = requestOf(pod)
	pw.storeStatus(now)
	return pw
}

// setPod takes the pod of an update. Its spec does not change but for the
// ephemeral containers added to it (agent.AddEphemeralContainers, which
// the containers take) and the resources of its containers (a resize,
// which allocate takes up). Called by run only.
func (pw *podWorker) setPod(pod *model.Pod) {
	pw.pod = pod
	pw.ctrs.take(pod)
	pw.alloc.podChanged(pod)
}

// update hands an UpdatePod to the goroutine; a terminated pod takes no
// more updates.
func (pw *podWorker) update(opts UpdateOptions) {
	if pw.published().phase == Terminated {
		return
	}
	pw.inbox.update(opts, pw.setup.cancel)
}

// run is the pod's goroutine: it steps whenever something new arrives or
// the plan's wake-up time comes, and returns when the pod is terminated and
// cleaned up, or when the agent stops.
func (pw *podWorker) run(ctx context.Context) {
	defer pw.w.wg.Done()
	defer close(pw.done)
	defer pw.setup.cancel()
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
		if pw.phase == Terminated {
			// The exits the pod's content records are lost with it:
			// the checkpoint that has them must be durable first.
			pw.saving.await()
			pw.cleanup(ctx)
			// Cleaned up (its cgroup gone), the pod gives back what
			// the node allocated to it, to the resizes that wait for
			// room, as the kubelet retries them once pods are removed.
			pw.w.retryDeferredResizes()
			pw.saveUntilSaved(ctx)
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
		case <-pw.inbox.notify:
		case <-timerC:
		}
	}
}

// step is one turn of the pod's goroutine, in named stages:
//
//	recover   (once, after a restart: reconcile the checkpoint with the runtime)
//	drain     take the inbox's inputs
//	observe   apply them to the worker's state (the kill last)
//	prepare   set the pod up (once, before anything starts)
//	plan, act ask the planner, carry the actions out; again until a plan
//	          has nothing to do now (settle, at most maxRoundsPerStep rounds)
//
// What the step learnt is checkpointed and published at its end. It returns
// when it wants to be woken again (zero: only on news); while the
// checkpoint cannot be saved, in checkpointRetry at the latest.
func (pw *podWorker) step(ctx context.Context) (wake time.Time) {
	now := pw.w.cfg.Clock.Now()
	if pw.startTime.IsZero() {
		pw.startTime = now
	}
	if pw.recovering {
		if err := pw.recover(ctx); err != nil {
			// The inputs wait in the inbox for the next try.
			pw.log.Error("resume pod", "err", err)
			return now.Add(pw.w.cfg.Planner.BackoffBase)
		}
		pw.recovering = false
	}
	// From its first step on, the worker's checkpoint records the node's
	// allocation, also when it was restored from one that did not.
	pw.alloc.recorded = true
	first, after := pw.milestones.firstStep(now)
	if first {
		pw.w.cfg.Metrics.WorkerStarted(after)
	}
	inputs := pw.inbox.drain()
	op := pw.syncOperation(first, inputs)
	pw.observe(ctx, inputs, now)
	defer func() {
		// What the step learnt (exits, signals, hooks) is kept too.
		_ = pw.save()
		pw.publish()
		end := pw.w.cfg.Clock.Now()
		if pw.saving.failing && pw.phase != Terminated {
			wake = earliest(wake, end.Add(checkpointRetry))
		}
		pw.w.cfg.Metrics.Synced(op, end.Sub(now))
	}()
	if wake, ok := pw.prepare(now); !ok {
		return wake
	}
	retry := earliest(pw.resize(ctx, now), pw.refreshVolumes(now))
	return earliest(pw.settle(ctx, now), retry)
}

// observe applies drained inputs in arrival order, except the kill: it is
// applied after everything that arrived with it, so that the termination
// begins from the freshest view of the containers (an exit that came with
// the kill counts for which containers are stopped and whether the defer
// containers run).
func (pw *podWorker) observe(ctx context.Context, inputs []input, now time.Time) {
	var kill *KillOptions
	for _, in := range inputs {
		switch in.kind {
		case inputPod:
			pw.setPod(in.pod)
		case inputKill:
			kill = in.kill
		case inputExit:
			pw.observeExit(in.exit)
		case inputHookDone:
			pw.observeHook(in.hook)
		case inputProbe:
			pw.observeProbe(in.probe)
		case inputStopSignalled:
			pw.observeSignal(in.signal)
		case inputVolumes:
			pw.observeVolumesChanged()
		case inputPrePulled:
			pw.prePull.add(in.pulled)
		}
	}
	if kill != nil {
		pw.applyKill(kill, now)
	}
}

// prepare sets the pod up (its volumes) once, before anything of it
// starts, under the setup context so that a kill cuts it short. It reports
// whether the pod is set up, or terminating (ok: the plan goes on); when
// not, wake is when to try again (zero: on news — a kill cancelled it, and
// the kill is in the inbox). The active deadline counts from the pod's
// start time, set up or not: a pod whose setup keeps failing is terminated
// at its deadline too.
func (pw *podWorker) prepare(now time.Time) (wake time.Time, ok bool) {
	if pw.phase != Syncing || pw.setup.prepared {
		return time.Time{}, true
	}
	deadline, hasDeadline := planner.ActiveDeadline(pw.pod, pw.startTime)
	if hasDeadline && !now.Before(deadline) {
		pw.exceedDeadline(now)
		return time.Time{}, true
	}
	if !pw.setup.due(now) {
		return earliest(pw.setup.retryAt, deadline), false
	}
	if err := pw.w.cfg.Runtime.PreparePod(pw.setup.ctx, pw.alloc.pod); err != nil {
		if pw.setup.ctx.Err() != nil {
			return time.Time{}, false
		}
		failedAt := pw.w.cfg.Clock.Now() // before the event (refreshVolumes)
		pw.failedMount(err)
		return earliest(pw.setup.failed(failedAt, pw.w.cfg.Planner), deadline), false
	}
	pw.setup.succeeded()
	for _, vol := range pw.pod.Spec.Volumes {
		pw.eventf("", events.Normal, events.SuccessfulMountVolume, "MountVolume.SetUp succeeded for volume %q", vol.Name)
	}
	return time.Time{}, true
}

// settle plans and acts until a plan has nothing to do now, and returns
// when the last plan wants the worker back. A completed pod begins its
// termination and is planned again at once; a terminating pod with nothing
// left is terminated.
func (pw *podWorker) settle(ctx context.Context, now time.Time) time.Time {
	for round := 0; round < maxRoundsPerStep; round++ {
		plan := pw.plan(now)
		switch {
		case pw.phase == Syncing && plan.ActiveDeadlineExceeded:
			pw.exceedDeadline(now)
			continue
		case pw.phase == Syncing && plan.Completed:
			pw.complete(now)
			continue
		case pw.phase == Syncing && plan.RestartAll != nil:
			pw.beginRestartAll(plan.RestartAll)
			continue
		case pw.phase == Syncing && plan.ResetContainers:
			pw.resetContainers(plan.ResetBackoffSteps)
			continue
		case pw.phase == Terminating && plan.Done:
			pw.finish()
			return time.Time{}
		}
		acted, wake := pw.act(ctx, plan)
		if !acted {
			return wake
		}
		pw.publish()
		now = pw.w.cfg.Clock.Now()
	}
	pw.log.Error("pod worker did not settle; retrying shortly")
	return now.Add(time.Second)
}

// plan asks the planner for the next actions and emits the events the plan
// implies: one BackOff per crash-loop wait, GracePeriodExceeded at the
// deadline, and the defer containers given up before it. Past the deadline
// it also cuts off the preStop hooks still running, whose stop signal then
// goes out (a hook is bounded by the kill time its stop was given, which a
// deadline brought forward since does not change).
func (pw *podWorker) plan(now time.Time) planner.Plan {
	deadlinePassed := pw.ending.deadlinePassed(now)
	if deadlinePassed {
		pw.ctrs.cutPreStopHooks()
	}
	plan := planner.Next(planner.Input{Pod: pw.pod, Containers: pw.ctrs.observed(), Termination: pw.ending.term, StartTime: pw.startTime, RestartAll: pw.restartAll, ObjectChanges: pw.objectChanges, Now: now, Config: pw.w.cfg.Planner})
	pw.noteBackoffs(plan)
	switch {
	case deadlinePassed && (!plan.Done || plan.DeferIncomplete != nil):
		// Emitted now, or once the kills it names were sent (act).
		if msg := pw.ending.gracePeriodExceeded(plan, pw.ctrs.list, pw.w.cfg.Planner.MinStopGrace); msg != "" {
			pw.eventf("", events.Warning, events.GracePeriodExceeded, "%s", msg)
		}
	case !deadlinePassed && plan.DeferIncomplete != nil && pw.ending.giveUpDefer():
		pw.eventf("", events.Warning, events.DeferFailed, "Giving up on the defer containers: no retry fits in the grace period left; did not complete: %s", strings.Join(plan.DeferIncomplete, ", "))
	}
	return plan
}

// act carries out a plan's actions, each recorded ahead in the checkpoint
// (writeAhead: starts wait while it cannot be saved, stops and kills do
// not), then emits the GracePeriodExceeded event of kills that were sent
// and starts the defer images' pre-pull when it is time. It reports whether
// the pod's state changed; when not, wake is when the plan, or an image
// pull it had to put off, wants the worker back.
//
// What the actions brought (the new instances' IDs) is not saved here but
// by the next plan's write-ahead or at the end of the step, one commit
// instead of two: nothing is guarded by it (a start is, by its write-ahead,
// and an agent that dies before the instance is recorded adopts it from
// the runtime, as it would had it died during the start).
func (pw *podWorker) act(ctx context.Context, plan planner.Plan) (acted bool, wake time.Time) {
	wake = plan.WakeAt
	// Consecutive starts go together (startAll), the other actions one by
	// one, in the plan's order.
	var starts []planner.Action
	flush := func() {
		changed, retry := pw.startAll(ctx, starts)
		acted, wake = acted || changed, earliest(wake, retry)
		starts = starts[:0]
	}
	for _, a := range pw.writeAhead(plan.Actions) {
		if a.Kind == planner.Start {
			starts = append(starts, a)
			continue
		}
		flush()
		changed, retry := pw.execute(ctx, a)
		acted = acted || changed
		wake = earliest(wake, retry)
	}
	flush()
	if msg := pw.ending.takeGPEvent(); msg != "" {
		pw.eventf("", events.Warning, events.GracePeriodExceeded, "%s", msg)
	}
	pw.maybePrePull(ctx)
	return acted, wake
}

// earliest is the earlier of two wake-up times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// applyKill begins the termination of a syncing pod, or shortens the
// deadline of a terminating one (never lengthens it).
func (pw *podWorker) applyKill(kill *KillOptions, now time.Time) {
	grace := pw.pod.GracePeriodSeconds()
	if kill.GracePeriodSeconds != nil {
		grace = *kill.GracePeriodSeconds
	}
	if grace < 0 {
		grace = 0
	}
	if kill.Reason != TerminationNodeShutdown {
		pw.ending.deleted = true
	}
	switch pw.phase {
	case Syncing:
		pw.begin(now, grace, kill.Reason)
	case Terminating:
		if pw.ending.shorten(now, grace) {
			pw.note(timeline.Note{Kind: timeline.NoteDeadlineShortened, At: now, Deadline: pw.ending.term.Deadline, GraceSeconds: grace})
			pw.save()
			pw.log.Info("termination deadline shortened", "deadline", pw.ending.term.Deadline, "reason", kill.Reason)
		}
	}
}

// complete begins the termination of a pod whose containers completed,
// with the pod's own grace period. Its event names the phase the pod will
// end in; the pod is published with it only once terminated.
func (pw *podWorker) complete(now time.Time) {
	phase := planner.Phase(pw.pod, pw.ctrs.observed(), true)
	pw.eventf("", events.Normal, events.Completed, "Pod completed (phase %s)", phase)
	pw.begin(now, pw.pod.GracePeriodSeconds(), TerminationCompleted)
}

// exceedDeadline begins the termination of a pod that was active for its
// activeDeadlineSeconds, with the pod's own grace period (its defer
// containers run), as the kubelet does (pkg/kubelet/active_deadline.go):
// a Normal DeadlineExceeded event, and the pod ends Failed with that reason
// (see snapshot).
func (pw *podWorker) exceedDeadline(now time.Time) {
	pw.eventf("", events.Normal, events.DeadlineExceeded, "%s", messageDeadlineExceeded)
	pw.begin(now, pw.pod.GracePeriodSeconds(), TerminationDeadlineExceeded)
}

// begin moves the pod to Terminating with grace period grace (seconds).
func (pw *podWorker) begin(now time.Time, grace int64, reason TerminationReason) {
	t := planner.Begin(pw.pod, pw.ctrs.observed(), now, time.Duration(grace)*time.Second)
	pw.ending.begin(t, grace, reason)
	pw.phase = Terminating
	pw.note(timeline.Note{Kind: timeline.NoteTerminationBegan, At: now, Detail: string(reason), Deadline: t.Deadline, GraceSeconds: grace})
	// Probes stop when the pod starts terminating; readiness goes first.
	if pr := pw.w.cfg.Prober; pr != nil {
		pr.RemovePod(pw.uid)
	}
	pw.ctrs.notReady()
	// Not saved here: begin is followed in the same step by a plan, whose
	// actions are saved ahead (writeAhead) before any goes out, or by the
	// step's own save — one commit instead of two on the stop path. Until
	// then nothing of the termination has reached a container, and a
	// deletion is in the store already (the agent re-issues it on
	// recovery), as is everything a completion or a deadline is decided
	// from.
	pw.log.Info("pod terminating", "reason", reason, "gracePeriod", grace, "deadline", t.Deadline, "runDefer", t.RunDefer)
	if len(pw.pod.Defer) > 0 && !t.RunDefer {
		why := "no regular container had started"
		if grace <= 0 {
			why = "the grace period is 0"
		}
		pw.eventf("", events.Normal, events.DeferSkipped, "Skipping %d defer container(s): %s", len(pw.pod.Defer), why)
	}
}

// finish marks the pod terminated: checkpointed and published first, so
// that whoever waits on the terminated channel reads the final status. The
// checkpoint is saved deferred where the Checkpointer can
// (DeferredCheckpointer): a delete, waiting on the terminated channel to
// remove the pod from the store, does not wait for a commit of its own
// first; the worker waits for it before the clean-up.
func (pw *podWorker) finish() {
	pw.phase = Terminated
	pw.note(timeline.Note{Kind: timeline.NoteTerminated, At: pw.w.cfg.Clock.Now()})
	pw.noteTerminated(pw.w.cfg.Clock.Now())
	pw.saveDeferred()
	pw.publish()
	close(pw.terminated)
	pw.log.Info("pod terminated", "phase", pw.published().pod.Status.Phase)
}

// observeExit records the exit of the instance the worker tracks; the
// exits of other instances are ignored.
func (pw *podWorker) observeExit(ev runtime.Event) {
	c := pw.ctrs.byName[ev.Container]
	if c == nil || c.id != ev.ID || c.obs.State != planner.Running {
		return // an instance we no longer track
	}
	pw.removeProbes(c)
	killed := c.exited(ev.Exit)
	pw.noteExit(c)
	pw.log.Info("container exited", "container", c.ref.Name, "exitCode", ev.Exit.ExitCode)
	if c.ref.Role == model.RoleDefer {
		pw.noteDeferExit(c, killed)
	}
}

// noteDeferExit emits the event of a defer container's exit, saying what
// comes next.
func (pw *podWorker) noteDeferExit(c *ctr, killed bool) {
	code := c.exit.ExitCode
	outcome := DeferFailed
	switch {
	case code == 0:
		outcome = DeferCompleted
	case killed:
		outcome = DeferKilled
	}
	pw.w.cfg.Metrics.DeferExited(outcome, c.obs.FinishedAt.Sub(c.obs.StartedAt))
	switch {
	case code == 0:
		pw.eventf(c.ref.FieldPath(), events.Normal, events.DeferCompleted, "Defer container %s completed", c.ref.Name)
	case killed:
		pw.eventf(c.ref.FieldPath(), events.Warning, events.DeferFailed, "Defer container %s was killed at the end of the grace period (exit code %d)", c.ref.Name, code)
	case pw.ending.deadlinePassed(pw.w.cfg.Clock.Now()):
		pw.eventf(c.ref.FieldPath(), events.Warning, events.DeferFailed, "Defer container %s was stopped at the end of the grace period (exit code %d)", c.ref.Name, code)
	case pw.ending.term != nil && !pw.ending.term.RetryFits(pw.w.cfg.Planner, c.obs):
		pw.eventf(c.ref.FieldPath(), events.Warning, events.DeferFailed, "Defer container %s failed with exit code %d; no retry fits in the grace period left, the pod stops now", c.ref.Name, code)
	default:
		pw.eventf(c.ref.FieldPath(), events.Warning, events.DeferFailed, "Defer container %s failed with exit code %d; it is retried", c.ref.Name, code)
	}
}

// observeSignal records when the stop signal of the tracked instance went
// out (after its preStop hook).
func (pw *podWorker) observeSignal(n signalNote) {
	if c := pw.ctrs.byName[n.container]; c != nil && c.id == n.id && c.obs.State == planner.Running {
		c.obs.SignalledAt = n.at
		c.preStopCut = nil // the hook is over
		pw.noteSignal(c, n.at)
	}
}

// noteBackoffs emits one BackOff event per backoff wait.
func (pw *podWorker) noteBackoffs(p planner.Plan) {
	clear(pw.backoffs)
	for _, b := range p.Backoffs {
		pw.backoffs[b.Container.Name] = b.Until
		c := pw.ctrs.byName[b.Container.Name]
		if c.backoffAnnounced.Equal(b.Until) {
			continue
		}
		c.backoffAnnounced = b.Until
		pw.eventf(c.ref.FieldPath(), events.Warning, events.BackOff, "Back-off restarting failed container %s in pod %s", c.ref.Name, pw.pod.Name)
	}
}

// eventf records an event about the worker's pod; only run may call it
// (it reads pw.pod). Background work names its pod with eventFor.
func (pw *podWorker) eventf(fieldPath, eventType string, reason events.Reason, format string, args ...any) {
	pw.eventFor(pw.pod, fieldPath, eventType, reason, format, args...)
}

func (pw *podWorker) eventFor(pod *model.Pod, fieldPath, eventType string, reason events.Reason, format string, args ...any) {
	if r := pw.w.cfg.Recorder; r != nil {
		r.Eventf(pod, fieldPath, eventType, reason, format, args...)
	}
}

// publishedStatus is a pod's status as its goroutine last rendered it, with the
// worker's phase at that moment, so that the two always agree. It is
// immutable once stored: readers share it.
type publishedStatus struct {
	pod   *v1.Pod
	phase Phase
	// reason is why the termination began; "" while the pod syncs.
	reason TerminationReason
	// running and exited count the containers whose latest instance runs,
	// or has exited (Census).
	running, exited int
}

// published returns what the goroutine last published; any goroutine may
// call it.
func (pw *podWorker) published() *publishedStatus { return pw.status.Load() }

// storeStatus renders the worker's state and stores it for the queries.
// Only the goroutine calls it, or its creator before it starts.
func (pw *podWorker) storeStatus(now time.Time) {
	st := &publishedStatus{pod: pw.snapshot(now), phase: pw.phase, reason: pw.ending.reason}
	st.running, st.exited = pw.ctrs.census()
	pw.status.Store(st)
	if first, after := pw.milestones.firstRunning(st.pod.Status.Phase == v1.PodRunning, now); first {
		pw.w.cfg.Metrics.PodRunning(after)
	}
}

// publish stores the status for the queries and tells OnChange.
func (pw *podWorker) publish() {
	pw.storeStatus(pw.w.cfg.Clock.Now())
	if f := pw.w.cfg.OnChange; f != nil {
		f(pw.uid)
	}
}

// saveUntilSaved saves again, every checkpointRetry, the last checkpoint of
// a terminated pod that could not be saved (a full disk), until it is
// saved, the worker is forgotten (the agent removed the pod) or the agent
// stops.
func (pw *podWorker) saveUntilSaved(ctx context.Context) {
	for pw.saving.failing {
		t := pw.w.cfg.Clock.NewTimer(checkpointRetry)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-pw.forgotten:
			t.Stop()
			return
		case <-t.C():
		}
		_ = pw.save()
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
