package process

import (
	"context"
	"fmt"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

var _ runtime.ResourceUpdater = (*Runtime)(nil)

// UpdateContainerResources writes the container's resources, as pod's spec
// has them now, to the cgroup of its running instance id, and the pod's to
// the pod's cgroup (see runtime.ResourceUpdater). Without cgroups there is
// nothing to write: the runtime enforces no limits then. ctx is not used:
// the writes are to the cgroup file system.
func (r *Runtime) UpdateContainerResources(_ context.Context, pod *model.Pod, ref model.ContainerRef, id string) error {
	r.mu.Lock()
	in := r.instances[id]
	r.mu.Unlock()
	if in == nil || in.exitStatus() != nil {
		return fmt.Errorf("update the resources of container %s: %w", id, runtime.ErrNotFound)
	}
	spec := pod.Container(ref)
	if spec == nil {
		return fmt.Errorf("update the resources of container %s: pod %s has no container %q", id, pod.Key(), ref.Name)
	}
	if r.cgroups == nil {
		return nil
	}
	if err := r.cgroups.resize(pod, spec, id); err != nil {
		return fmt.Errorf("update the resources of container %q (%s): %w", ref.Name, id, err)
	}
	return nil
}
