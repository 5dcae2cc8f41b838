package cri

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/runtime/hostfs"
)

// RemovePodLogs removes the pod's log directory, Root/pods/<podUID>/logs,
// and then the pod's directory when nothing else is left in it. It
// refuses, removing nothing, while the CRI runtime still has containers of
// the pod (CleanupPod removes them). It is idempotent; the CRI call is
// bounded by the call timeout.
func (r *Runtime) RemovePodLogs(ctx context.Context, uid types.UID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := hostfs.CheckUID(uid); err != nil {
		return fmt.Errorf("remove logs of pod %s: %w", uid, err)
	}
	cctx, cancel := r.call(ctx)
	ctrs, err := r.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: r.selector(LabelPodUID, string(uid))},
	})
	cancel()
	if err != nil {
		return fmt.Errorf("remove logs of pod %s: list containers: %w", uid, err)
	}
	if n := len(ctrs.GetContainers()); n > 0 {
		return fmt.Errorf("remove logs of pod %s: %d containers not cleaned up", uid, n)
	}
	if err := hostfs.RemovePodLogs(r.podDir(uid)); err != nil {
		return fmt.Errorf("remove logs of pod %s: %w", uid, err)
	}
	return nil
}

// PodLogs returns the pods that have logs under the root, each with when
// they were last written.
func (r *Runtime) PodLogs() (map[types.UID]time.Time, error) {
	logs, err := hostfs.ListPodLogs(r.podsDir())
	if err != nil {
		return nil, fmt.Errorf("list pod logs: %w", err)
	}
	return logs, nil
}
