package podworker

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
)

// resizeRetry is how soon a resize the runtime failed to apply is tried
// again, as the kubelet retries it at each sync of the pod.
const resizeRetry = 10 * time.Second

// resizeState is the pod's in-place resize (KEP-1287) as its status
// reports it: pending (not applied, with the PodResizePending reason
// Infeasible) or in progress (allocated, not yet applied; an error of the
// last try is the PodResizeInProgress reason Error). Both empty: every
// running container has what its spec asks for.
type resizeState struct {
	pendingReason, pendingMessage string
	inProgress                    bool
	errMessage                    string
}

// resize brings the resources of the pod's running regular containers and
// sidecars to what the pod's spec asks for now (a resize: the spec's
// resources changed under a running instance). planner.Resize decides, per
// container, in the containers' order — sidecars are taken as any other
// container, not first (seed 002): apply in place through the runtime's
// ResourceUpdater, or restart the container (its resizePolicy). A runtime
// that cannot resize makes the resize Infeasible. It returns when to try
// again (zero: on news). Called by the pod's goroutine while it syncs.
func (pw *podWorker) resize(ctx context.Context, now time.Time) (wake time.Time) {
	st := resizeState{}
	if pw.phase != Syncing {
		pw.resizing = st
		return time.Time{}
	}
	for _, c := range pw.ctrs {
		if c.ref.Role != model.RoleMain && c.ref.Role != model.RoleSidecar || c.obs.State != planner.Running || c.id == "" {
			continue
		}
		spec := pw.pod.Container(c.ref)
		if c.applied == nil {
			// Resumed after an agent restart: the instance has what the
			// spec had when it started, taken to be the spec's now.
			c.applied = spec.Resources.DeepCopy()
			continue
		}
		switch planner.Resize(spec, *c.applied) {
		case planner.ResizeNone:
			continue
		case planner.ResizeRestart:
			pw.workerStop(ctx, c, pw.pod.GracePeriodSeconds(), false, fmt.Sprintf("Container %s resize requires restart", c.ref.Name))
			st.inProgress = true
			continue
		}
		up, ok := pw.w.cfg.Runtime.(runtime.ResourceUpdater)
		if !ok {
			st.pendingReason, st.pendingMessage = v1.PodReasonInfeasible, "the container runtime cannot resize a running container"
			continue
		}
		if err := up.UpdateContainerResources(ctx, pw.pod, c.ref, c.id); err != nil {
			if errors.Is(err, runtime.ErrNotFound) {
				continue // it exited: its exit comes as an event
			}
			st.inProgress, st.errMessage = true, err.Error()
			wake = now.Add(resizeRetry)
			pw.log.Error("resize container", "container", c.ref.Name, "err", err)
			continue
		}
		c.applied = spec.Resources.DeepCopy()
		pw.log.Info("container resized", "container", c.ref.Name)
	}
	pw.resizing = st
	return wake
}

// resizeConditions are the pod's PodResizePending and PodResizeInProgress
// conditions, present while the resize is so (the kubelet's status
// manager, SetPodResizePendingCondition / SetPodResizeInProgressCondition).
func (pw *podWorker) resizeConditions() []v1.PodCondition {
	var out []v1.PodCondition
	if st := pw.resizing; st.pendingReason != "" {
		out = append(out, v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: st.pendingReason, Message: st.pendingMessage})
	}
	if st := pw.resizing; st.inProgress {
		c := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue}
		if st.errMessage != "" {
			c.Reason, c.Message = v1.PodReasonError, st.errMessage
		}
		out = append(out, c)
	}
	return out
}

// appliedResources is status.containerStatuses[].resources of a running
// container: the cpu and memory requests and limits its instance has;
// nil when it has none (nor when unknown).
func appliedResources(r *v1.ResourceRequirements) *v1.ResourceRequirements {
	if r == nil {
		return nil
	}
	pick := func(l v1.ResourceList) v1.ResourceList {
		var out v1.ResourceList
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			if q, ok := l[name]; ok {
				if out == nil {
					out = v1.ResourceList{}
				}
				out[name] = q.DeepCopy()
			}
		}
		return out
	}
	out := &v1.ResourceRequirements{Requests: pick(r.Requests), Limits: pick(r.Limits)}
	if out.Requests == nil && out.Limits == nil {
		return nil
	}
	return out
}

// allocatedResources is status.containerStatuses[].allocatedResources:
// the requests the node has allocated to the container, its spec's.
func allocatedResources(spec *v1.Container) v1.ResourceList {
	var out v1.ResourceList
	for name, q := range spec.Resources.Requests {
		if name == v1.ResourceCPU || name == v1.ResourceMemory {
			if out == nil {
				out = v1.ResourceList{}
			}
			out[name] = q.DeepCopy()
		}
	}
	return out
}
