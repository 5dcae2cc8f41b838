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
// the cpu limit, the memory limit.
func ContainerResources(c *v1.Container) Resources {
	cpu := c.Resources.Limits.Cpu().MilliValue()
	if q, ok := c.Resources.Requests[v1.ResourceCPU]; ok {
		cpu = q.MilliValue()
	}
	return Resources{
		CPUShares: MilliCPUToShares(cpu),
		CPUQuota:  MilliCPUToQuota(c.Resources.Limits.Cpu().MilliValue()),
		Memory:    c.Resources.Limits.Memory().Value(),
	}
}

// PodResources are the pod's cgroup settings as the kubelet computes them
// (pkg/kubelet/cm/helpers_linux.go, ResourceConfigForPod): shares from
// the pod's cpu request, and for a Guaranteed pod the quota and memory
// limit of its limits; a Burstable pod gets them only when each of its
// containers has that limit, a BestEffort pod only the minimum shares.
// The pod's requests and limits are its containers' as Kubernetes sums
// them (podRequests); a defer container counts as an init container that
// runs once every sidecar started.
func PodResources(pod *model.Pod) Resources {
	switch model.QOSClass(pod.Pod) {
	case v1.PodQOSBestEffort:
		return Resources{CPUShares: minShares}
	case v1.PodQOSGuaranteed:
		return Resources{
			CPUShares: MilliCPUToShares(podAmount(pod, v1.ResourceCPU, requests).MilliValue()),
			CPUQuota:  MilliCPUToQuota(podAmount(pod, v1.ResourceCPU, limits).MilliValue()),
			Memory:    podAmount(pod, v1.ResourceMemory, limits).Value(),
		}
	}
	res := Resources{CPUShares: MilliCPUToShares(podAmount(pod, v1.ResourceCPU, requests).MilliValue())}
	if allLimit(pod, v1.ResourceCPU) {
		res.CPUQuota = MilliCPUToQuota(podAmount(pod, v1.ResourceCPU, limits).MilliValue())
	}
	if allLimit(pod, v1.ResourceMemory) {
		res.Memory = podAmount(pod, v1.ResourceMemory, limits).Value()
	}
	return res
}

// OOMScoreAdj is the container's oom_score_adj under the kubelet's QoS
// policy (pkg/kubelet/qos/policy.go, GetContainerOOMScoreAdjust) on a node
// of memoryCapacity bytes: -997 for a Guaranteed pod, 1000 for a
// BestEffort one, and for a Burstable one 1000 less the share of the
// node's memory it requests (a sidecar's no higher than the regular
// container requesting least), within [3, 999].
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
	adj := 1000 - 1000*c.Resources.Requests.Memory().Value()/memoryCapacity
	if model.IsSidecar(c) && len(pod.Spec.Containers) > 0 {
		least := pod.Spec.Containers[0].Resources.Requests.Memory().Value()
		for i := range pod.Spec.Containers {
			least = min(least, pod.Spec.Containers[i].Resources.Requests.Memory().Value())
		}
		adj = min(adj, 1000-1000*least/memoryCapacity)
	}
	switch {
	case adj < 1000+guaranteedOOMScoreAdj:
		return 1000 + guaranteedOOMScoreAdj
	case adj == besteffortOOMScoreAdj:
		return int(adj - 1)
	}
	return int(adj)
}

func requests(c *v1.Container) v1.ResourceList { return c.Resources.Requests }
func limits(c *v1.Container) v1.ResourceList   { return c.Resources.Limits }

// podAmount is the pod's amount of name, of each container's list, as
// Kubernetes aggregates it (k8s.io/component-helpers/resource,
// PodRequests and PodLimits): the regular containers and the sidecars
// side by side, or the most an init container needs with the sidecars
// started before it, whichever is more. A defer container runs with
// every sidecar.
func podAmount(pod *model.Pod, name v1.ResourceName, list func(*v1.Container) v1.ResourceList) *resource.Quantity {
	var sum, sidecars, peak resource.Quantity
	for i := range pod.Spec.Containers {
		sum.Add(list(&pod.Spec.Containers[i])[name])
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		q := list(c)[name].DeepCopy()
		if model.IsSidecar(c) {
			sum.Add(q)
			sidecars.Add(q)
			q = sidecars.DeepCopy()
		} else {
			q.Add(sidecars)
		}
		if q.Cmp(peak) > 0 {
			peak = q
		}
	}
	for i := range pod.Defer {
		q := list(&pod.Defer[i])[name].DeepCopy()
		q.Add(sidecars)
		if q.Cmp(peak) > 0 {
			peak = q
		}
	}
	if peak.Cmp(sum) > 0 {
		return &peak
	}
	return &sum
}

// allLimit says whether every container of the pod has a limit of name,
// without which the pod has none (ResourceConfigForPod's
// cpuLimitsDeclared and memoryLimitsDeclared).
func allLimit(pod *model.Pod, name v1.ResourceName) bool {
	for _, ref := range pod.Containers() {
		if q := pod.Container(ref).Resources.Limits[name]; q.IsZero() {
			return false
		}
	}
	return true
}

// SandboxResources are the pod sandbox's settings as the kubelet passes
// them (pkg/kubelet/kuberuntime/kuberuntime_sandbox_linux.go,
// calculateSandboxResources): the pod's summed requests and limits, as a
// container's.
func SandboxResources(pod *model.Pod) Resources {
	cpu := podAmount(pod, v1.ResourceCPU, requests).MilliValue()
	limit := podAmount(pod, v1.ResourceCPU, limits).MilliValue()
	if cpu == 0 {
		cpu = limit
	}
	return Resources{
		CPUShares: MilliCPUToShares(cpu),
		CPUQuota:  MilliCPUToQuota(limit),
		Memory:    podAmount(pod, v1.ResourceMemory, limits).Value(),
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
// aggregates them (podAmount, k8s.io/component-helpers/resource's
// PodRequests): what the node counts of the pod when it admits a resize
// (KEP-1287) against its allocatable. A resource no container requests
// is zero.
func PodRequests(pod *model.Pod) v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:    *podAmount(pod, v1.ResourceCPU, requests),
		v1.ResourceMemory: *podAmount(pod, v1.ResourceMemory, requests),
	}
}
