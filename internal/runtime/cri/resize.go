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
// kuberuntime_container.go updateContainerResources does. The pod-level
// cgroup is the CRI runtime's sandbox's, left as it is (see
// docs/lifecycle.md).
func (r *Runtime) UpdateContainerResources(ctx context.Context, pod *model.Pod, ref model.ContainerRef, id string) error {
	spec := pod.Container(ref)
	if spec == nil {
		return fmt.Errorf("update the resources of container %s: pod %s has no container %q", id, pod.Key(), ref.Name)
	}
	cctx, cancel := r.call(ctx)
	defer cancel()
	_, err := r.rt.UpdateContainerResources(cctx, &runtimeapi.UpdateContainerResourcesRequest{ContainerId: id, Linux: r.resources(pod, spec)})
	if err != nil {
		return fmt.Errorf("update the resources of container %q (%s): %w", ref.Name, id, notFound(err))
	}
	return nil
}
