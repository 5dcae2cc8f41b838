package model

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// msgEphemeralContainer is the API server's word for a field an ephemeral
// container may not set (validateFieldAllowList in
// pkg/apis/core/validation/validation.go).
const msgEphemeralContainer = "cannot be set for an Ephemeral Container"

// ValidateEphemeralUpdate checks next, the whole list of ephemeral
// containers an update of the ephemeralcontainers subresource asks for,
// against the running pod old, as the API server 1.37 does
// (ValidatePodEphemeralContainersUpdate and validateEphemeralContainers):
// existing ephemeral containers may be neither removed nor changed; an added
// one has a name unique across every container of the pod (defer containers
// too), a targetContainerName naming a regular or init container, none of
// the fields an ephemeral container may not set (ports, probes, lifecycle,
// resources, resizePolicy, restartPolicy and its rules, a volume mount's
// subPath), and is otherwise checked as a container. Errors carry the field
// path, e.g. spec.ephemeralContainers[1].ports. It does not change old or
// next; next is expected defaulted (see Default).
func ValidateEphemeralUpdate(old *Pod, next []v1.EphemeralContainer) field.ErrorList {
	path := field.NewPath("spec", "ephemeralContainers")
	v := &validator{pod: old, volumes: map[string]*v1.Volume{}, containers: map[string]bool{}, hostPorts: map[string]bool{}}
	for i := range old.Spec.Volumes {
		v.volumes[old.Spec.Volumes[i].Name] = &old.Spec.Volumes[i]
	}
	targets := map[string]bool{}
	for _, ref := range old.Containers() {
		if ref.Role != RoleEphemeral {
			v.containers[ref.Name] = true
		}
		if ref.Role != RoleEphemeral && ref.Role != RoleDefer {
			targets[ref.Name] = true
		}
	}
	byName := map[string]*v1.EphemeralContainer{}
	for i := range next {
		byName[next[i].Name] = &next[i]
	}
	existing := map[string]bool{}
	for i := range old.Spec.EphemeralContainers {
		was := &old.Spec.EphemeralContainers[i]
		existing[was.Name] = true
		switch now, ok := byName[was.Name]; {
		case !ok:
			v.add(field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be removed", was.Name)))
		case !equality.Semantic.DeepEqual(was, now):
			v.add(field.Forbidden(path, fmt.Sprintf("existing ephemeral containers %q may not be changed", was.Name)))
		}
	}
	for i := range next {
		ec := &next[i]
		idx := path.Index(i)
		if existing[ec.Name] {
			v.containers[ec.Name] = true
			continue
		}
		if ec.TargetContainerName != "" && !targets[ec.TargetContainerName] {
			v.add(field.NotFound(idx.Child("targetContainerName"), ec.TargetContainerName))
		}
		c := v.ephemeralForbidden((*v1.Container)(&ec.EphemeralContainerCommon), idx)
		v.container(&c, RoleEphemeral, idx)
	}
	return v.errs
}

// ephemeralForbidden reports each field of c an ephemeral container may not
// set, and returns a copy of c without them, for the checks every container
// gets.
func (v *validator) ephemeralForbidden(c *v1.Container, path *field.Path) v1.Container {
	set := []struct {
		name string
		set  bool
	}{
		{"ports", len(c.Ports) > 0},
		{"resources", len(c.Resources.Limits) > 0 || len(c.Resources.Requests) > 0 || len(c.Resources.Claims) > 0},
		{"resizePolicy", len(c.ResizePolicy) > 0},
		{"restartPolicy", c.RestartPolicy != nil},
		{"restartPolicyRules", len(c.RestartPolicyRules) > 0},
		{"livenessProbe", c.LivenessProbe != nil},
		{"readinessProbe", c.ReadinessProbe != nil},
		{"startupProbe", c.StartupProbe != nil},
		{"lifecycle", c.Lifecycle != nil},
	}
	for _, f := range set {
		if f.set {
			v.add(field.Forbidden(path.Child(f.name), msgEphemeralContainer))
		}
	}
	for i, m := range c.VolumeMounts {
		if m.SubPath != "" {
			v.add(field.Forbidden(path.Child("volumeMounts").Index(i).Child("subPath"), msgEphemeralContainer))
		}
		if m.SubPathExpr != "" {
			v.add(field.Forbidden(path.Child("volumeMounts").Index(i).Child("subPathExpr"), msgEphemeralContainer))
		}
	}
	cp := *c
	cp.Ports, cp.Resources, cp.ResizePolicy = nil, v1.ResourceRequirements{}, nil
	cp.RestartPolicy, cp.RestartPolicyRules = nil, nil
	cp.LivenessProbe, cp.ReadinessProbe, cp.StartupProbe, cp.Lifecycle = nil, nil, nil, nil
	return cp
}
