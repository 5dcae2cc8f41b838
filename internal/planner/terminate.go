package planner

import (
	"time"

	"github.com/podward/podward/internal/model"
)

// Termination is the fixed part of a pod's termination, decided once when
// it begins (see Begin) and only ever shortened afterwards.
type Termination struct {
	RequestedAt time.Time
	Deadline    time.Time
	// RunDefer says whether the defer containers run: the pod has some, a
	// regular container started before termination began and the grace
	// period was not zero.
	RunDefer bool
}

// Begin fixes a termination that starts now with grace period grace: the
// absolute deadline, and whether the defer containers run (the pod has some,
// a regular container has started, and grace is not zero).
func Begin(pod *model.Pod, containers map[string]Observed, now time.Time, grace time.Duration) Termination {
	t := Termination{RequestedAt: now, Deadline: now.Add(grace)}
	if len(pod.Defer) == 0 || grace <= 0 {
		return t
	}
	for i := range pod.Spec.Containers {
		if o := containers[pod.Spec.Containers[i].Name]; o.State == Running || o.State == Exited {
			t.RunDefer = true
			break
		}
	}
	return t
}

// Shorten applies a later termination request: the deadline may move
// earlier, never later.
func (t *Termination) Shorten(now time.Time, grace time.Duration) bool {
	if d := now.Add(grace); d.Before(t.Deadline) {
		t.Deadline = d
		return true
	}
	return false
}

// RetryFits says whether the next retry of the failed defer container o
// would start before the deadline. When it would not, the defer containers
// are given up at once and the pod stops gracefully (termination step 3):
// the planner then reports them in Plan.DeferIncomplete, and the worker's
// DeferFailed event says so. Pure.
func (t *Termination) RetryFits(c Config, o Observed) bool {
	return c.RetryAt(o, 0).Before(t.Deadline)
}

// planTerminating plans a pod that terminates: the numbered "Termination"
// steps of docs/lifecycle.md. Each stage below implements one step and
// reports whether that step is still in progress, in which case the later
// steps wait; the deadline overrides them all.
//
//	step 1  begin: the deadline is fixed
//	  │
//	step 3  defer-1 ─▶ defer-2, the rest keeps running      ─┐
//	  │     (skipped without RunDefer: steps 2, 8)           │ at the deadline
//	step 4  stop main-1, main-2 (and a running init)         │ whatever runs gets
//	  │                                                      ├▶ its stop signal,
//	step 5  stop sidecar-B, then sidecar-A                   │ all at once, and
//	  │     (ephemeral containers stopped in step 4 and      │ 2 s (steps 6, 8)
//	  │     never waited for, until step 7)                  │
//	step 7  done, as soon as everything exited              ─┘
//
// Before them, a container whose failed probe or postStart hook asks for
// its stop gets it (containerStops), its kill time bounded by the deadline.
func planTerminating(in Input, refs []model.ContainerRef) Plan {
	s := terminating{in: in, t: in.Termination, refs: refs}
	if s.p.containerStops(&s.in, s.refs, s.t.Deadline) {
		// A failed probe or postStart hook stops its container at once,
		// whoever's turn it is (containerstops.go).
		return s.p
	}
	if !in.Now.Before(s.t.Deadline) {
		s.pastDeadline()
		return s.p
	}
	s.p.wake(s.t.Deadline)
	if s.deferContainers() || s.regularContainers() || s.sidecars() || s.ephemeralRunning() {
		return s.p
	}
	s.done()
	return s.p
}

// terminating is one planning step of a pod that terminates: its input,
// the pod's containers in start order, the plan being built and what the
// defer stage found.
type terminating struct {
	in   Input
	t    *Termination
	refs []model.ContainerRef
	p    Plan
	// abandoned: the defer containers were given up (step 3) because a
	// retry no longer fits; the rest stops gracefully, not promptly.
	abandoned bool
}

