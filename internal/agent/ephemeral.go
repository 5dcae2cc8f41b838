package agent

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
)

// AddEphemeralContainers is an update of the ephemeralcontainers
// subresource of the pod namespace/name (podward debug): ecs is the whole
// list the pod is to have, the existing ones unchanged and the new ones
// appended. It is checked as the API server checks it
// (model.ValidateEphemeralUpdate, then the runtime's Check: an
// *InvalidError), stored before anything of it runs, and handed to the
// pod's worker, which starts each new one once (start rule 8 of
// docs/lifecycle.md). It returns the pod as it is now, its spec with the new
// list. An update that changes nothing does nothing.
func (a *Agent) AddEphemeralContainers(ns, name string, ecs []v1.EphemeralContainer) (*v1.Pod, error) {
	a.mu.Lock()
	e := a.lookupLocked(ns, name)
	a.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("%w: pods %q", ErrNotFound, name)
	}
	uid := e.pod.UID
	if _, err := a.setEphemeral(uid, keepOrder(e.pod.Spec.EphemeralContainers, ecs), 0, true); err != nil {
		return nil, err
	}
	// Get answers with the recorded spec, which the worker
	// publishes only at its next step.
	p, _, err := a.Get(uid)
	return p, err
}

// keepOrder lists ecs with the containers of old first, in their order,
// then the others in theirs: a strategic merge patch puts what it adds
// first, and the pod's list is to read in the order the containers came.
func keepOrder(old, ecs []v1.EphemeralContainer) []v1.EphemeralContainer {
	byName := make(map[string]int, len(ecs))
	for i := range ecs {
		byName[ecs[i].Name] = i
	}
	out := make([]v1.EphemeralContainer, 0, len(ecs))
	taken := make([]bool, len(ecs))
	for i := range old {
		if j, ok := byName[old[i].Name]; ok && !taken[j] {
			out = append(out, ecs[j])
			taken[j] = true
		}
	}
	for j := range ecs {
		if !taken[j] {
			out = append(out, ecs[j])
		}
	}
	return out
}

// SyncEphemeralContainers hands the agent the ephemeral containers the API
// server has for a pod it knows (cluster mode: a pod update whose
// spec.ephemeralContainers grew), checked as AddEphemeralContainers checks
// them, with the metadata.generation the API server gave that spec. A list
// it has already is nothing to do.
func (a *Agent) SyncEphemeralContainers(uid types.UID, generation int64, ecs []v1.EphemeralContainer) error {
	_, err := a.setEphemeral(uid, ecs, generation, false)
	return err
}

// admitSynced is Admit for a pod another source owns (Sync), which may
// come with ephemeral containers already: the API server's pod of a node
// that lost its state. They are checked as an update of the pod without
// them, as the API server checked them; the rest as on create.
func (a *Agent) admitSynced(pod *model.Pod) error {
	if len(pod.Spec.EphemeralContainers) == 0 {
		return a.Admit(pod)
	}
	base := &model.Pod{Pod: pod.Pod.DeepCopy(), Defer: pod.Defer}
	base.Spec.EphemeralContainers = nil
	if errs := model.Validate(base); len(errs) > 0 {
		return &InvalidError{Errs: errs}
	}
	if errs := model.ValidateEphemeralUpdate(base, pod.Spec.EphemeralContainers); len(errs) > 0 {
		return &InvalidError{Errs: errs}
	}
	if a.podRejection(pod) != nil {
		return nil // Sync rejects it (admitLocked), as Admit lets it
	}
	if err := a.cfg.Runtime.Check(pod); err != nil {
		return &InvalidError{Err: err}
	}
	return nil
}

// setEphemeral makes ecs, defaulted, the ephemeral containers of the pod
// uid: checked, stored, then handed to its worker — unless the pod was
// rejected or its worker has terminated it, as the kubelet starts no
// container of a pod that has finished. It returns the pod it recorded.
// Its generation is nextGeneration's, of the API server's generation when
// not ownAPI.
func (a *Agent) setEphemeral(uid types.UID, ecs []v1.EphemeralContainer, generation int64, ownAPI bool) (*model.Pod, error) {
	a.specChangeMu.Lock()
	defer a.specChangeMu.Unlock()
	cur, err := a.recorded(uid)
	if err != nil {
		return nil, err
	}

	next := &model.Pod{Pod: cur.Pod.DeepCopy(), Defer: cur.Defer}
	next.Spec.EphemeralContainers = make([]v1.EphemeralContainer, len(ecs))
	for i := range ecs {
		ecs[i].DeepCopyInto(&next.Spec.EphemeralContainers[i])
	}
	model.Default(next)
	if equality.Semantic.DeepEqual(cur.Spec.EphemeralContainers, next.Spec.EphemeralContainers) {
		return cur, nil
	}
	if errs := model.ValidateEphemeralUpdate(cur, next.Spec.EphemeralContainers); len(errs) > 0 {
		return nil, &InvalidError{Errs: errs}
	}
	if err := a.cfg.Runtime.Check(next); err != nil {
		return nil, &InvalidError{Err: err}
	}
	next.Generation = nextGeneration(cur, generation, ownAPI)
	return a.updateSpec(uid, next)
}
