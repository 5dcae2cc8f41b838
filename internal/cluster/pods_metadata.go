package cluster

import (
	"errors"
	"maps"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
)

// nodeAnnotations are the pod annotations the node itself writes to the
// API server. They are the agent's status, not the pod's metadata: an
// update of the API pod that only they changed is the echo of the node's
// own write, and handing it back to the agent would refresh the pod's
// volumes at each of its status changes. So they are never compared nor
// handed to the agent as metadata (its worker publishes its own).
var nodeAnnotations = []string{model.DeferContainerStatusesAnnotation}

// podMeta is the labels and annotations of a pod, without nodeAnnotations.
type podMeta struct {
	labels, annotations map[string]string
}

// metaOf is the labels and annotations of pod, without nodeAnnotations;
// the maps are copies.
func metaOf(pod *v1.Pod) podMeta {
	ann := maps.Clone(pod.Annotations)
	for _, k := range nodeAnnotations {
		delete(ann, k)
	}
	return podMeta{labels: maps.Clone(pod.Labels), annotations: ann}
}

// equal reports whether m and o have the same labels and annotations (nil
// and empty are the same).
func (m podMeta) equal(o podMeta) bool {
	return maps.Equal(m.labels, o.labels) && maps.Equal(m.annotations, o.annotations)
}

// syncMetadata hands the agent the labels and annotations of a pod it
// runs when they differ from what the agent has, so that its downwardAPI
// volumes are written again (an update of metadata.labels or
// metadata.annotations, as `kubectl label` or `kubectl annotate` make).
// What the agent has is what this Pods last handed it (Sync or
// SyncMetadata); for a pod it has not handed yet (the agent ran it before
// a restart), the agent's own view. The API pod is compared as fromAPI
// makes it, the form the agent was handed. Idempotent: the same metadata
// again, and an update of the pod's status or of nodeAnnotations, call
// nothing.
func (p *Pods) syncMetadata(pod *v1.Pod) error {
	mp, err := fromAPI(pod)
	if errors.Is(err, model.ErrInvalidManifest) {
		// The node runs the pod as it was; retrying will not mend it.
		p.log.Error("metadata update refused", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	want := metaOf(mp.Pod)
	has, ok := p.handedMeta(pod.UID)
	if !ok {
		cur, _, err := p.cfg.Agent.Get(pod.UID)
		if errors.Is(err, agent.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		has = metaOf(cur)
	}
	if !want.equal(has) {
		err := p.cfg.Agent.SyncMetadata(pod.UID, want.labels, want.annotations)
		if errors.Is(err, agent.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
	}
	p.setHanded(pod.UID, want)
	return nil
}

// handedMeta is the metadata last handed to the agent for uid.
func (p *Pods) handedMeta(uid types.UID) (podMeta, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	m, ok := p.handed[uid]
	return m, ok
}

// setHanded records m as the metadata the agent has of uid.
func (p *Pods) setHanded(uid types.UID, m podMeta) {
	p.mu.Lock()
	p.handed[uid] = m
	p.mu.Unlock()
}
