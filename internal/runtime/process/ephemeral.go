package process

import (
	"fmt"
	"slices"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// targetOf is the main process of the running instance of the target of
// ephemeral container ref (its targetContainerName, kubectl debug
// --target), whose mount and UTS namespaces the container joins
// (shim.Spec.Join) as an exec in the target does: so the debug container
// sees what the target sees, its volumes and what it mounted itself, and
// the host name it set. nil for any other container. A target that does
// not run is an error, as in the kubelet (the CRI runtime's shareTarget).
func (r *Runtime) targetOf(pod *model.Pod, ref model.ContainerRef) (*shim.Ident, error) {
	name := targetName(pod, ref)
	if name == "" {
		return nil, nil
	}
	if !slices.ContainsFunc(pod.Containers(), func(t model.ContainerRef) bool {
		return t.Name == name && t.Role != model.RoleEphemeral && t.Role != model.RoleDefer
	}) {
		return nil, fmt.Errorf("targetContainerName %q: no such container", name)
	}
	in := r.running(pod.UID, name)
	if in == nil || in.proc.Pid == 0 {
		return nil, fmt.Errorf("targetContainerName %q: unable to find target container: it does not run", name)
	}
	id := in.proc
	return &id, nil
}

// targetName is the targetContainerName of ephemeral container ref, ""
// for any other container.
func targetName(pod *model.Pod, ref model.ContainerRef) string {
	if ref.Role != model.RoleEphemeral || ref.Index >= len(pod.Spec.EphemeralContainers) {
		return ""
	}
	return pod.Spec.EphemeralContainers[ref.Index].TargetContainerName
}
