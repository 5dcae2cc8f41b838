package process

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/runtime/hostfs"
)

// RemovePodLogs removes the pod's logs, Root/pods/<podUID>/logs, and then
// the pod's directory when nothing else is left in it (a CleanupPod that
// failed leaves instances or volumes there, which ListPods then reports).
// It refuses, removing nothing, while the runtime has instances of the pod:
// CleanupPod forgets them. It is idempotent. ctx is only checked first.
func (r *Runtime) RemovePodLogs(ctx context.Context, uid types.UID) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := hostfs.CheckUID(uid); err != nil {
		return fmt.Errorf("remove logs of pod %s: %w", uid, err)
	}
	r.mu.Lock()
	left := len(r.byPod[uid])
	r.mu.Unlock()
	if left > 0 {
		return fmt.Errorf("remove logs of pod %s: %d container instances not cleaned up", uid, left)
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
