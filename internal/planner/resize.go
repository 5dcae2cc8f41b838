package planner

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// ResizeAction is what a change of a running container's resources asks
// for (KEP-1287, in-place resize).
type ResizeAction int

const (
	// ResizeNone: the running instance has the resources its spec asks for.
	ResizeNone ResizeAction = iota + 1
	// ResizeInPlace: apply them to the running instance, no restart.
	ResizeInPlace
	// ResizeRestart: restart the container to apply them (resizePolicy
	// RestartContainer of a resource that changed).
	ResizeRestart
)

func (a ResizeAction) String() string {
	switch a {
	case ResizeNone:
		return "none"
	case ResizeInPlace:
		return "in-place"
	case ResizeRestart:
		return "restart"
	default:
		return fmt.Sprintf("ResizeAction(%d)", int(a))
	}
}

// Resize decides how spec's resources reach a running instance that has
// applied: nothing when they are the same; else a restart when a resource
// whose requests or limits changed has resizePolicy RestartContainer,
// in place otherwise (NotRequired is the default), as the kubelet's
// computePodActions decides (pkg/kubelet/kuberuntime/kuberuntime_manager.go,
// computePodResizeAction: a restart for any resource that asks for one).
// Only cpu and memory are resized; they are the only resources a
// container's resizePolicy may name.
func Resize(spec *v1.Container, applied v1.ResourceRequirements) ResizeAction {
	changed := false
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if sameQuantity(spec.Resources.Requests, applied.Requests, name) && sameQuantity(spec.Resources.Limits, applied.Limits, name) {
			continue
		}
		changed = true
		for _, p := range spec.ResizePolicy {
			if p.ResourceName == name && p.RestartPolicy == v1.RestartContainer {
				return ResizeRestart
			}
		}
	}
	if !changed {
		return ResizeNone
	}
	return ResizeInPlace
}

func sameQuantity(a, b v1.ResourceList, name v1.ResourceName) bool {
	qa, oka := a[name]
	qb, okb := b[name]
	if oka != okb {
		return false
	}
	return !oka || equality.Semantic.DeepEqual(qa, qb)
}
