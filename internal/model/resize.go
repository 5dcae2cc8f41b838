package model

import (
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// ApplyResize is the API server's pods/resize update of cur (KEP-1287):
// from patched it takes the resources and resizePolicy of cur's regular
// containers and sidecars, matched by name, and nothing else (the
// subresource's strategy), then checks what the API server checks of a
// resize (pkg/apis/core/validation/validation.go, ValidatePodResize): only
// cpu and memory may change, a non-sidecar init container's resources may
// not, the resizePolicy is one the API server takes (resizePolicyErrors:
// no RestartContainer in a pod whose restartPolicy is Never), and the
// pod's QoS class may not change. It returns the pod to run,
// a copy; cur is not changed.
func ApplyResize(cur *Pod, patched *v1.Pod) (*Pod, field.ErrorList) {
	next := &Pod{Pod: cur.Pod.DeepCopy(), Defer: cur.Defer}
	var errs field.ErrorList
	take := func(path *field.Path, list []v1.Container, from []v1.Container, sidecarsOnly bool) {
		byName := make(map[string]*v1.Container, len(from))
		for i := range from {
			byName[from[i].Name] = &from[i]
		}
		for i := range list {
			c, p := &list[i], byName[list[i].Name]
			if p == nil {
				continue
			}
			idx := path.Index(i)
			if sidecarsOnly && !IsSidecar(c) {
				if !equality.Semantic.DeepEqual(c.Resources, p.Resources) {
					errs = append(errs, field.Forbidden(idx.Child("resources"), "resources for non-sidecar init containers are immutable"))
				}
				continue
			}
			for _, l := range []struct {
				name     string
				old, new v1.ResourceList
			}{{"limits", c.Resources.Limits, p.Resources.Limits}, {"requests", c.Resources.Requests, p.Resources.Requests}} {
				if !onlyCPUMemoryDiffer(l.old, l.new) {
					errs = append(errs, field.Forbidden(idx.Child("resources", l.name), "only cpu and memory resources are mutable"))
				}
			}
			c.Resources = *p.Resources.DeepCopy()
			c.ResizePolicy = append([]v1.ContainerResizePolicy(nil), p.ResizePolicy...)
			errs = append(errs, resizePolicyErrors(c.ResizePolicy, idx.Child("resizePolicy"), next.Spec.RestartPolicy)...)
		}
	}
	take(field.NewPath("spec", "initContainers"), next.Spec.InitContainers, patched.Spec.InitContainers, true)
	take(field.NewPath("spec", "containers"), next.Spec.Containers, patched.Spec.Containers, false)
	if len(errs) > 0 {
		return nil, errs
	}
	if was, now := ComputeQOSClass(&cur.Spec), ComputeQOSClass(&next.Spec); was != now {
		errs = append(errs, field.Invalid(field.NewPath("spec"), was, "Pod QOS Class may not change as a result of resizing"))
		return nil, errs
	}
	return next, nil
}

// onlyCPUMemoryDiffer says whether a and b differ in cpu and memory only.
func onlyCPUMemoryDiffer(a, b v1.ResourceList) bool {
	strip := func(l v1.ResourceList) v1.ResourceList {
		out := v1.ResourceList{}
		for k, v := range l {
			if k != v1.ResourceCPU && k != v1.ResourceMemory {
				out[k] = v
			}
		}
		return out
	}
	return equality.Semantic.DeepEqual(strip(a), strip(b))
}
