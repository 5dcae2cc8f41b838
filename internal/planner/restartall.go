package planner

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

// RestartAll is an in-place restart of all of a pod's containers
// (KEP-5532, the RestartAllContainers action of a restart rule) in
// progress. The worker keeps it, in its checkpoint too, from the plan that
// triggered it (Plan.RestartAll) to the plan that resets the containers
// (Plan.ResetContainers); meanwhile the pod reports the
// AllContainersRestarting condition.
type RestartAll struct {
	// Trigger is the container whose exit matched the rule, and ExitCode
	// the code it exited with.
	Trigger  string
	ExitCode int32
	// At is when the restart began. Every container still running is
	// stopped from then without its preStop hook and killed
	// Config.MinStopGrace after its stop signal: the kubelet does not
	// honour the grace period for an in-place restart.
	At time.Time
}

// restartAllContainers implements start rule 7 of docs/lifecycle.md, the
// in-place restart of every container (KEP-5532), and reports whether it
// holds the pod: then the other start rules wait.
//
//	trigger  an init container, sidecar or regular container exited with a
//	         code whose first matching restart rule is RestartAllContainers
//	         (Plan.RestartAll)
//	stop     each container still running gets its stop signal, no preStop
//	         hook, and SIGKILL MinStopGrace later
//	reset    once nothing runs and the trigger's crash-loop backoff has
//	         passed, every container that ran is reset (Plan.ResetContainers)
//	         and the init containers start over
//
// Defer containers take no part: the pod does not end, so they do not run.
func (s *syncing) restartAllContainers() (held bool) {
	r := s.in.RestartAll
	if r == nil {
		t, ok := s.restartAllTrigger()
		if ok {
			s.p.RestartAll = &t
		}
		return ok
	}
	running := false
	for _, ref := range s.refs {
		o := s.in.obs(ref.Name)
		if ref.Role == model.RoleDefer || o.State != Running {
			continue
		}
		running = true
		switch {
		case o.StopRequestedAt.IsZero():
			s.p.Actions = append(s.p.Actions, Action{Kind: Stop, Container: ref, KillAt: r.At, Reason: ReasonRestartAllContainers})
		case !o.Killed:
			s.p.killWhenDue(&s.in, ref, o, r.At, ReasonRestartAllContainers)
		}
	}
	if running {
		return true
	}
	trigger := s.in.obs(r.Trigger)
	if at := s.in.Config.RetryAt(trigger, 0); s.in.Now.Before(at) {
		s.p.wake(at)
		return true
	}
	s.p.ResetContainers = true
	s.p.ResetBackoffSteps = s.in.Config.steps(trigger) + 1
	return true
}

// restartAllTrigger finds the first container, in start order, whose last
// instance exited with a code that a RestartAllContainers rule matches
// (the kubelet's ShouldAllContainersRestart,
// pkg/kubelet/container/helpers.go).
func (s *syncing) restartAllTrigger() (RestartAll, bool) {
	for _, ref := range s.refs {
		if ref.Role == model.RoleDefer {
			continue
		}
		o := s.in.obs(ref.Name)
		if o.State != Exited {
			continue
		}
		if rule, ok := matchingRestartRule(s.in.Pod.Container(ref), o.ExitCode); ok && rule.Action == v1.ContainerRestartRuleActionRestartAllContainers {
			return RestartAll{Trigger: ref.Name, ExitCode: o.ExitCode, At: s.in.Now}, true
		}
	}
	return RestartAll{}, false
}

// CouldRestartAll says whether any container of the pod has a
// RestartAllContainers rule: only such a pod reports the
// AllContainersRestarting condition (the kubelet's
// podutil.AllContainersCouldRestart).
func CouldRestartAll(pod *model.Pod) bool {
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			for _, rule := range list[i].RestartPolicyRules {
				if rule.Action == v1.ContainerRestartRuleActionRestartAllContainers {
					return true
				}
			}
		}
	}
	return false
}

// current is the observation the rules read. A container reset by a
// restart of all containers counts as never started: its last instance is
// history (the status's lastState), and only its restart count and backoff
// steps carry over to its next instance.
func (o Observed) current() Observed {
	if !o.RestartedAll {
		return o
	}
	return Observed{State: Waiting, Restarts: o.Restarts, BackoffSteps: o.BackoffSteps}
}