// pastDeadline implements steps 6 and 8: once the deadline has passed (at
// once with a grace period of 0) nothing starts and nothing waits for its
// turn any more, and every container still running, a defer container
// included, gets its stop signal and Config.MinStopGrace before SIGKILL (see
// Config.KillTime), as the kubelet gives each container its minimum
// shutdown window. One never signalled — a defer container, the regular
// containers behind it, the sidecars waiting for them — is signalled now,
// all of them at once and without a preStop hook: the kubelet's sidecars
// stop waiting for their turn when the grace period is over (kubelet 1.37,
// pkg/kubelet/kuberuntime/kuberuntime_termination_order.go, waitForTurn),
// and a hook only runs within it. One whose preStop hook runs past the
// deadline is signalled by the worker, which cuts the hook off there. One
// signalled before is killed at the deadline, or MinStopGrace after its
// signal when that is later. The defer containers that did not complete are
// named; the pod is done as soon as nothing runs.
func (s *terminating) pastDeadline() {
	running := false
	for _, ref := range s.refs {
		o := s.in.obs(ref.Name)
		if o.State != Running {
			continue
		}
		running = true
		switch {
		case o.Killed:
		case o.StopRequestedAt.IsZero():
			s.p.Actions = append(s.p.Actions, Action{Kind: Stop, Container: ref, KillAt: s.in.Config.KillTime(s.in.Now, s.in.Now), Reason: ReasonGracePeriodExceeded})
		default:
			bound := s.t.Deadline
			if !o.KillAt.IsZero() {
				bound = earliest(bound, o.KillAt)
			}
			s.p.killWhenDue(&s.in, ref, o, bound, ReasonGracePeriodExceeded)
		}
	}
	s.p.Done = !running
	if s.t.RunDefer {
		s.p.DeferIncomplete = s.incompleteDefers()
	}
}

// deferContainers implements step 3: the defer containers run one after
// another, in order, each exiting 0 before the next starts, while the
// regular containers and sidecars keep running (and a sidecar that dies is
// restarted). A failed one is retried with crash-loop backoff; when its next
// retry would not come before the deadline (see Termination.RetryFits) the
// defer containers are given up and step 4 follows at once. They do not run
// at all (step 2, step 8) unless Termination.RunDefer. It reports whether a
// defer container is still to run.
func (s *terminating) deferContainers() (inProgress bool) {
	if !s.t.RunDefer {
		return false
	}
	for _, ref := range s.refs {
		if ref.Role != model.RoleDefer {
			continue
		}
		o := s.in.obs(ref.Name)
		switch {
		case succeeded(o):
			continue
		case o.State == Exited && !s.t.RetryFits(s.in.Config, o):
			s.abandoned = true
			s.p.DeferIncomplete = s.incompleteDefers()
			return false
		case o.State == Exited:
			s.p.restart(&s.in, ref, o, 0, time.Time{})
		case o.State == Waiting:
			s.p.Actions = append(s.p.Actions, Action{Kind: Start, Container: ref})
		}
		s.restartSidecars()
		return true
	}
	return false
}

// regularContainers implements step 4, and the stop of step 2: the running
// regular containers, and an init container caught running, are stopped
// (see stop). With defer containers the regular containers' preStop hooks do
// not run: the defer containers replace them. While a regular container
// still runs, a sidecar that dies is restarted; while only an init
// container is being stopped nothing new starts. It reports whether any of
// them still runs. The running ephemeral containers are stopped with them
// (they have no hook) but hold nothing up: the kubelet's termination order
// has the sidecars wait for the regular containers only
// (pkg/kubelet/kuberuntime/kuberuntime_termination_order.go).
func (s *terminating) regularContainers() (inProgress bool) {
	preStop := len(s.in.Pod.Defer) == 0
	busy, mainRuns := false, false
	for _, ref := range s.refs {
		if ref.Role == model.RoleEphemeral {
			if o := s.in.obs(ref.Name); o.State == Running {
				s.stop(ref, o, false)
			}
			continue
		}
		if ref.Role != model.RoleMain && ref.Role != model.RoleInit {
			continue
		}
		if o := s.in.obs(ref.Name); o.State == Running {
			busy = true
			mainRuns = mainRuns || ref.Role == model.RoleMain
			s.stop(ref, o, ref.Role == model.RoleMain && preStop)
		}
	}
	if mainRuns {
		s.restartSidecars()
	}
	return busy
}

