package cri

import (
	"context"
	"fmt"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
)

// shareTarget puts an ephemeral container with a targetContainerName
// (kubectl debug --target) in the process namespace of its target's running
// instance, as the kubelet does (pkg/kubelet/kuberuntime/kuberuntime_container.go,
// startContainer and getTargetID; kuberuntime_container_linux.go: a
// per-container PID namespace becomes NamespaceMode_TARGET with the target's
// ID): a pod that shares its process namespace, or the host's, keeps it.
// A target that does not run is an error, as in the kubelet; any other
// container's config is left as it is.
func (r *Runtime) shareTarget(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cfg *runtimeapi.ContainerConfig) error {
	if ref.Role != model.RoleEphemeral || ref.Index >= len(pod.Spec.EphemeralContainers) {
		return nil
	}
	target := pod.Spec.EphemeralContainers[ref.Index].TargetContainerName
	ns := cfg.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if target == "" || ns == nil || ns.Pid != runtimeapi.NamespaceMode_CONTAINER {
		return nil
	}
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: r.selector(LabelPodUID, string(pod.UID), LabelContainerName, target),
	}})
	cancel()
	if err != nil {
		return fmt.Errorf("targetContainerName %q: list its instances: %w", target, err)
	}
	if len(resp.GetContainers()) == 0 {
		return fmt.Errorf("targetContainerName %q: unable to find target container: it does not run", target)
	}
	ns.Pid = runtimeapi.NamespaceMode_TARGET
	ns.TargetId = resp.GetContainers()[0].GetId()
	return nil
}
