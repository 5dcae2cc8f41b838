package podworker

import (
	"context"
	"errors"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
)

// resizeRetry is how soon a resize the runtime failed to apply is tried
// again, as the kubelet retries it at each sync of the pod.
const resizeRetry = 10 * time.Second

// messageCannotResize is the PodResizePending message of a resize the
// runtime cannot apply in place (no runtime.ResourceUpdater).
const messageCannotResize = "the container runtime cannot resize a running container"

// resizeState is the pod's in-place resize (KEP-1287) as its status
// reports it, in the kubelet's two conditions:
//
//   - pending: the spec asks for resources the node has not allocated —
//     PodResizePending, reason Infeasible (never: the runtime cannot
//     resize) or Deferred (not now: the node has no room), observing the
//     generation it was decided for;
//   - in progress: the node allocated resources that a running container
//     does not have yet — PodResizeInProgress, observing the generation
//     allocated (allocState.gen), with reason Error and the message of
//     the last failed try.
//
// Both empty: every running container has what its spec asks for.
type resizeState struct {
	pendingReason, pendingMessage string
	pendingGen                    int64
	inProgress                    bool
	errMessage                    string
}

// resize brings the pod's running regular containers and sidecars to the
// resources its spec asks for now, in the kubelet's two steps: allocate
// (the node's admission of the new resources), then actuate (apply what
// the node allocated to each running instance). Sidecars are taken as any
// other container, in the pod's order, not first (seed 002). It returns
// when to try again (zero: on news). Called by the pod's goroutine while
// it syncs; a pod that terminates is not resized, and shows no resize.
func (pw *podWorker) resize(ctx context.Context, now time.Time) (wake time.Time) {
	if pw.phase != Syncing {
		pw.alloc.resize = resizeState{}
		pw.claim.deferred.Store(false)
		return time.Time{}
	}
	pw.allocate()
	return pw.actuate(ctx, now)
}

// allocate is the node's side of a resize (the kubelet's allocation
// manager, handlePodResourcesResize): when the spec gives the regular
// containers and sidecars other resources than the node allocated to
// them, the node takes them if it can — the runtime can apply them
// (feasible) and the node has room (Workers.admitResize) — and they are
// the containers' from then on: a new allocation starts the resize's
// progress afresh. Otherwise the resize is pending, with why. A spec that
// went back to what was allocated ends a pending resize.
func (pw *podWorker) allocate() {
	if pw.alloc.allocated.matches(pw.pod) {
		pw.alloc.notPending()
		pw.claim.deferred.Store(false)
		return
	}
	desired := specAllocation(pw.pod)
	reason, message := pw.feasible(desired)
	freed := false
	if reason == "" {
		reason, message, freed = pw.w.admitResize(pw, pw.pod)
	}
	if reason != "" {
		if pw.alloc.pending(reason, message, pw.pod.Generation) {
			pw.log.Info("resize pending", "reason", reason, "message", message)
		}
		return
	}
	pw.alloc.admitted(pw.pod, desired)
	pw.log.Info("resize allocated", "generation", pw.alloc.gen)
	if freed {
		pw.w.retryDeferredResizes()
	}
}

// feasible is "" when the runtime can apply desired, else Infeasible and
// why: a resource to change in place needs a runtime.ResourceUpdater (one
// whose resizePolicy restarts the container does not).
func (pw *podWorker) feasible(desired allocation) (reason, message string) {
	if _, ok := pw.w.cfg.Runtime.(runtime.ResourceUpdater); ok {
		return "", ""
	}
	for _, c := range pw.ctrs.list {
		r, ok := desired[c.ref.Name]
		if !ok {
			continue
		}
		spec := *pw.pod.Container(c.ref)
		spec.Resources = r
		if planner.Resize(&spec, pw.alloc.allocated[c.ref.Name]) == planner.ResizeInPlace {
			return v1.PodReasonInfeasible, messageCannotResize
		}
	}
	return "", ""
}

// actuate gives each running regular container and sidecar what the node
// allocated to it: nothing when its instance has it already; else, as
// planner.Resize decides, in place through the runtime's ResourceUpdater,
// or by a restart of that container (its resizePolicy). The allocation is
// checkpointed before the runtime applies it (write-ahead): a restarted
// agent applies it again rather than take the instance to have what it
// had. The resize stays in progress until every running instance has its
// allocation; a failed try is retried in resizeRetry.
func (pw *podWorker) actuate(ctx context.Context, now time.Time) (wake time.Time) {
	st := &pw.alloc.resize
	st.inProgress = false
	saved := false
	for _, c := range pw.ctrs.list {
		if !resizable(c.ref.Role) || c.obs.State != planner.Running || c.id == "" {
			continue
		}
		spec := pw.alloc.pod.Container(c.ref)
		if c.applied == nil {
			// Resumed from the checkpoint of an agent that did not
			// record it: the instance is taken to have its allocation.
			c.applied = spec.Resources.DeepCopy()
			continue
		}
		switch planner.Resize(spec, *c.applied) {
		case planner.ResizeNone:
			continue
		case planner.ResizeRestart:
			if c.obs.StopRequestedAt.IsZero() && c.obs.ResizeNeedsRestartAt.IsZero() {
				// The planner stops the instance (containerStops); the
				// stop's write-ahead marks it ResizeRestart, so that the
				// next instance starts at once, whatever the restart
				// policy. Its probes stop now.
				c.obs.ResizeNeedsRestartAt = pw.w.cfg.Clock.Now()
				pw.removeProbes(c)
			}
			st.inProgress = true
			continue
		}
		up, ok := pw.w.cfg.Runtime.(runtime.ResourceUpdater)
		if !ok {
			st.inProgress = true // allocated by an agent on another runtime: nothing applies it here
			continue
		}
		if !saved {
			if err := pw.save(); err != nil {
				st.inProgress = true
				return now.Add(checkpointRetry)
			}
			saved = true
		}
		if err := up.UpdateContainerResources(ctx, pw.alloc.pod, c.ref, c.id); err != nil {
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
	if !st.inProgress {
		st.errMessage = ""
	}
	return wake
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
// the requests the node has allocated to the container (of the pod as
// allocated, allocState.pod).
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
