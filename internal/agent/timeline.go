package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/store"
	"github.com/podward/podward/internal/timeline"
)

// The pods' timelines: the pod workers tell the agent's timeline.History
// what their containers do (podworker.Config.Timeline); the agent keeps
// it bounded, persists it beside the events and serves it. A removed
// pod's timeline goes from the store with its other records, and from
// memory with its events and last status (maxFinal later).

// TimelineStore is the optional ability of a Store to keep the pods'
// timelines (store.Store has it): one opaque blob per pod, kept only
// while the pod is stored. Without it timelines live in memory only.
type TimelineStore interface {
	// PutTimelines replaces the timelines of the pods of data in one
	// durable write; a nil blob deletes one.
	PutTimelines(data map[types.UID][]byte) error
	ListTimelines() (map[types.UID][]byte, error)
}

// persistTimelines saves the timelines that changed, off the pod workers'
// path (they are not needed for recovery), until ctx ends (after the pod
// workers have stopped); then once more.
// Changes that come while a save is in flight are saved together by the
// next. A save that fails is logged; the pod's next change saves its whole
// timeline again.
func (a *Agent) persistTimelines(ctx context.Context, ts TimelineStore) {
	for {
		select {
		case <-ctx.Done():
			a.saveTimelines(ts)
			return
		case <-a.history.Changed():
		}
		a.saveTimelines(ts)
	}
}

func (a *Agent) saveTimelines(ts TimelineStore) {
	taken := a.history.Take()
	if len(taken) == 0 {
		return
	}
	data := make(map[types.UID][]byte, len(taken))
	for uid, p := range taken {
		if p == nil {
			data[types.UID(uid)] = nil
			continue
		}
		b, err := json.Marshal(p)
		if err != nil {
			a.log.Error("encode timeline", "podUID", uid, "err", err)
			continue
		}
		data[types.UID(uid)] = b
	}
	if err := ts.PutTimelines(data); err != nil {
		a.log.Error("store timelines", "pods", len(data), "err", err)
	}
}

// loadTimelines puts back the stored timelines; Recover calls it before
// any worker runs. One that does not decode is logged and skipped.
func (a *Agent) loadTimelines() error {
	ts, ok := a.cfg.Store.(TimelineStore)
	if !ok {
		return nil
	}
	stored, err := ts.ListTimelines()
	if err != nil {
		return fmt.Errorf("recover timelines: %w", err)
	}
	for uid, data := range stored {
		var p timeline.Pod
		if err := json.Unmarshal(data, &p); err != nil {
			a.log.Error("decode stored timeline", "podUID", uid, "err", err)
			continue
		}
		p.UID = string(uid)
		a.history.Load(&p)
	}
	return nil
}

// PodTimeline returns the timeline of the pod namespace/name, a copy owned
// by the caller, as of the agent's clock: the pod's the pod API has, else
// that of a pod of that name force-deleted and still stopping, else that
// of the newest removed one whose last status is still kept (Gone: as long
// as its events are). ErrNotFound when there is none.
func (a *Agent) PodTimeline(ns, name string) (*timeline.Pod, error) {
	ref, gone, ok := a.timelineRef(ns, name)
	if !ok {
		return nil, fmt.Errorf("%w: pods %q", ErrNotFound, name)
	}
	p, kept := a.history.Get(ref.UID)
	if !kept {
		p = &timeline.Pod{PodRef: ref}
	}
	p.Gone = gone
	p.Now = a.cfg.Clock.Now()
	return p, nil
}

// timelineRef finds the pod whose timeline PodTimeline serves.
func (a *Agent) timelineRef(ns, name string) (ref timeline.PodRef, gone, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	refOf := func(ns, name string, uid types.UID) timeline.PodRef {
		return timeline.PodRef{Namespace: ns, Name: name, UID: string(uid)}
	}
	if e := a.lookupLocked(ns, name); e != nil {
		return refOf(ns, name, e.pod.UID), false, true
	}
	for uid, e := range a.forced {
		if e.pod.Namespace == ns && e.pod.Name == name {
			return refOf(ns, name, uid), true, true
		}
	}
	for i := len(a.finalOrder) - 1; i >= 0; i-- {
		uid := a.finalOrder[i]
		if p := a.final[uid]; p != nil && p.Namespace == ns && p.Name == name {
			return refOf(ns, name, uid), true, true
		}
	}
	return timeline.PodRef{}, false, false
}

var _ TimelineStore = (*store.Store)(nil)
