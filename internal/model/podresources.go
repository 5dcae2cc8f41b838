package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Pod-level resources (spec.resources, KEP-2837, beta and on by default
// since Kubernetes 1.34): the pod's requests and limits as a whole, which
// decide its QoS class and its cgroup's limits instead of its containers'
// sums. Only cpu, memory and hugepages may be set at pod level.

// podLevelResourceNames are the names spec.resources may hold besides
// hugepages-<size>, as the API server lists them when it refuses another
// (k8s.io/component-helpers/resource, SupportedPodLevelResources).
var podLevelResourceNames = []string{string(v1.ResourceCPU), v1.ResourceHugePagesPrefix, string(v1.ResourceMemory)}

// isPodLevelResource says whether name may be set at pod level
// (IsSupportedPodLevelResource).
func isPodLevelResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory || isHugePages(name)
}

func isHugePages(name v1.ResourceName) bool {
	return strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix)
}

// PodLevelResourcesSet says whether spec sets pod-level resources: a
// request or a limit of cpu, memory or hugepages in spec.resources
// (k8s.io/component-helpers/resource, IsPodLevelResourcesSet). Only then do
// they decide the pod's QoS class and its cgroup's limits.
func PodLevelResourcesSet(spec *v1.PodSpec) bool {
	r := spec.Resources
	if r == nil {
		return false
	}
	for _, list := range []v1.ResourceList{r.Requests, r.Limits} {
		for name := range list {
			if isPodLevelResource(name) {
				return true
			}
		}
	}
	return false
}

// Requests and Limits pick a list of requirements, for AggregateResources.
func Requests(r *v1.ResourceRequirements) v1.ResourceList { return r.Requests }

// Limits: see Requests.
func Limits(r *v1.ResourceRequirements) v1.ResourceList { return r.Limits }

// AggregateResources is what the containers of spec need together of each
// resource their lists (pick: Requests or Limits) name, as Kubernetes
// aggregates them (k8s.io/component-helpers/resource,
// AggregateContainerRequests and AggregateContainerLimits): the regular
// containers and the sidecars side by side, or the most an init container
// needs with the sidecars started before it, whichever is more. Pod-level
// resources are not looked at. The defer containers deferred, podward's,
// run as init containers do once every sidecar started; nil leaves them
// out, as the API server, which does not know them, does.
func AggregateResources(spec *v1.PodSpec, deferred []v1.Container, pick func(*v1.ResourceRequirements) v1.ResourceList) v1.ResourceList {
	sum, sidecars, peak := v1.ResourceList{}, v1.ResourceList{}, v1.ResourceList{}
	for i := range spec.Containers {
		addList(sum, pick(&spec.Containers[i].Resources))
	}
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if IsSidecar(c) {
			addList(sum, pick(&c.Resources))
			addList(sidecars, pick(&c.Resources))
			maxList(peak, sidecars)
			continue
		}
		need := v1.ResourceList{}
		addList(need, pick(&c.Resources))
		addList(need, sidecars)
		maxList(peak, need)
	}
	for i := range deferred {
		need := v1.ResourceList{}
		addList(need, pick(&deferred[i].Resources))
		addList(need, sidecars)
		maxList(peak, need)
	}
	maxList(sum, peak)
	return sum
}

// addList adds each quantity of add to sum.
func addList(sum, add v1.ResourceList) {
	for name, q := range add {
		total := q.DeepCopy()
		if prev, ok := sum[name]; ok {
			total.Add(prev)
		}
		sum[name] = total
	}
}

// maxList raises each quantity of to to other's where other's is more.
func maxList(to, other v1.ResourceList) {
	for name, q := range other {
		if prev, ok := to[name]; !ok || q.Cmp(prev) > 0 {
			to[name] = q.DeepCopy()
		}
	}
}

// defaultPodLevelResources fills in the pod-level resources the API server
// completes on create when a pod sets some (pkg/api/pod/util.go,
// DefaultPodLevelResources, with PodLevelResourcesFixDefaulting, on by
// default since 1.37), after the containers' requests were defaulted:
//
//  1. a hugepages limit the containers have and the pod neither requests
//     nor limits becomes the containers' aggregate;
//  2. an unset cpu or memory request becomes the containers' aggregate
//     request, else any unset request the pod-level limit;
//  3. an unset limit of what the pod requests becomes the containers'
//     aggregate limit when every container (init and sidecar too) has one,
//     raised to the pod-level request if that is more.
//
// Defer containers do not count: a cluster's API server does not know
// them.
func defaultPodLevelResources(spec *v1.PodSpec) {
	r := spec.Resources
	if r == nil || (len(r.Requests) == 0 && len(r.Limits) == 0) {
		return
	}
	ctrLimits := AggregateResources(spec, nil, Limits)
	for name, q := range ctrLimits {
		_, requested := r.Requests[name]
		if _, limited := r.Limits[name]; isHugePages(name) && !requested && !limited {
			if r.Limits == nil {
				r.Limits = v1.ResourceList{}
			}
			r.Limits[name] = q.DeepCopy()
		}
	}
	requests := r.Requests
	if requests == nil {
		requests = v1.ResourceList{}
	}
	for name, q := range AggregateResources(spec, nil, Requests) {
		if _, ok := requests[name]; !ok && (name == v1.ResourceCPU || name == v1.ResourceMemory) {
			requests[name] = q.DeepCopy()
		}
	}
	for name, q := range r.Limits {
		if _, ok := requests[name]; !ok && isPodLevelResource(name) {
			requests[name] = q.DeepCopy()
		}
	}
	if len(requests) > 0 {
		r.Requests = requests
	}
	for name, req := range r.Requests {
		if _, limited := r.Limits[name]; limited || !isPodLevelResource(name) || !everyContainerLimits(spec, name) {
			continue
		}
		lim, ok := ctrLimits[name]
		if !ok {
			continue
		}
		if req.Cmp(lim) > 0 {
			lim = req
		}
		if r.Limits == nil {
			r.Limits = v1.ResourceList{}
		}
		r.Limits[name] = lim.DeepCopy()
	}
}