// sidecars implements step 5: the sidecars stop one at a time, in reverse
// order of declaration, each once the one declared after it has exited; a
// sidecar keeps its preStop hook, prompt stop or not. It reports whether a
// sidecar still runs.
func (s *terminating) sidecars() (inProgress bool) {
	for i := len(s.refs) - 1; i >= 0; i-- {
		ref := s.refs[i]
		if ref.Role != model.RoleSidecar {
			continue
		}
		if o := s.in.obs(ref.Name); o.State == Running {
			s.stop(ref, o, true)
			return true
		}
	}
	return false
}

// ephemeralRunning keeps step 7 waiting for the ephemeral containers that
// step 4 stopped and that still run.
func (s *terminating) ephemeralRunning() bool {
	for _, ref := range s.refs {
		if ref.Role == model.RoleEphemeral && s.in.obs(ref.Name).State == Running {
			return true
		}
	}
	return false
}

// done implements step 7: everything has exited, so the pod is terminated
// at once; it never waits out the rest of its grace period.
func (s *terminating) done() {
	s.p.Done = true
	s.p.WakeAt = time.Time{}
}

// restartSidecars implements the last rule of step 5: a sidecar that dies
// while regular or defer containers still run comes back quickly (its
// backoff at most SidecarRestartMax), since defer containers may talk
// through it — but never at or past the deadline.
func (s *terminating) restartSidecars() {
	for _, ref := range s.refs {
		if o := s.in.obs(ref.Name); ref.Role == model.RoleSidecar && o.State == Exited && o.StartedOnce {
			s.p.restart(&s.in, ref, o, s.in.Config.SidecarRestartMax, s.t.Deadline)
		}
	}
}

// prompt says whether containers stop promptly (steps 4 and 5): the defer
// containers ran and completed, so they were the graceful shutdown. Without
// them, or once they were given up, the grace period applies.
func (s *terminating) prompt() bool {
	return s.t.RunDefer && !s.abandoned
}

// stop drives the stop sequence of one running container for steps 4 and
// 5: a Stop (preStop hook when preStop, then the stop signal) the first
// time, then a Kill once its kill time comes. The kill time is the
// deadline; in a prompt stop, PromptKill after the stop signal (a preStop
// hook before the signal is bounded by the deadline only); never later than
// the kill time of a stop begun earlier for a failed probe or postStart
// hook; and never sooner than MinStopGrace after the signal
// (Config.KillTime), even when that is past the deadline.
func (s *terminating) stop(ref model.ContainerRef, o Observed, preStop bool) {
	reason := ReasonTerminating
	if s.prompt() {
		reason = ReasonDeferDone
	}
	if o.StopRequestedAt.IsZero() {
		// KillAt bounds the preStop hook: the deadline.
		s.p.Actions = append(s.p.Actions, Action{Kind: Stop, Container: ref, PreStop: preStop, KillAt: s.t.Deadline, Reason: reason})
		return
	}
	if o.Killed {
		return
	}
	bound := s.t.Deadline
	if s.prompt() && !o.SignalledAt.IsZero() {
		bound = earliest(o.SignalledAt.Add(s.in.Config.PromptKill), s.t.Deadline)
	}
	if !o.KillAt.IsZero() {
		// Stopped earlier for a failed probe or postStart hook: a kill
		// time only ever gets shorter.
		bound = earliest(bound, o.KillAt)
	}
	s.p.killWhenDue(&s.in, ref, o, bound, reason)
}

// incompleteDefers names the defer containers that have not exited 0.
func (s *terminating) incompleteDefers() []string {
	var out []string
	for _, ref := range s.refs {
		if ref.Role == model.RoleDefer && !succeeded(s.in.obs(ref.Name)) {
			out = append(out, ref.Name)
		}
	}
	return out
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
