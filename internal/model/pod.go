package model

import (
	"encoding/json"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// Annotations that carry what v1.PodSpec has no field for.
const (
	// DeferContainersAnnotation holds a JSON list of v1.Container that run,
	// one after another, when the pod ends.
	DeferContainersAnnotation = "pod.alpha.kubernetes.io/defer-containers"
	// DeferContainerStatusesAnnotation is where podward publishes the defer
	// containers' statuses, as a JSON list of v1.ContainerStatus.
	DeferContainerStatusesAnnotation = "pod.alpha.kubernetes.io/defer-container-statuses"
	// LegacyInitContainersAnnotation is the pre-1.6 way of declaring init
	// containers; decoding moves it into spec.initContainers.
	LegacyInitContainersAnnotation = "pod.beta.kubernetes.io/init-containers"
)

// DefaultTerminationGracePeriodSeconds is Kubernetes' default grace period.
const DefaultTerminationGracePeriodSeconds int64 = 30

// DefaultServiceAccountName is the service account admission gives a pod
// that names none.
const DefaultServiceAccountName = "default"

// Pod is a decoded, validated pod. Pod.Pod is owned by the Pod; callers that
// want to change it make a DeepCopy first.
type Pod struct {
	*v1.Pod
	// Defer are the containers from DeferContainersAnnotation, in order.
	Defer []v1.Container
}

// Role says which part of the pod's lifecycle a container belongs to.
type Role int

// Roles start at one so that the zero value is never a valid role.
const (
	RoleInit Role = iota + 1
	RoleSidecar
	RoleMain
	RoleDefer
	// RoleEphemeral: a container of spec.ephemeralContainers, added to a
	// running pod (kubectl debug); started once, never restarted.
	RoleEphemeral
)

func (r Role) String() string {
	switch r {
	case RoleInit:
		return "init"
	case RoleSidecar:
		return "sidecar"
	case RoleMain:
		return "main"
	case RoleDefer:
		return "defer"
	case RoleEphemeral:
		return "ephemeral"
	default:
		return fmt.Sprintf("Role(%d)", int(r))
	}
}

// ContainerRef names one container of a pod together with its role and its
// index in the list it was declared in.
type ContainerRef struct {
	Name  string
	Role  Role
	Index int
}

// FieldPath is the Kubernetes event field path of the container, such as
// "spec.initContainers{proxy}" or "spec.deferContainers{upload}".
func (r ContainerRef) FieldPath() string {
	switch r.Role {
	case RoleInit, RoleSidecar:
		return "spec.initContainers{" + r.Name + "}"
	case RoleDefer:
		return "spec.deferContainers{" + r.Name + "}"
	case RoleEphemeral:
		return "spec.ephemeralContainers{" + r.Name + "}"
	default:
		return "spec.containers{" + r.Name + "}"
	}
}

// SpecPath is where the container is declared, as validation names it:
// "spec.containers[0]", "spec.initContainers[1]", or the defer containers'
// annotation.
func (r ContainerRef) SpecPath() string {
	switch r.Role {
	case RoleInit, RoleSidecar:
		return fmt.Sprintf("spec.initContainers[%d]", r.Index)
	case RoleDefer:
		return fmt.Sprintf("metadata.annotations[%s][%d]", DeferContainersAnnotation, r.Index)
	case RoleEphemeral:
		return fmt.Sprintf("spec.ephemeralContainers[%d]", r.Index)
	default:
		return fmt.Sprintf("spec.containers[%d]", r.Index)
	}
}

// IsSidecar reports whether an init container is a sidecar: an init container
// with restartPolicy Always.
func IsSidecar(c *v1.Container) bool {
	return c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// Containers lists every container of the pod in start order: init
// containers and sidecars as declared, then regular containers, then defer
// containers, then the ephemeral containers added so far, in the order they
// were added (they start whenever they are added; see docs/lifecycle.md).
func (p *Pod) Containers() []ContainerRef {
	refs := make([]ContainerRef, 0, len(p.Spec.InitContainers)+len(p.Spec.Containers)+len(p.Defer)+len(p.Spec.EphemeralContainers))
	for i := range p.Spec.InitContainers {
		role := RoleInit
		if IsSidecar(&p.Spec.InitContainers[i]) {
			role = RoleSidecar
		}
		refs = append(refs, ContainerRef{Name: p.Spec.InitContainers[i].Name, Role: role, Index: i})
	}
	for i := range p.Spec.Containers {
		refs = append(refs, ContainerRef{Name: p.Spec.Containers[i].Name, Role: RoleMain, Index: i})
	}
	for i := range p.Defer {
		refs = append(refs, ContainerRef{Name: p.Defer[i].Name, Role: RoleDefer, Index: i})
	}
	for i := range p.Spec.EphemeralContainers {
		refs = append(refs, ContainerRef{Name: p.Spec.EphemeralContainers[i].Name, Role: RoleEphemeral, Index: i})
	}
	return refs
}

// Container returns the spec of the referenced container, or nil when the
// pod has no such container. An ephemeral container's is its
// EphemeralContainerCommon seen as a v1.Container (the same fields, as the
// kubelet reads it), pointing into the pod.
func (p *Pod) Container(ref ContainerRef) *v1.Container {
	var list []v1.Container
	switch ref.Role {
	case RoleEphemeral:
		ecs := p.Spec.EphemeralContainers
		if ref.Index < 0 || ref.Index >= len(ecs) || ecs[ref.Index].Name != ref.Name {
			return nil
		}
		return (*v1.Container)(&ecs[ref.Index].EphemeralContainerCommon)
	case RoleInit, RoleSidecar:
		list = p.Spec.InitContainers
	case RoleMain:
		list = p.Spec.Containers
	case RoleDefer:
		list = p.Defer
	}
	if ref.Index < 0 || ref.Index >= len(list) || list[ref.Index].Name != ref.Name {
		return nil
	}
	return &list[ref.Index]
}

// GracePeriod is the pod's terminationGracePeriodSeconds, or Kubernetes'
// default of 30 s when unset.
func (p *Pod) GracePeriodSeconds() int64 {
	if p.Spec.TerminationGracePeriodSeconds != nil {
		return *p.Spec.TerminationGracePeriodSeconds
	}
	return DefaultTerminationGracePeriodSeconds
}

// RestartPolicy is the pod's restart policy, defaulted to Always as in
// Kubernetes.
func (p *Pod) RestartPolicy() v1.RestartPolicy {
	if p.Spec.RestartPolicy == "" {
		return v1.RestartPolicyAlways
	}
	return p.Spec.RestartPolicy
}

// Key is namespace/name, the pod's identity for people.
func (p *Pod) Key() string {
	return p.Namespace + "/" + p.Name
}

// FromV1 turns a v1.Pod back into a Pod, reading its defer containers from
// DeferContainersAnnotation. The pod is used as is (not copied, defaulted or
// validated): it is meant for pods podward stored or served itself.
func FromV1(p *v1.Pod) (*Pod, error) {
	out := &Pod{Pod: p}
	if raw, ok := p.Annotations[DeferContainersAnnotation]; ok && raw != "" {
		if err := json.Unmarshal([]byte(raw), &out.Defer); err != nil {
			return nil, fmt.Errorf("annotation %s: %w", DeferContainersAnnotation, err)
		}
	}
	return out, nil
}

// DeferStatuses reads the defer containers' statuses that podward published
// in DeferContainerStatusesAnnotation; nil when there are none or they do
// not parse.
func (p *Pod) DeferStatuses() []v1.ContainerStatus {
	raw := p.Annotations[DeferContainerStatusesAnnotation]
	if raw == "" {
		return nil
	}
	var out []v1.ContainerStatus
	if json.Unmarshal([]byte(raw), &out) != nil {
		return nil
	}
	return out
}

// Volume is the pod's volume of that name, nil when it has none.
func (p *Pod) Volume(name string) *v1.Volume {
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == name {
			return &p.Spec.Volumes[i]
		}
	}
	return nil
}

// FieldRef resolves a downward-API fieldPath of an env var's fieldRef with
// what a node knows without an API server: the pod's metadata, node and
// service account, and the addresses given. ok is false for a path it
// cannot resolve.
func (p *Pod) FieldRef(field, hostIP, podIP string) (value string, ok bool) {
	switch field {
	case "metadata.name":
		return p.Name, true
	case "metadata.namespace":
		return p.Namespace, true
	case "metadata.uid":
		return string(p.UID), true
	case "spec.nodeName":
		return p.Spec.NodeName, true
	case "spec.serviceAccountName":
		return p.Spec.ServiceAccountName, true
	case "status.hostIP", "status.hostIPs":
		return hostIP, true
	case "status.podIP", "status.podIPs":
		return podIP, true
	}
	for _, m := range []struct {
		prefix string
		values map[string]string
	}{{"metadata.labels", p.Labels}, {"metadata.annotations", p.Annotations}} {
		if key, ok := strings.CutPrefix(field, m.prefix+"['"); ok {
			if key, ok = strings.CutSuffix(key, "']"); ok {
				return m.values[key], true
			}
		}
	}
	return "", false
}
