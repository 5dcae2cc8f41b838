package planner

import (
	"time"

	"github.com/podward/podward/internal/model"
)

// planSync plans a pod that is not terminating: the "Start" rules of
// docs/lifecycle.md, with the stops a failed postStart hook (rule 2), a
// failed probe (its "Probes" section) or a resize that restarts a container
// (rule 9) ask for. Each stage below implements one of them; they run in
// this order. A container stop planned ends the plan (the worker records
// it and plans again), and so does the active deadline, once passed (the
// pod terminates), and a restart of all containers while it lasts;
// otherwise only the init stage can hold up the one after it.
//
//	container stops a failed probe or postStart hook, or a resize that
//	                restarts it, stops the container (containerstops.go)
//	active deadline activeDeadlineSeconds since startTime: terminate  (rule 6)
//	restart all     a RestartAllContainers rule matched: stop all, reset,
//	                start over                                          (rule 7)
//	stop kills      a container stopped by the first stage is killed at its
//	                KillAt
//	ephemeral       each ephemeral container added starts once, whatever
//	                the init stage does                                 (rule 8)
//	init stage      init-1 ─▶ sidecar-A (started) ─▶ init-2          (rules 1, 2)
//	regular stage                                   main-1, main-2   (rules 3, 4, 5)
func planSync(in Input, refs []model.ContainerRef) Plan {
	s := syncing{in: in, refs: refs}
	if s.p.containerStops(&s.in, s.refs, time.Time{}) || s.activeDeadline() || s.restartAllContainers() {
		return s.p
	}
	s.containerStopKills()
	s.ephemeralContainers()
	if s.initContainers() {
		return s.p
	}
	s.regularContainers()
	return s.p
}

// syncing is one planning step of a pod that syncs: its input, the pod's
// containers in start order and the plan being built.
type syncing struct {
	in   Input
	refs []model.ContainerRef
	p    Plan
}

// activeDeadline implements start rule 6: a pod with
// spec.activeDeadlineSeconds that has been active that long since its
// startTime is terminated (Plan.ActiveDeadlineExceeded), whatever its
// containers do; until then the plan wakes at the deadline. It reports
// whether the deadline has passed.
func (s *syncing) activeDeadline() (exceeded bool) {
	deadline, ok := ActiveDeadline(s.in.Pod, s.in.StartTime)
	if !ok {
		return false
	}
	if s.in.Now.Before(deadline) {
		s.p.wake(deadline)
		return false
	}
	s.p.ActiveDeadlineExceeded = true
	return true
}

// ActiveDeadline is when a pod started at start (its status.startTime) has
// been active for its spec.activeDeadlineSeconds, as the kubelet counts it
// (pkg/kubelet/active_deadline.go: due once now - startTime >= the
// deadline); ok is false when the pod has no active deadline or has not
// started. Pure.
func ActiveDeadline(pod *model.Pod, start time.Time) (deadline time.Time, ok bool) {
	ads := pod.Spec.ActiveDeadlineSeconds
	if ads == nil || start.IsZero() {
		return time.Time{}, false
	}
	return start.Add(time.Duration(*ads) * time.Second), true
}

// ephemeralContainers implements start rule 8: an ephemeral container
// (spec.ephemeralContainers, added to the running pod) starts as soon as it
// is added, even while the pod initializes, and only once: whatever its exit
// and the pod's restartPolicy, it is never restarted (kubelet 1.37,
// pkg/kubelet/kuberuntime/kuberuntime_manager.go, computePodActions: an
// ephemeral container with no status is started, one with a status never
// again). It reads the raw observation: a restart of all containers does not
// start it again.
func (s *syncing) ephemeralContainers() {
	for _, ref := range s.refs {
		if ref.Role != model.RoleEphemeral {
			continue
		}
		if o := s.in.Containers[ref.Name]; o.State == 0 || o.State == Waiting {
			s.p.Actions = append(s.p.Actions, Action{Kind: Start, Container: ref})
		}
	}
}

// initContainers implements start rules 1 and 2: init containers one at a
// time, in order, each exiting 0 before the next starts; a sidecar starts in
// its place, is restarted whenever it exits, and holds up what follows it
// only until it has started once. It walks the init containers and sidecars
// up to the first one that is not initialized (see initialized) and reports
// whether there is one: then the regular containers wait.
func (s *syncing) initContainers() (blocked bool) {
	for _, ref := range s.refs {
		if ref.Role != model.RoleInit && ref.Role != model.RoleSidecar {
			continue
		}
		o := s.in.obs(ref.Name)
		if ref.Role == model.RoleSidecar {
			s.keepSidecarUp(ref, o)
		} else if !succeeded(o) {
			s.runInit(ref, o)
		}
		if !initialized(ref.Role, o) {
			return true
		}
	}
	return false
}

