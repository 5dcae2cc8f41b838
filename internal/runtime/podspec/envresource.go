package podspec

import (
	"math"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// defaultedLimits are the resources whose missing limit a resourceFieldRef
// reads as the machine's allocatable (the kubelet's
// MergeContainerResourceLimits; hugepages are never overcommitted, so
// not them), and podLevelLimits those of them a pod-level limit stands in
// for first (defaultPodLimitsForDownwardAPI with PodLevelResources).
var (
	defaultedLimits = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage}
	podLevelLimits  = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory}
)

// ResourceValue is the value of a resourceFieldRef of container c of pod
// (or of the container ref.ContainerName names, when set), as the kubelet
// gives it (resource.ExtractContainerResourceValue): limits.X or
// requests.X of cpu, memory, ephemeral-storage or hugepages-<size>,
// divided by ref.divisor (1 when unset) and rounded up to an integer — cpu
// in millicores over the divisor's millicores, the others in bytes. A
// limit the container does not set is the pod's pod-level limit (cpu,
// memory) when it has one, else allocatable's (cpu, memory,
// ephemeral-storage); a request it does not set is 0. An unknown resource
// or container wraps runtime.ErrUnsupported.
func ResourceValue(pod *model.Pod, c *v1.Container, ref *v1.ResourceFieldSelector, allocatable v1.ResourceList) (string, error) {
	if ref.ContainerName != "" && ref.ContainerName != c.Name {
		other := containerNamed(pod, ref.ContainerName)
		if other == nil {
			return "", runtime.Unsupported("containerName: Not found: %q", ref.ContainerName)
		}
		c = other
	}
	kind, res, _ := strings.Cut(ref.Resource, ".")
	name := v1.ResourceName(res)
	known := name == v1.ResourceCPU || name == v1.ResourceMemory || name == v1.ResourceEphemeralStorage ||
		strings.HasPrefix(res, v1.ResourceHugePagesPrefix)
	if !known || (kind != "limits" && kind != "requests") {
		return "", runtime.Unsupported("resource: Unsupported value: %q", ref.Resource)
	}
	q := c.Resources.Requests[name]
	if kind == "limits" {
		q = limit(pod, c, name, allocatable)
	}
	divisor := ref.Divisor
	if divisor.IsZero() {
		divisor = resource.MustParse("1")
	}
	if name == v1.ResourceCPU {
		return ceilDiv(q.MilliValue(), divisor.MilliValue()), nil
	}
	return ceilDiv(q.Value(), divisor.Value()), nil
}

// limit is c's limit of name, defaulted as ResourceValue says.
func limit(pod *model.Pod, c *v1.Container, name v1.ResourceName, allocatable v1.ResourceList) resource.Quantity {
	if q, ok := c.Resources.Limits[name]; ok && !q.IsZero() {
		return q
	}
	for _, d := range defaultedLimits {
		if d != name {
			continue
		}
		q, ok := allocatable[name]
		if !ok {
			return resource.Quantity{}
		}
		for _, p := range podLevelLimits {
			if p != name || pod.Spec.Resources == nil {
				continue
			}
			if pq, ok := pod.Spec.Resources.Limits[name]; ok && !pq.IsZero() {
				return pq
			}
		}
		return q
	}
	return resource.Quantity{}
}

// ceilDiv is a/b rounded up, as the kubelet computes it (in floating
// point, so that its figures are ours too).
func ceilDiv(a, b int64) string {
	return strconv.FormatInt(int64(math.Ceil(float64(a)/float64(b))), 10)
}

// containerNamed is pod's container (of any role) of that name, nil when
// it has none.
func containerNamed(pod *model.Pod, name string) *v1.Container {
	for _, ref := range pod.Containers() {
		if ref.Name == name {
			return pod.Container(ref)
		}
	}
	return nil
}
