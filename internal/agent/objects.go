package agent

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
)

// This file is the agent's side of what pods read besides their spec
// (package objects): it tells the readers which pods reference what
// (objects.Registrar), forgets a removed pod's tokens, and routes news of
// a change to the workers of the pods it concerns, which rewrite their
// volumes (podworker.Workers.RefreshVolumes).

// ObjectChanged routes news that what pods read changed to the workers of
// the pods it concerns: every pod of the agent that references ch.Ref
// (objects.References), or, when ch.PodUID is set, that pod (a token due
// for its refresh). It never blocks on a worker; a pod no worker owns yet
// reads the objects when it is set up. Whoever implements the objects'
// Getter or Tokens calls it (through the node's ObjectChanged).
func (a *Agent) ObjectChanged(ch objects.Change) {
	var uids []types.UID
	a.mu.Lock()
	if ch.PodUID != "" {
		if a.knownLocked(ch.PodUID) {
			uids = append(uids, ch.PodUID)
		}
	} else {
		for uid, e := range a.pods {
			if objects.References(e.pod, ch.Ref) {
				uids = append(uids, uid)
			}
		}
	}
	a.mu.Unlock()
	for _, uid := range uids {
		a.workers.RefreshVolumes(uid)
	}
}

// registerPod tells the objects' readers that pod references what it does
// (objects.Registrar), before its worker starts and on each update of its
// spec. It must not be called with a.mu held.
func (a *Agent) registerPod(pod *model.Pod) {
	for _, r := range a.registrars() {
		r.RegisterPod(pod)
	}
}

// forgetPod tells the objects' readers that pod is gone: it references
// nothing any more, and its tokens are dropped. It must not be called
// with a.mu held.
func (a *Agent) forgetPod(pod *model.Pod) {
	for _, r := range a.registrars() {
		r.UnregisterPod(pod)
	}
	if t := a.cfg.Objects.Tokens; t != nil {
		t.ForgetPod(pod.UID)
	}
}

// registrars are the objects' readers that keep track of the pods
// (Getter, and Tokens when it is another value), each once.
func (a *Agent) registrars() []objects.Registrar {
	var rs []objects.Registrar
	g, _ := a.cfg.Objects.Getter.(objects.Registrar)
	if g != nil {
		rs = append(rs, g)
	}
	if t, ok := a.cfg.Objects.Tokens.(objects.Registrar); ok && (g == nil || any(t) != any(g)) {
		rs = append(rs, t)
	}
	return rs
}

// SyncMetadata is an update of the running pod uid's labels and
// annotations (cluster mode: the API server's pod was updated so): they
// are recorded, handed to its worker, and its downwardAPI volumes are
// written again. The same labels and annotations are nothing to do. An
// apply that changes only a pod's metadata comes here too.
func (a *Agent) SyncMetadata(uid types.UID, labels, annotations map[string]string) error {
	a.specChangeMu.Lock()
	defer a.specChangeMu.Unlock()
	cur, err := a.recorded(uid)
	if err != nil {
		return err
	}
	if equality.Semantic.DeepEqual(cur.Labels, labels) && equality.Semantic.DeepEqual(cur.Annotations, annotations) {
		return nil
	}
	next := &model.Pod{Pod: cur.Pod.DeepCopy(), Defer: cur.Defer}
	next.Labels, next.Annotations = maps.Clone(labels), maps.Clone(annotations)
	if _, err := a.updateSpec(uid, next); err != nil {
		return err
	}
	a.workers.RefreshVolumes(uid)
	return nil
}

// metadataUpdate reports whether next asks for what old does but for its
// labels or annotations, which a running pod takes in place, as the API
// server allows their update.
func metadataUpdate(old, next *model.Pod) bool {
	if sameSpec(old, next) {
		return false
	}
	cp := &model.Pod{Pod: next.Pod.DeepCopy(), Defer: next.Defer}
	cp.Labels, cp.Annotations = old.Labels, old.Annotations
	return sameSpec(old, cp)
}
