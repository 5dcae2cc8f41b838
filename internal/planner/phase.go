package planner

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

// Phase is the pod phase the containers imply. terminated says the pod
// worker has finished terminating the pod.
//
// The phase is decided by the regular containers only: sidecars never keep
// a pod alive, and defer containers run after the outcome is known. A pod
// is Pending until each regular container has started once.
func Phase(pod *model.Pod, containers map[string]Observed, terminated bool) v1.PodPhase {
	policy := pod.RestartPolicy()
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if o := containers[c.Name]; !model.IsSidecar(c) && o.State == Exited && o.ExitCode != 0 && policy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
	}
	started, allExited, allSucceeded, willRestart := false, true, true, false
	// notStarted: a regular container has not started for the first time;
	// the kubelet's getPhase (kubelet_pods.go) keeps such a pod Pending.
	notStarted := false
	for i := range pod.Spec.Containers {
		o := containers[pod.Spec.Containers[i].Name]
		switch o.State {
		case Running:
			started = true
			allExited = false
		case Exited:
			started = true
			if o.ExitCode != 0 {
				allSucceeded = false
			}
			if ShouldRestart(policy, o.ExitCode) {
				willRestart = true
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
	case allExited && !willRestart && allSucceeded:
		return v1.PodSucceeded
	case allExited && !willRestart:
		return v1.PodFailed
	case started && !notStarted:
		return v1.PodRunning
	default:
		return v1.PodPending
	}
}
