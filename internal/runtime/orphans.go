package runtime

import (
	"context"
	"errors"
	"fmt"
	"syscall"

	"k8s.io/apimachinery/pkg/types"
)

// KillRunning sends SIGKILL to every instance of the pod podUID that rt
// says still runs, for a pod no one is to stop gracefully any more (an
// orphan of the agent, what a foreground run left behind), and returns the
// IDs it signalled: their exits come as rt's events. One already gone
// (ErrNotFound) counts as exited. A runtime without ContainerLister has
// nothing it can list: KillRunning does nothing then. The error joins the
// failed signals (each naming its container) and a failed listing.
func KillRunning(ctx context.Context, rt Runtime, podUID types.UID) ([]string, error) {
	cl, ok := rt.(ContainerLister)
	if !ok {
		return nil, nil
	}
	list, err := cl.ListContainers(ctx, podUID)
	if err != nil {
		return nil, fmt.Errorf("list the containers of pod %s: %w", podUID, err)
	}
	var ids []string
	var errs []error
	for _, c := range list {
		if c.Exit != nil {
			continue
		}
		if err := rt.Signal(ctx, c.ID, syscall.SIGKILL); err != nil {
			if !errors.Is(err, ErrNotFound) {
				errs = append(errs, fmt.Errorf("kill container %s of pod %s: %w", c.Container, podUID, err))
			}
			continue
		}
		ids = append(ids, c.ID)
	}
	return ids, errors.Join(errs...)
}
