package podworker

import (
	"fmt"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

// allocState is what the pod's goroutine keeps of the node's allocation to
// the pod's regular containers and sidecars and of their in-place resize
// (KEP-1287; allocation.go, resize.go): what was allocated, the pod with
// it (the pod the runtime is handed), the generation it came from, and
// the resize as the status reports it. Owned by run (and by newPodWorker,
// Restore and Rerun before run starts). Its invariant: pod is always the
// worker's pod with allocated (set, podChanged).
//
//	spec differs ──pending──▶ resize.pending* (Infeasible, Deferred)
//	             ──admitted──▶ allocated, gen ──actuate──▶ resize.inProgress until applied
type allocState struct {
	// allocated is what the node allocated to the pod's regular
	// containers and sidecars: their spec's at admission, a resize's
	// once the node took it.
	allocated allocation
	// pod is the worker's pod with allocated, the pod the runtime is
	// handed.
	pod *model.Pod
	// gen is the pod's generation whose resources were allocated last
	// (PodResizeInProgress observes it).
	gen int64
	// recorded says the checkpoint records the allocation: false only
	// for a worker restored from the checkpoint of an agent that did not,
	// until its first step (which writes it).
	recorded bool
	// resize is the in-place resize as the status reports it.
	resize resizeState
}

// newAllocState is the allocation of a pod the node admits: what its
// spec asks for, recorded from the first checkpoint on.
func newAllocState(pod *model.Pod) allocState {
	a := allocState{recorded: true}
	a.admitted(pod, specAllocation(pod))
	return a
}

// set makes alloc what the node allocated to pod's containers.
func (a *allocState) set(pod *model.Pod, alloc allocation) {
	a.allocated = alloc
	a.pod = withAllocation(pod, alloc)
}

// podChanged takes the worker's new pod: its resources too may have
// changed (a resize), and the node's allocation stays until admitted
// takes the new ones.
func (a *allocState) podChanged(pod *model.Pod) {
	a.pod = withAllocation(pod, a.allocated)
}

// admitted makes desired, what pod's spec asks for, the allocation, from
// pod's generation: a new allocation starts the resize's progress afresh.
func (a *allocState) admitted(pod *model.Pod, desired allocation) {
	a.set(pod, desired)
	a.gen = pod.Generation
	a.resize = resizeState{}
}

// pending records a resize the node did not take, with why, for the
// generation gen; it reports whether the reason or message changed.
func (a *allocState) pending(reason, message string, gen int64) (changed bool) {
	st := &a.resize
	changed = reason != st.pendingReason || message != st.pendingMessage
	st.pendingReason, st.pendingMessage, st.pendingGen = reason, message, gen
	return changed
}

// notPending ends a pending resize: the spec asks for what was allocated.
func (a *allocState) notPending() {
	st := &a.resize
	st.pendingReason, st.pendingMessage, st.pendingGen = "", "", 0
}

// conditions are the pod's PodResizePending and PodResizeInProgress
// conditions, present while the resize is so (the kubelet's status
// manager, SetPodResizePendingCondition / SetPodResizeInProgressCondition),
// each observing the generation it is about: the one found pending, the
// one allocated.
func (a *allocState) conditions() []v1.PodCondition {
	var out []v1.PodCondition
	st := a.resize
	if st.pendingReason != "" {
		out = append(out, v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: st.pendingReason, Message: st.pendingMessage, ObservedGeneration: st.pendingGen})
	}
	if st.inProgress {
		c := v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: a.gen}
		if st.errMessage != "" {
			c.Reason, c.Message = v1.PodReasonError, st.errMessage
		}
		out = append(out, c)
	}
	return out
}

// record writes the allocation's part of the checkpoint, when it is to be
// recorded.
func (a *allocState) record(cp *checkpointV1) {
	if !a.recorded {
		return
	}
	cp.Allocated = make(map[string]resourcesRecord, len(a.allocated))
	for name, r := range a.allocated {
		cp.Allocated[name] = recordResources(r)
	}
	cp.AllocatedGeneration = a.gen
}

// restore takes the node's allocation to pod from a checkpoint that
// records it; one that does not (an earlier agent's) leaves the spec's,
// and the checkpoint is written without it until the worker's first step.
// A container the checkpoint names that the pod has not, or cannot
// resize, is ignored.
func (a *allocState) restore(cp checkpointV1, pod *model.Pod) error {
	if cp.Allocated == nil {
		a.recorded = false
		return nil
	}
	alloc := specAllocation(pod)
	for name, rec := range cp.Allocated {
		if _, ok := alloc[name]; !ok {
			continue
		}
		r, err := rec.resources()
		if err != nil {
			return fmt.Errorf("allocated.%s.%w", name, err)
		}
		alloc[name] = r
	}
	a.set(pod, alloc)
	a.gen, a.recorded = cp.AllocatedGeneration, true
	return nil
}

// nodeClaim is what the node counts of the pod, which the other pods'
// goroutines read: it is shared, each field guarding itself.
type nodeClaim struct {
	// requested is the pod's allocated requests (allocation.go):
	// guarded by Workers.allocMu, written by the pod's goroutine (and
	// before it starts), read by the other pods' admissions of resizes
	// (Workers.usedLocked).
	requested nodeRequest
	// deferred is set while a resize of the pod waits for room on the
	// node (Workers.retryDeferredResizes reads it).
	deferred atomic.Bool
}
