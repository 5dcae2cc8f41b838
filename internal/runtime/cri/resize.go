package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

var _ runtime.ResourceUpdater = (*Runtime)(nil)

// UpdateContainerResources sends the container's resources, as pod's spec
// has them now, to the CRI runtime for its running instance id, in the
// shape its creation had (resources), as the kubelet's
// kuberuntime_container.go updateContainerResources does, and sets the
// pod's cgroup's limits (with Config.Cgroups) to what the spec gives them
// now, as the kubelet's doPodResizeAction does: the pod's first, so that a
// container whose limit grows has room in its pod; when that write fails
// (a pod limit below what the pod uses: a shrink), the container's go
// first and the pod's are written again after, as on the process runtime.
func (r *Runtime) UpdateContainerResources(ctx context.Context, pod *model.Pod, ref model.ContainerRef, id string) error {
	spec := pod.Container(ref)
	if spec == nil {
		return fmt.Errorf("update the resources of container %s: pod %s has no container %q", id, pod.Key(), ref.Name)
	}
	podFirst := r.ensurePodCgroup(pod)
	cctx, cancel := r.call(ctx)
	defer cancel()
	_, err := r.rt.UpdateContainerResources(cctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: r.resources(pod, spec)})
	if err != nil {
		return fmt.Errorf("update the resources of container %q (%s): %w", ref.Name, id, notFound(err))
	}
	if podFirst != nil {
		if err := r.ensurePodCgroup(pod); err != nil {
			return fmt.Errorf("update the resources of pod %s: %w", pod.Key(), err)
		}
	}
	return nil
}
