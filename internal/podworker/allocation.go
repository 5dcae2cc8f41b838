package podworker

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/podspec"
)

// The node's allocation of resources to its pods (KEP-1287, the kubelet's
// allocation manager, pkg/kubelet/allocation): each pod worker keeps what
// the node allocated to its regular containers and sidecars — their
// spec's when the pod was admitted, a resize's once the node took it —
// and checkpoints it; the Workers count the pods' allocations against
// Config.Allocatable when a resize asks for more.
//
//	spec (desired) ──allocate──▶ allocated ──actuate──▶ actuated (the instance's)
//	               (room on the node?)      (UpdateContainerResources, or a restart)

// resizable says whether a container of the role can be resized in place:
// regular containers and sidecars (the kubelet's IsResizableContainer; a
// non-sidecar init container's resources are immutable).
func resizable(role model.Role) bool {
	return role == model.RoleMain || role == model.RoleSidecar
}

// allocation is the resources of a pod's resizable containers, by name.
type allocation map[string]v1.ResourceRequirements

// specAllocation is what pod's spec asks for its resizable containers.
func specAllocation(pod *model.Pod) allocation {
	out := allocation{}
	for _, ref := range pod.Containers() {
		if resizable(ref.Role) {
			out[ref.Name] = *pod.Container(ref).Resources.DeepCopy()
		}
	}
	return out
}

// matches says whether pod's spec asks for what alloc gives its
// resizable containers, without copying anything (the pod worker asks at
// every step).
func (a allocation) matches(pod *model.Pod) bool {
	n := 0
	for _, ref := range pod.Containers() {
		if !resizable(ref.Role) {
			continue
		}
		n++
		r, ok := a[ref.Name]
		if !ok || !equality.Semantic.DeepEqual(pod.Container(ref).Resources, r) {
			return false
		}
	}
	return n == len(a)
}

// withAllocation is pod with its resizable containers' resources replaced
// by alloc's (the kubelet's UpdatePodFromAllocation): pod itself when they
// are the same, else a copy. The runtime is handed this pod: a container
// starts, and is resized, with what the node allocated to it, whatever its
// spec asks for meanwhile.
func withAllocation(pod *model.Pod, alloc allocation) *model.Pod {
	if alloc.matches(pod) {
		return pod
	}
	out := &model.Pod{Pod: pod.Pod.DeepCopy(), Defer: pod.Defer}
	for _, ref := range out.Containers() {
		if r, ok := alloc[ref.Name]; ok && resizable(ref.Role) {
			out.Container(ref).Resources = *r.DeepCopy()
		}
	}
	return out
}

// nodeRequest is what the node counts of a pod: its cpu, in millicores,
// and memory, in bytes, requests, as Kubernetes aggregates them
// (podspec.PodRequests).
type nodeRequest struct {
	milliCPU, memory int64
}

func requestOf(pod *model.Pod) nodeRequest {
	r := podspec.PodRequests(pod)
	return nodeRequest{milliCPU: r.Cpu().MilliValue(), memory: r.Memory().Value()}
}

// admitResize decides whether the node has room for what desired, the
// pod of pw as its spec asks for it now, requests — the kubelet's
// allocation manager's admission of a resize (handlePodResourcesResize,
// canAdmitPod with the predicate handler's arithmetic, scheduler
// noderesources fitsRequest): a resource the resize raises must fit in the
// node's allocatable less what the other pods that are not terminated were
// allocated, cpu first. It returns "" when it fits, and counts desired's
// requests as the pod's from then on; else the PodResizePending reason
// and message, as the kubelet 1.37 writes them: Deferred (its status
// manager gives every reason but Infeasible that name), "Node didn't have
// enough resource: cpu, requested: 5000, used: 2000, capacity: 4000" — also
// when the request exceeds the allocatable on its own, which the kubelet
// 1.37 no longer calls Infeasible. A resource the resize does not raise is
// not checked: podward admits pods on their number only, so a node may be
// overcommitted, and a resize that gives back never waits for room (the
// kubelet expects such resizes to always fit). Called by the pod's
// goroutine; freed reports whether the pod's requests shrank, for the
// caller to retry the deferred resizes once it holds no lock.
func (w *Workers) admitResize(pw *podWorker, desired *model.Pod) (reason, message string, freed bool) {
	want := requestOf(desired)
	w.allocMu.Lock()
	defer w.allocMu.Unlock()
	had := pw.claim.requested
	if want.milliCPU > had.milliCPU || want.memory > had.memory {
		used := w.usedLocked(pw)
		for _, r := range []struct {
			name                  v1.ResourceName
			want, had, used, have int64
			limited               bool
		}{
			{v1.ResourceCPU, want.milliCPU, had.milliCPU, used.milliCPU, w.allocatable.milliCPU, w.allocatable.milliCPU > 0},
			{v1.ResourceMemory, want.memory, had.memory, used.memory, w.allocatable.memory, w.allocatable.memory > 0},
		} {
			if r.limited && r.want > r.had && r.want > r.have-r.used {
				pw.claim.deferred.Store(true)
				return v1.PodReasonDeferred, fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d", r.name, r.want, r.used, r.have), false
			}
		}
	}
	pw.claim.requested = want
	pw.claim.deferred.Store(false)
	return "", "", want.milliCPU < had.milliCPU || want.memory < had.memory
}

// usedLocked is what the node allocated to the pods other than pw's that
// are not terminated (the kubelet's active pods). w.allocMu must be held;
// it takes w.mu.
func (w *Workers) usedLocked(pw *podWorker) nodeRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	var used nodeRequest
	for _, o := range w.pods {
		if o == pw || o.published().phase == Terminated {
			continue
		}
		used.milliCPU += o.claim.requested.milliCPU
		used.memory += o.claim.requested.memory
	}
	return used
}

// retryDeferredResizes wakes the workers whose resize waits for room on
// the node (Deferred), so that each tries it again: room may have come,
// as a pod terminated or gave resources back (the kubelet's
// RetryPendingResizes on pods removed and on a pod's requests shrinking).
// They try in no particular order (the kubelet sorts them: those that do
// not ask for more first, then by priority, QoS class and age).
func (w *Workers) retryDeferredResizes() {
	w.mu.Lock()
	var waiting []*podWorker
	for _, pw := range w.pods {
		if pw.claim.deferred.Load() {
			waiting = append(waiting, pw)
		}
	}
	w.mu.Unlock()
	for _, pw := range waiting {
		pw.inbox.ring()
	}
}