// everyContainerLimits says whether every init, sidecar and regular
// container of spec has a limit of name.
func everyContainerLimits(spec *v1.PodSpec, name v1.ResourceName) bool {
	for _, list := range [][]v1.Container{spec.InitContainers, spec.Containers} {
		for i := range list {
			if _, ok := list[i].Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	return true
}

// podResources checks spec.resources as the API server does
// (pkg/apis/core/validation/validation.go, validatePodResources): not on a
// Windows pod, no claims, only cpu, memory and hugepages, quantities not
// negative, each request within its limit (a hugepages request equal to
// it), and the containers within the pod: their aggregate requests no more
// than the pod's (their hugepages limits too), each regular container's
// limits no more than the pod's. The last error's odd path is the API
// server's own.
func (v *validator) podResources() {
	r := v.pod.Spec.Resources
	if r == nil {
		return
	}
	path := field.NewPath("spec", "resources")
	if v.windowsOnly {
		v.add(field.Forbidden(path, "may not be set for a windows pod"))
		return
	}
	if r.Claims != nil {
		v.add(field.Forbidden(path.Child("claims"), "claims may not be set for Resources at pod-level"))
	}
	limPath, reqPath := path.Child("limits"), path.Child("requests")
	cpuOrMemory, hugePages := false, false
	for _, name := range slices.Sorted(maps.Keys(r.Limits)) {
		v.podResourceQuantity(name, r.Limits, limPath.Key(string(name)))
		cpuOrMemory = cpuOrMemory || name == v1.ResourceCPU || name == v1.ResourceMemory
		hugePages = hugePages || isHugePages(name)
	}
	for _, name := range slices.Sorted(maps.Keys(r.Requests)) {
		req, fieldPath := r.Requests[name], reqPath.Key(string(name))
		v.podResourceQuantity(name, r.Requests, fieldPath)
		cpuOrMemory = cpuOrMemory || name == v1.ResourceCPU || name == v1.ResourceMemory
		hugePages = hugePages || isHugePages(name)
		lim, hasLimit := r.Limits[name]
		switch {
		case hasLimit && isHugePages(name) && req.Cmp(lim) != 0:
			v.add(field.Invalid(fieldPath, req.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
		case hasLimit && req.Cmp(lim) > 0:
			v.add(field.Invalid(fieldPath, req.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		case !hasLimit && isHugePages(name):
			v.add(field.Required(limPath, msgNonOvercommitable))
		}
	}
	if hugePages && !cpuOrMemory {
		v.add(field.Forbidden(path, "HugePages require cpu or memory"))
	}
	v.podResourceConsistency(path)
}

// podResourceQuantity checks the name and quantity of one pod-level
// resource in list.
func (v *validator) podResourceQuantity(name v1.ResourceName, list v1.ResourceList, path *field.Path) {
	if msgs := validation.IsQualifiedName(string(name)); len(msgs) > 0 {
		v.invalidEach(path, name, msgs)
	} else if !isPodLevelResource(name) {
		v.add(field.NotSupported(path, name, podLevelResourceNames))
	}
	if q := list[name]; q.Sign() < 0 {
		v.add(field.Invalid(path, q.String(), msgNonNegative))
	}
}

// podResourceConsistency checks the containers against the pod-level
// resources (validatePodResourceConsistency).
func (v *validator) podResourceConsistency(path *field.Path) {
	spec := &v.pod.Spec
	r := spec.Resources
	requests := AggregateResources(spec, nil, Requests)
	for _, name := range slices.Sorted(maps.Keys(requests)) {
		if pod, ok := r.Requests[name]; ok {
			if ctrs := requests[name]; ctrs.Cmp(pod) > 0 {
				v.add(field.Invalid(path.Child("requests").Key(string(name)), pod.String(),
					fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", ctrs.String())))
			}
		}
	}
	limits := AggregateResources(spec, nil, Limits)
	for _, name := range slices.Sorted(maps.Keys(limits)) {
		if pod, ok := r.Limits[name]; ok && isHugePages(name) {
			if ctrs := limits[name]; ctrs.Cmp(pod) > 0 {
				v.add(field.Invalid(path.Child("limits").Key(string(name)), pod.String(),
					fmt.Sprintf("must be greater than or equal to aggregate container limits of %s", ctrs.String())))
			}
		}
	}
	for i := range spec.Containers {
		ctr := spec.Containers[i].Resources.Limits
		for _, name := range slices.Sorted(maps.Keys(ctr)) {
			pod, ok := r.Limits[name]
			if q := ctr[name]; ok && q.Cmp(pod) > 0 {
				v.add(field.Invalid(path.Child("containers").Index(i).Key(string(name)).Child("limits"), q.String(),
					fmt.Sprintf("must be less than or equal to pod limits of %s", pod.String())))
			}
		}
	}
}
