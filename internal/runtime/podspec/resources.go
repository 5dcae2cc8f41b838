package podspec

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/cgroups"
)

// CFS figures, as the kubelet uses them (pkg/kubelet/cm/helpers_linux.go).
const (
	// CPUPeriod is the CFS period, in µs (100 ms).
	CPUPeriod = 100_000
	minShares = 2
	maxShares = 262144
	minQuota  = 1000 // µs
)

// OOM score adjustments of the kubelet's QoS policy
// (pkg/kubelet/qos/policy.go).
const (
	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// Resources are the cgroup settings of a container or a pod, in the
// kernel's units, as the kubelet computes them. A zero field is no limit.
type Resources struct {
	// CPUShares is never zero: the kubelet gives a container or pod
	// without a cpu request the minimum, 2.
	CPUShares int64
	// CPUQuota is the CFS quota in µs per CPUPeriod; 0: none.
	CPUQuota int64
	// Memory is the hard limit in bytes; 0: none.
	Memory int64
}

// MilliCPUToShares is the kubelet's cpu.shares of a cpu request
// (pkg/kubelet/cm/helpers_linux.go): 1024 per CPU, at least 2.
func MilliCPUToShares(milli int64) int64 {
	return min(max(milli*1024/1000, minShares), maxShares)
}

// MilliCPUToQuota is the kubelet's CFS quota of a cpu limit over
// CPUPeriod, at least 1 ms; none without a limit.
func MilliCPUToQuota(milli int64) int64 {
	if milli == 0 {
		return 0
	}
	return max(milli*CPUPeriod/1000, minQuota)
}

// ContainerResources are the container's cgroup settings as the kubelet
// computes them (pkg/kubelet/kuberuntime/kuberuntime_container_linux.go,
// generateLinuxContainerResources and calculateLinuxResources): shares
// from the cpu request (its limit when it has no request), the quota from
// the cpu limit, the memory limit. In a pod that sets pod-level resources
// a container without a cpu or memory limit of its own has the pod's
// (getCPULimit, getMemoryLimit).
func ContainerResources(pod *model.Pod, c *v1.Container) Resources {
	cpuLimit := containerLimit(pod, c, v1.ResourceCPU).MilliValue()
	cpu := cpuLimit
	if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
		cpu = q.MilliValue()
	}
	return Resources{
		CPUShares: MilliCPUToShares(cpu),
		CPUQuota:  MilliCPUToQuota(cpuLimit),
		Memory:    containerLimit(pod, c, v1.ResourceMemory).Value(),
	}
}

// containerLimit is c's limit of name, or the pod-level one when c has
// none and the pod sets pod-level resources.
func containerLimit(pod *model.Pod, c *v1.Container, name v1.ResourceName) *resource.Quantity {
	if q := c.Resources.Limits[name]; !q.IsZero() || !model.PodLevelResourcesSet(&pod.Spec) {
		return &q
	}
	q := pod.Spec.Resources.Limits[name]
	return &q
}

// PodResources are the pod's cgroup settings as the kubelet computes them
// (pkg/kubelet/cm/helpers_linux.go, ResourceConfigForPod): shares from
// the pod's cpu request, and for a Guaranteed pod the quota and memory
// limit of its limits; a Burstable pod gets them only when each of its
// containers has that limit, or the pod sets it at pod level; a
// BestEffort pod only the minimum shares. The pod's requests and limits
// are podList's: its containers' as Kubernetes sums them, but for what it
// sets at pod level (spec.resources, which then decides).
func PodResources(pod *model.Pod) Resources {
	reqs, lims := podList(pod, model.Requests), podList(pod, model.Limits)
	switch model.QOSClass(pod.Pod) {
	case v1.PodQOSBestEffort:
		return Resources{CPUShares: minShares}
	case v1.PodQOSGuaranteed:
		return Resources{
			CPUShares: MilliCPUToShares(reqs.Cpu().MilliValue()),
			CPUQuota:  MilliCPUToQuota(lims.Cpu().MilliValue()),
			Memory:    lims.Memory().Value(),
		}
	}
	res := Resources{CPUShares: MilliCPUToShares(reqs.Cpu().MilliValue())}
	if allLimit(pod, v1.ResourceCPU) {
		res.CPUQuota = MilliCPUToQuota(lims.Cpu().MilliValue())
	}
	if allLimit(pod, v1.ResourceMemory) {
		res.Memory = lims.Memory().Value()
	}
	return res
}

// PodCgroupResources are what the pod's cgroup (PodCgroup) is given, as
// the kubelet's pod container manager sets them on both runtimes
// (pkg/kubelet/cm/pod_container_manager_linux.go, EnsureExists): the
// pod's settings (PodResources) and, when pids is above zero, that pid
// limit (its podPidsLimit, --pod-max-pids). The process runtime adds room
// for its shims.
func PodCgroupResources(pod *model.Pod, pids int64) cgroups.Resources {
	r := PodResources(pod)
	return cgroups.Resources{CPUShares: uint64(r.CPUShares), CPUQuota: r.CPUQuota, Memory: r.Memory, Pids: max(pids, 0)}
}

