package model

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
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
// (k8s.io/kubernetes pkg/apis/core/v1/helper/qos, ComputePodQOS), from the
// cpu and memory requests and limits that are above zero:
//
//   - BestEffort: none at all;
//   - Guaranteed: every container (regular and init) has cpu and memory
//     limits, and the requests summed over the containers equal the limits
//     summed over them, resource by resource;
//   - Burstable: anything else.
//
// When the pod sets pod-level resources (spec.resources), they decide
// instead: Guaranteed needs pod-level cpu and memory limits equal to the
// pod-level requests. Defer containers are podward's, unknown to the API
// server that computes the class in a cluster, and do not count. Default
// copies a container's limits into the requests it leaves unset, as the
// API server does, so a container with limits only is Guaranteed.
func ComputeQOSClass(spec *v1.PodSpec) v1.PodQOSClass {
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	guaranteed := true
	if r := spec.Resources; r != nil && (len(r.Requests) > 0 || len(r.Limits) > 0) {
		addQOSResources(requests, r.Requests)
		guaranteed = addQOSResources(limits, r.Limits)
		for _, name := range qosResources {
			if _, ok := requests[name]; !ok && !containersRequest(spec, name) {
				// The API server defaults an unset pod-level request to
				// the limit when no container requests that resource (when
				// one does, to the containers' aggregate, which this
				// leaves out: Burstable).
				if l, ok := limits[name]; ok {
					requests[name] = l.DeepCopy()
				}
			}
		}
	} else {
		for _, list := range [][]v1.Container{spec.Containers, spec.InitContainers} {
			for i := range list {
				addQOSResources(requests, list[i].Resources.Requests)
				if !addQOSResources(limits, list[i].Resources.Limits) {
					guaranteed = false
				}
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if !guaranteed || len(requests) != len(limits) {
		return v1.PodQOSBurstable
	}
	for name, req := range requests {
		if l, ok := limits[name]; !ok || l.Cmp(req) != 0 {
			return v1.PodQOSBurstable
		}
	}
	return v1.PodQOSGuaranteed
}

// addQOSResources adds the cpu and memory quantities above zero of list to
// sum, and says whether list has both.
func addQOSResources(sum, list v1.ResourceList) (both bool) {
	found := 0
	for _, name := range qosResources {
		q, ok := list[name]
		if !ok || q.Cmp(resource.Quantity{}) <= 0 {
			continue
		}
		found++
		total := q.DeepCopy()
		if prev, ok := sum[name]; ok {
			total.Add(prev)
		}
		sum[name] = total
	}
	return found == len(qosResources)
}

// containersRequest says whether any container of spec requests name.
func containersRequest(spec *v1.PodSpec, name v1.ResourceName) bool {
	for _, list := range [][]v1.Container{spec.Containers, spec.InitContainers} {
		for i := range list {
			if _, ok := list[i].Resources.Requests[name]; ok {
				return true
			}
		}
	}
	return false
}
