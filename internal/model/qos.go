package model

import (
	v1 "k8s.io/api/core/v1"
)

// QOSClass is the pod's quality-of-service class as the kubelet reports it
// in status.qosClass: the one the pod carries already (the API server sets
// it on create, and it never changes), else ComputeQOSClass's.
func QOSClass(p *v1.Pod) v1.PodQOSClass {
	if p.Status.QOSClass != "" {
		return p.Status.QOSClass
	}
	return ComputeQOSClass(&p.Spec)
}

// qosResources are the resources the QoS class is decided by.
var qosResources = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}

// ComputeQOSClass is Kubernetes' QoS class of a defaulted pod spec
// (k8s.io/kubernetes pkg/apis/core/v1/helper/qos, ComputePodQOS, 1.37),
// from the cpu and memory requests and limits:
//
//   - BestEffort: none at all;
//   - Guaranteed: every container (regular and init) has cpu and memory
//     requests above zero, each equal to its limit;
//   - Burstable: anything else.
//
// When the pod sets pod-level resources (PodLevelResourcesSet), they alone
// decide, by the same rule applied to spec.resources. Defer containers are
// podward's, unknown to the API server that computes the class in a
// cluster, and do not count. Default copies a container's limits into the
// requests it leaves unset, and completes the pod-level ones, as the API
// server does before it computes the class: a container with limits only
// is Guaranteed, and so is a pod with pod-level limits only.
func ComputeQOSClass(spec *v1.PodSpec) v1.PodQOSClass {
	if PodLevelResourcesSet(spec) {
		return requirementsQOS(spec.Resources)
	}
	var class v1.PodQOSClass
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			switch c := requirementsQOS(&list[i].Resources); {
			case c == v1.PodQOSBurstable:
				return c
			case class == "":
				class = c
			case class != c:
				return v1.PodQOSBurstable
			}
		}
	}
	if class == "" {
		return v1.PodQOSBestEffort
	}
	return class
}

// requirementsQOS is the class of one set of requirements: BestEffort
// without cpu and memory, Guaranteed when both are requested (above zero)
// at their limit, Burstable otherwise (requirementsQOS and resourceQOS of
// the qos helper).
func requirementsQOS(r *v1.ResourceRequirements) v1.PodQOSClass {
	var class v1.PodQOSClass
	for _, name := range qosResources {
		req, lim := r.Requests[name], r.Limits[name]
		c := v1.PodQOSGuaranteed
		switch {
		case req.Cmp(lim) != 0:
			return v1.PodQOSBurstable
		case req.IsZero():
			c = v1.PodQOSBestEffort
		}
		if class != "" && class != c {
			return v1.PodQOSBurstable
		}
		class = c
	}
	return class
}
