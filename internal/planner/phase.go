package planner

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

// Phase is the pod phase to publish. terminated says the pod worker has
// finished terminating the pod: nothing of it runs and nothing will start.
//
// The phase is terminal (Succeeded or Failed) only once terminated: until
// then a pod that could still have running containers — a sidecar still
// draining, defer containers still to run, a termination not yet done —
// stays Running once a regular container started, else Pending, as the
// kubelet never reports a terminal phase while containers could run
// (pkg/kubelet/status/status_manager.go, mergePodStatus). Once terminated
// the phase is decided by the regular containers only: Succeeded when every
// one of them exited 0, else Failed (sidecars never keep a pod alive, and
// defer containers run after the outcome is known). Called with terminated
// on a pod that completed, it gives the phase the pod will end in. A pod
// is Pending until each regular container has started once (the kubelet's
// getPhase, kubelet_pods.go), and again from a restart of all containers'
// reset until they have started again (KEP-5532: the pod is Pending
// throughout the restart).
func Phase(pod *model.Pod, containers map[string]Observed, terminated bool) v1.PodPhase {
	started, allExited, allSucceeded := false, true, true
	// notStarted: a regular container has not started for the first time;
	// the kubelet's getPhase (kubelet_pods.go) keeps such a pod Pending.
	notStarted := false
	for i := range pod.Spec.Containers {
		o := containers[pod.Spec.Containers[i].Name].current()
		switch o.State {
		case Running:
			started = true
			allExited = false
		case Exited:
			started = true
			if o.ExitCode != 0 {
				allSucceeded = false
			}
		default:
			allExited = false
			allSucceeded = false
			notStarted = true
		}
	}
	switch {
	case terminated && allExited && allSucceeded:
		return v1.PodSucceeded
	case terminated:
		return v1.PodFailed
	case started && !notStarted:
		return v1.PodRunning
	default:
		return v1.PodPending
	}
}
