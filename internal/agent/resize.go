package agent

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/podworker"
)

// ResizePod is an update of the resize subresource of the pod
// namespace/name (podward resize, KEP-1287): patched is the pod as the
// client wants it, of which the containers' resources and resizePolicy
// are taken (model.ApplyResize, which checks them as the API server does:
// an *InvalidError). The new spec is stored, then handed to the pod's
// worker, which applies it to the running containers (in place, or by a
// restart where resizePolicy says so) and reports it in the pod's status.
// It returns the pod as it is now, its spec with the new resources and
// its metadata.generation one more, as the API server bumps it on a resize
// (registry/core/pod/strategy.go, updatePodGeneration). A resize that
// changes nothing does nothing.
func (a *Agent) ResizePod(ns, name string, patched *v1.Pod) (*v1.Pod, error) {
	a.mu.Lock()
	e := a.lookupLocked(ns, name)
	a.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("%w: pods %q", ErrNotFound, name)
	}
	next, err := a.setResources(e.pod.UID, patched, true)
	if err != nil {
		return nil, err
	}
	// Get answers with the recorded spec, next's, which the worker
	// publishes only at its next step.
	p, _, err := a.Get(next.UID)
	return p, err
}

// SyncResources hands the agent the containers' resources the API server
// has for a pod it knows (cluster mode: a pod update through the resize
// subresource, the API server having checked it), with the
// metadata.generation the API server gave that spec, which the pod's
// status then observes. The same resources are nothing to do: the
// generation of a change the node does not take up is not observed.
func (a *Agent) SyncResources(uid types.UID, pod *v1.Pod) error {
	_, err := a.setResources(uid, pod, false)
	return err
}

// setResources makes patched's container resources those of the pod uid:
// checked, stored, then handed to its worker unless the pod was rejected
// or has terminated (the kubelet resizes running pods only). It returns
// the pod it recorded. ownAPI says the resize came through the agent's own
// API, which bumps the pod's generation as the API server does; otherwise
// (cluster mode) the generation is patched's, the API server's. Serialised
// with the updates of ephemeral containers, the other change of a running
// pod's spec.
func (a *Agent) setResources(uid types.UID, patched *v1.Pod, ownAPI bool) (*model.Pod, error) {
	a.specChangeMu.Lock()
	defer a.specChangeMu.Unlock()
	cur, err := a.recorded(uid)
	if err != nil {
		return nil, err
	}

	next, errs := model.ApplyResize(cur, patched)
	if len(errs) > 0 {
		return nil, &InvalidError{Errs: errs}
	}
	model.Default(next)
	if equality.Semantic.DeepEqual(cur.Spec, next.Spec) {
		return cur, nil
	}
	if err := a.cfg.Runtime.Check(next); err != nil {
		return nil, &InvalidError{Err: err}
	}
	next.Generation = nextGeneration(cur, patched.Generation, ownAPI)
	return a.updateSpec(uid, next)
}

// nextGeneration is the metadata.generation of a change of cur's spec: one
// more, as the API server bumps it (registry/core/pod/strategy.go,
// updatePodGeneration), when the change came through the agent's own API
// (ownAPI); else the API server's, api, never going back.
func nextGeneration(cur *model.Pod, api int64, ownAPI bool) int64 {
	if ownAPI {
		return cur.Generation + 1
	}
	return max(cur.Generation, api)
}

// updateSpec makes next, already validated and checked by the runtime, the
// pod uid (a change of a running pod: ephemeral containers, a resize, the
// conditions others set): stored first (write-ahead), then handed to its
// worker unless the pod has ended or was rejected. ErrNotFound when the
// pod went meanwhile. The caller holds specChangeMu, which serialises these
// changes, each a read, check and write of one pod.
func (a *Agent) updateSpec(uid types.UID, next *model.Pod) (*model.Pod, error) {
	a.mu.Lock()
	e := a.pods[uid]
	if e == nil {
		a.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	e.pod = next
	e.rv = a.bumpLocked(uid)
	a.mu.Unlock()

	if err := a.persistPod(next); err != nil {
		return nil, err
	}
	if _, phase, ok := a.workers.PodStatus(uid); ok && phase != podworker.Terminated && !isRejected(next) {
		a.registerPod(next)
		a.workers.UpdatePod(podworker.UpdateOptions{Pod: next})
	}
	a.notify()
	return next, nil
}