// OOMScoreAdj is the container's oom_score_adj under the kubelet's QoS
// policy (pkg/kubelet/qos/policy.go, GetContainerOOMScoreAdjust) on a machine
// of memoryCapacity bytes: -997 for a Guaranteed pod, 1000 for a
// BestEffort one, and for a Burstable one 1000 less the share of the
// machine's memory it requests (a sidecar's no higher than the regular
// container requesting least), within [3, 999]. What a pod-level memory
// request has beyond its containers' is shared among them
// (remainingPodMemReqPerContainer).
func OOMScoreAdj(pod *model.Pod, c *v1.Container, memoryCapacity int64) int {
	switch model.QOSClass(pod.Pod) {
	case v1.PodQOSGuaranteed:
		return guaranteedOOMScoreAdj
	case v1.PodQOSBestEffort:
		return besteffortOOMScoreAdj
	}
	if memoryCapacity <= 0 {
		return besteffortOOMScoreAdj - 1
	}
	extra := remainingMemoryRequest(pod)
	adj := 1000 - 1000*(c.Resources.Requests.Memory().Value()+extra)/memoryCapacity
	if model.IsSidecar(c) && len(pod.Spec.Containers) > 0 {
		least := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for i := range pod.Spec.Containers {
			least = min(least, pod.Spec.Containers[i].Resources.Requests.Memory().Value())
		}
		adj = min(adj, 1000-1000*(least+extra)/memoryCapacity)
	}
	switch {
	case adj < 1000+guaranteedOOMScoreAdj:
		return 1000 + guaranteedOOMScoreAdj
	case adj == besteffortOOMScoreAdj:
		return int(adj - 1)
	}
	return int(adj)
}

// remainingMemoryRequest is each container's share of what the pod-level
// memory request has beyond its containers' aggregate (the kubelet's
// pkg/kubelet/qos/helpers.go, remainingPodMemReqPerContainer): none
// without one.
func remainingMemoryRequest(pod *model.Pod) int64 {
	r := pod.Spec.Resources
	if r == nil || r.Requests.Memory().IsZero() {
		return 0
	}
	ctrs := model.AggregateResources(&pod.Spec, nil, model.Requests)
	left := max(r.Requests.Memory().Value()-ctrs.Memory().Value(), 0)
	return left / int64(len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
}

// podList is the pod's requests or limits (pick: model.Requests or
// model.Limits) of cpu and memory as the kubelet has them
// (k8s.io/component-helpers/resource, PodRequests and PodLimits): its
// containers' aggregate (a defer container counts as an init container
// that runs once every sidecar started), but what the pod sets at pod
// level is the pod's.
func podList(pod *model.Pod, pick func(*v1.ResourceRequirements) v1.ResourceList) v1.ResourceList {
	list := model.AggregateResources(&pod.Spec, pod.Defer, pick)
	if r := pod.Spec.Resources; r != nil && model.PodLevelResourcesSet(&pod.Spec) {
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := pick(r)[name]; ok {
				list[name] = q.DeepCopy()
			}
		}
	}
	return list
}

// allLimit says whether the pod has a limit of name: every container
// has one, or the pod sets it at pod level (ResourceConfigForPod's
// cpuLimitsDeclared and memoryLimitsDeclared).
func allLimit(pod *model.Pod, name v1.ResourceName) bool {
	if model.PodLevelResourcesSet(&pod.Spec) {
		if q := pod.Spec.Resources.Limits[name]; !q.IsZero() {
			return true
		}
	}
	for _, ref := range pod.Containers() {
		if q := pod.Container(ref).Resources.Limits[name]; q.IsZero() {
			return false
		}
	}
	return true
}

// SandboxResources are the pod sandbox's settings as the kubelet passes
// them (pkg/kubelet/kuberuntime/kuberuntime_sandbox_linux.go,
// calculateSandboxResources): the pod's requests and limits (podList), as
// a container's.
func SandboxResources(pod *model.Pod) Resources {
	reqs, lims := podList(pod, model.Requests), podList(pod, model.Limits)
	limit := lims.Cpu().MilliValue()
	cpu := limit
	if q, ok := reqs[v1.ResourceCPU]; ok {
		cpu = q.MilliValue()
	}
	return Resources{
		CPUShares: MilliCPUToShares(cpu),
		CPUQuota:  MilliCPUToQuota(limit),
		Memory:    lims.Memory().Value(),
	}
}

// cgroupQoS is where each QoS class's pods have their cgroup.
var cgroupQoS = map[v1.PodQOSClass]cgroups.QoS{
	v1.PodQOSGuaranteed: cgroups.Guaranteed,
	v1.PodQOSBurstable:  cgroups.Burstable,
	v1.PodQOSBestEffort: cgroups.BestEffort,
}

// PodCgroup is the pod's cgroup under root, in the kubelet's QoS layout
// (cgroups.PodPath): the process runtime's pod cgroup, the CRI runtime's
// cgroup parent.
func PodCgroup(root string, pod *model.Pod) string {
	return cgroups.PodPath(root, cgroupQoS[model.QOSClass(pod.Pod)], string(pod.UID))
}

// PodRequests are the pod's cpu and memory requests as Kubernetes
// aggregates them (podList, k8s.io/component-helpers/resource's
// PodRequests, pod-level requests included): what the node counts of the
// pod when it admits a resize (KEP-1287) against its allocatable. A
// resource nothing requests is zero.
func PodRequests(pod *model.Pod) v1.ResourceList {
	list := podList(pod, model.Requests)
	out := v1.ResourceList{}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		out[name] = list[name]
	}
	return out
}