// keepSidecarUp starts a sidecar that never ran and restarts one that
// exited, with crash-loop backoff whatever the pod's restartPolicy (start
// rule 2), at once when a resize stopped it (start rule 9).
func (s *syncing) keepSidecarUp(ref model.ContainerRef, o Observed) {
	switch {
	case o.State == Waiting:
		s.p.startFresh(ref, o)
	case o.State == Exited && o.ResizeRestart:
		s.p.resizeRestart(&s.in, ref, o)
	case o.State == Exited:
		s.p.restart(&s.in, ref, o, 0, time.Time{})
	}
}

// resizeRestart implements start rule 9: a container the worker stopped
// to apply a resize whose resizePolicy is RestartContainer starts again at
// once, whatever its restart policy, the pod's and its exit code — the
// kubelet kills it and starts it in the same sync (kubelet 1.37,
// pkg/kubelet/kuberuntime/kuberuntime_manager.go, computePodResizeAction:
// ContainersToKill and ContainersToStart). The API server allows
// RestartContainer only in a pod whose restartPolicy is not Never, and not
// on a non-sidecar init container. The start counts as a restart, and
// feeds the backoff as any other (the kubelet's doBackOff records it).
func (p *Plan) resizeRestart(in *Input, ref model.ContainerRef, o Observed) {
	p.Actions = append(p.Actions, Action{Kind: Start, Container: ref, BackoffSteps: in.Config.steps(o) + 1})
}

// startFresh starts a container that has no instance to restart: never
// started, or reset by a restart of all containers, whose backoff steps
// carry over (see Observed.current).
func (p *Plan) startFresh(ref model.ContainerRef, o Observed) {
	p.Actions = append(p.Actions, Action{Kind: Start, Container: ref, BackoffSteps: o.BackoffSteps})
}

// runInit starts an init container that did not succeed yet, or restarts
// a failed one as its own restartPolicy and restart rules say, else the
// pod's restartPolicy (Never fails the pod; Always and OnFailure restart a
// failed init container); one that will not restart fails the pod (start
// rule 1; the kubelet's computeInitContainerActions with
// ContainerShouldRestart, pkg/api/v1/pod/util.go).
func (s *syncing) runInit(ref model.ContainerRef, o Observed) {
	switch o.State {
	case Waiting:
		s.p.startFresh(ref, o)
	case Exited:
		if restarts(s.in.Pod, s.in.Pod.Container(ref), o) {
			s.p.restart(&s.in, ref, o, 0, time.Time{})
		} else {
			s.p.Completed = true
		}
	}
}

// regularContainers implements start rules 3, 4, 5 and 9: once every init
// container completed or started, the regular containers start together;
// they restart per their own restartPolicy and restart rules, or else the
// pod's restartPolicy, with crash-loop backoff (see restarts), and at once
// when a resize stopped them (resizeRestart); the pod completes when every
// one of them terminated and none will restart. Sidecars were handled by
// the init stage and never keep the pod alive.
func (s *syncing) regularContainers() {
	allDone := true
	for _, ref := range s.refs {
		if ref.Role != model.RoleMain {
			continue
		}
		switch o := s.in.obs(ref.Name); {
		case o.State == Waiting:
			allDone = false
			s.p.startFresh(ref, o)
		case o.State == Running:
			allDone = false
		case o.State == Exited && o.ResizeRestart:
			allDone = false
			s.p.resizeRestart(&s.in, ref, o)
		case o.State == Exited:
			if restarts(s.in.Pod, s.in.Pod.Container(ref), o) {
				allDone = false
				s.p.restart(&s.in, ref, o, 0, time.Time{})
			}
		}
	}
	s.p.Completed = allDone
}

// initialized says whether an init container or sidecar no longer holds up
// the containers declared after it: an init container once it exited 0, a
// sidecar once it has started, now or before (start rules 1 and 2).
func initialized(role model.Role, o Observed) bool {
	if role == model.RoleSidecar {
		return o.StartedOnce || (o.State == Running && o.Started)
	}
	return succeeded(o)
}

// InitsDone says whether the pod is initialized: every init container
// exited 0 and every sidecar has started (now or before, since the last
// restart of all containers), so the regular
// containers may run. It is the gate planSync applies before the regular
// containers start, and what the Initialized condition and the containers'
// waiting reasons report. containers is keyed by container name; a missing
// entry means Waiting. Pure; it does not keep containers.
func InitsDone(pod *model.Pod, containers map[string]Observed) bool {
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		role := model.RoleInit
		if model.IsSidecar(c) {
			role = model.RoleSidecar
		}
		if !initialized(role, containers[c.Name].current()) {
			return false
		}
	}
	return true
}
