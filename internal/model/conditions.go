package model

import v1 "k8s.io/api/core/v1"

// kubeletConditions are the pod conditions the node owns: it generates
// them, and they are nobody else's to set (k8s.io/kubernetes
// pkg/kubelet/types/pod_status.go, PodConditionsByKubelet, with
// PodReadyToStartContainers and AllContainersRestarting of their feature
// gates, 1.37).
var kubeletConditions = map[v1.PodConditionType]bool{
	v1.PodScheduled:              true,
	v1.PodReady:                  true,
	v1.PodInitialized:            true,
	v1.ContainersReady:           true,
	v1.PodResizeInProgress:       true,
	v1.PodResizePending:          true,
	v1.PodReadyToStartContainers: true,
	v1.AllContainersRestarting:   true,
}

// PodConditionByKubelet says whether the node owns conditions of type t
// (PodConditionByKubelet). Other conditions — a readiness gate's, set by
// a controller through the status subresource, and DisruptionTarget,
// which the node shares — are kept as others write them.
func PodConditionByKubelet(t v1.PodConditionType) bool { return kubeletConditions[t] }

// OthersConditions are the conditions of list the node does not own
// (PodConditionByKubelet), in their order; nil when there are none. The
// slice is new; its conditions are copies.
func OthersConditions(list []v1.PodCondition) []v1.PodCondition {
	var out []v1.PodCondition
	for _, c := range list {
		if !PodConditionByKubelet(c.Type) {
			out = append(out, *c.DeepCopy())
		}
	}
	return out
}
