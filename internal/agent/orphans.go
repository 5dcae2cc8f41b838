package agent

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// killOrphans deals with the pods the runtime still has but the store no
// longer knows (deleted while the agent was down, or whose removal the
// agent did not finish). One with nothing left running (a removal cut
// short after its containers exited) has its state dropped now, before the
// agent serves, so that the logs sweep finds its logs unclaimed; a stop
// right after the start leaves nothing of it. The others' containers are
// killed in the background, then their state is dropped once every one of
// them has exited, and then their logs as those of a pod just removed. It
// returns the pods left to the background.
func (a *Agent) killOrphans(ctx context.Context, known map[types.UID]bool) map[types.UID]bool {
	orphans := map[types.UID]bool{}
	pl, ok := a.cfg.Runtime.(runtime.PodLister)
	if !ok {
		return orphans
	}
	uids, err := pl.ListPods()
	if err != nil {
		a.log.Error("list runtime pods", "err", err)
		return orphans
	}
	for _, uid := range uids {
		if known[uid] {
			continue
		}
		if ids, err := runtime.KillRunning(ctx, a.cfg.Runtime, uid); err == nil && len(ids) == 0 {
			if a.cleanupOrphan(ctx, uid) == nil {
				continue
			}
		}
		orphans[uid] = true
		a.spawn(func() { a.killOrphan(ctx, uid) })
	}
	return orphans
}

func (a *Agent) killOrphan(ctx context.Context, uid types.UID) {
	log := a.log.With("podUID", uid)
	log.Warn("killing the containers of a pod the agent no longer knows")
	exited := a.watchOrphan(uid)
	defer a.unwatchOrphan(uid)
	for {
		ids, err := runtime.KillRunning(ctx, a.cfg.Runtime, uid)
		if err != nil {
			log.Error("kill orphaned containers", "err", err)
		}
		if len(ids) == 0 {
			if err != nil {
				return
			}
			break
		}
		select {
		case <-exited:
		case <-ctx.Done():
			return
		}
	}
	if a.cleanupOrphan(ctx, uid) == nil {
		a.logs.removed(uid)
	}
}

// cleanupOrphan drops what the runtime has of the orphan uid, nothing of
// which runs any more.
func (a *Agent) cleanupOrphan(ctx context.Context, uid types.UID) error {
	orphan := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}}
	if err := a.cfg.Runtime.CleanupPod(ctx, orphan); err != nil {
		a.log.Error("remove orphaned pod state", "podUID", uid, "err", err)
		return err
	}
	a.log.Info("removed the state of a pod the agent no longer knows", "podUID", uid)
	return nil
}

// watchOrphan returns a channel that receives a value (without blocking
// the dispatcher) at each exit of one of the orphan's containers.
func (a *Agent) watchOrphan(uid types.UID) <-chan struct{} {
	ch := make(chan struct{}, 1)
	a.mu.Lock()
	a.orphans[uid] = ch
	a.mu.Unlock()
	return ch
}

func (a *Agent) unwatchOrphan(uid types.UID) {
	a.mu.Lock()
	delete(a.orphans, uid)
	a.mu.Unlock()
}
