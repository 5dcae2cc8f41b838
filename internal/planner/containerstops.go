package planner

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

// Probe names the probe whose failure stops a container
// (Observed.ProbeFailed).
type Probe int

// Probes start at one so that an unset Probe is none of them.
const (
	LivenessProbe Probe = iota + 1
	StartupProbe
)

func (p Probe) String() string {
	switch p {
	case LivenessProbe:
		return "Liveness"
	case StartupProbe:
		return "Startup"
	default:
		return fmt.Sprintf("Probe(%d)", int(p))
	}
}

// ContainerStop says whether a stop for reason r is one of containerStops':
// the worker records its KillAt with it (Observed.KillAt), and ProbeKilled
// or ResizeRestart as its reason says.
func (r StopReason) ContainerStop() bool {
	return r == ReasonProbeFailed || r == ReasonPostStartHookFailed || r == ReasonResize
}

// containerStops implements the stops a running instance's own state asks
// for, whether the pod syncs or terminates: the probe rule of
// docs/lifecycle.md ("Probes": a failed liveness or startup probe), the
// postStart rule (start rule 2: a failed postStart hook) and the resize rule
// (start rule 9: resources that need a restart to apply). The worker records
// the fact (Observed.ProbeFailed, PostStartFailedAt, ResizeNeedsRestartAt);
// this stage stops the instance for the first of them, as the kubelet's
// killContainer does: its preStop hook, its stop signal, and SIGKILL at the
// stop's KillAt — the fact's time plus the grace period (see stopGrace), but
// never past the termination's deadline (deadline, zero while the pod
// syncs). The kill follows from containerStopKills while the pod syncs, from
// the termination's stages once it terminates.
//
//	fact ──▶ Stop (preStop, signal; KillAt = fact + grace) ──▶ Kill at KillAt
//	         this stage, alone in its plan                     containerStopKills
//
// An instance whose stop has begun already (for any reason) is left to it.
// A plan with such a stop has nothing else: the worker records the stop
// (writeAhead) and plans again, so the other stages see it stopping, as
// they did when the worker began these stops itself. It reports whether it
// planned a stop.
func (p *Plan) containerStops(in *Input, refs []model.ContainerRef, deadline time.Time) (stopped bool) {
	for _, ref := range refs {
		o := in.obs(ref.Name)
		if o.State != Running || !o.StopRequestedAt.IsZero() {
			continue
		}
		reason, at := o.stopFact()
		if reason == 0 {
			continue
		}
		killAt := at.Add(stopGrace(in.Pod, in.Pod.Container(ref), o, reason))
		if !deadline.IsZero() && deadline.Before(killAt) {
			killAt = deadline
		}
		p.Actions = append(p.Actions, Action{Kind: Stop, Container: ref, PreStop: true, KillAt: killAt, Reason: reason})
	}
	return len(p.Actions) > 0
}

// stopFact is the first of the facts that ask for the instance's stop, and
// when it was learnt; a zero reason when there is none. Facts learnt at the
// same time are taken in the order the worker observes them: a probe's or a
// hook's result, then a resize.
func (o Observed) stopFact() (StopReason, time.Time) {
	var reason StopReason
	var at time.Time
	take := func(r StopReason, t time.Time) {
		if !t.IsZero() && (reason == 0 || t.Before(at)) {
			reason, at = r, t
		}
	}
	if o.ProbeFailed != 0 {
		take(ReasonProbeFailed, o.ProbeFailedAt)
	}
	take(ReasonPostStartHookFailed, o.PostStartFailedAt)
	take(ReasonResize, o.ResizeNeedsRestartAt)
	return reason, at
}

// stopGrace is the grace period of a stop containerStops plans: for a
// failed probe, the probe's terminationGracePeriodSeconds when it sets one,
// else the pod's (the kubelet's killContainer with the probe's override,
// pkg/kubelet/kuberuntime/kuberuntime_container.go); for a failed postStart
// hook, the pod's, as the kubelet's startContainer kills it with
// killContainer, reason FailedPostStartHook; for a resize that restarts the
// container, the pod's.
func stopGrace(pod *model.Pod, c *v1.Container, o Observed, reason StopReason) time.Duration {
	grace := pod.GracePeriodSeconds()
	if reason == ReasonProbeFailed && c != nil {
		probe := c.LivenessProbe
		if o.ProbeFailed == StartupProbe {
			probe = c.StartupProbe
		}
		if probe != nil && probe.TerminationGracePeriodSeconds != nil {
			grace = *probe.TerminationGracePeriodSeconds
		}
	}
	return time.Duration(grace) * time.Second
}

// containerStopKills is the second half of containerStops while the pod
// syncs: a container stopped because a liveness or startup probe failed,
// or its postStart hook did, or a resize restarts it, gets SIGKILL at its
// KillAt if it still runs — but never sooner than Config.MinStopGrace after
// its stop signal (see Config.KillTime).
func (s *syncing) containerStopKills() {
	for _, ref := range s.refs {
		o := s.in.obs(ref.Name)
		if o.State != Running || o.KillAt.IsZero() || o.Killed {
			continue
		}
		reason := ReasonPostStartHookFailed
		switch {
		case o.ProbeKilled:
			reason = ReasonProbeFailed
		case o.ResizeRestart:
			reason = ReasonResize
		}
		s.p.killWhenDue(&s.in, ref, o, o.KillAt, reason)
	}
}
