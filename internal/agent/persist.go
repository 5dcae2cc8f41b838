package agent

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/podworker"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/store"
)

// Store is the agent's durable state (package store). Every call is
// durable when it returns.
type Store interface {
	PutPod(p *model.Pod) error
	DeletePod(uid types.UID) error
	ListPods() ([]*model.Pod, error)
	PutCheckpoint(uid types.UID, data []byte) error
	GetCheckpoint(uid types.UID) ([]byte, error)
	AppendEvent(e events.Event) error
	ListAllEvents() ([]events.Event, error)
	GetMeta(key string) (string, error)
	PutMeta(key, value string) error
}

// checkpointer adapts the store to the pod workers.
type checkpointer struct{ s Store }

func (c checkpointer) SaveCheckpoint(uid types.UID, data []byte) error {
	return c.s.PutCheckpoint(uid, data)
}

// podLister is the optional runtime ability to name every pod it has
// state of, so that the agent can kill the orphans of pods it no longer
// knows.
type podLister interface {
	ListPods() ([]types.UID, error)
}

// containerLister lists a pod's instances (see podworker.Lister).
type containerLister interface {
	ListContainers(ctx context.Context, podUID types.UID) ([]runtime.ContainerStatus, error)
}

// podRemover is the optional runtime ability to drop the state of a pod
// whose spec the agent no longer has (orphans, or every pod after a reboot).
type podRemover interface {
	RemovePod(ctx context.Context, podUID types.UID) error
}

// bootIDPath tells one boot of the machine from the next.
var bootIDPath = "/proc/sys/kernel/random/boot_id"

func readBootID() (string, error) {
	b, err := os.ReadFile(bootIDPath)
	if err != nil {
		return "", fmt.Errorf("read boot ID: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}

// persistPod writes a copy of the pod: the worker owns the object itself.
func (a *Agent) persistPod(p *model.Pod) error {
	if a.cfg.Store == nil {
		return nil
	}
	c := &model.Pod{Pod: p.Pod.DeepCopy(), Defer: p.Defer}
	if err := a.cfg.Store.PutPod(c); err != nil {
		return fmt.Errorf("store pod %s: %w", p.Key(), err)
	}
	return nil
}

// persistDeletion records a delete request before the kill is handed to
// the worker: after a crash, the deletion (and its deadline) survives.
func (a *Agent) persistDeletion(p *model.Pod, grace *int64) error {
	if a.cfg.Store == nil {
		return nil
	}
	g := p.GracePeriodSeconds()
	if grace != nil {
		g = *grace
	}
	c := &model.Pod{Pod: p.Pod.DeepCopy(), Defer: p.Defer}
	if c.DeletionTimestamp != nil && c.DeletionGracePeriodSeconds != nil && *c.DeletionGracePeriodSeconds <= g {
		return nil // an earlier, shorter request stands
	}
	ts := metav1.NewTime(a.cfg.Clock.Now().Add(time.Duration(g) * time.Second))
	c.DeletionTimestamp = &ts
	c.DeletionGracePeriodSeconds = &g
	if err := a.cfg.Store.PutPod(c); err != nil {
		return fmt.Errorf("store deletion of pod %s: %w", p.Key(), err)
	}
	a.mu.Lock()
	if e, ok := a.pods[p.UID]; ok {
		e.deletion = c.DeletionTimestamp
	}
	a.mu.Unlock()
	return nil
}

// persistEvents copies every recorded event into the store, off the pod
// workers' path: events are not needed for recovery, so a slow disk must
// not slow the workers down.
func (a *Agent) persistEvents(ctx context.Context, w *events.Watcher) {
	defer a.wg.Done()
	defer w.Stop()
	for {
		e, err := w.Next(ctx)
		if err != nil {
			return
		}
		if err := a.cfg.Store.AppendEvent(e); err != nil {
			a.log.Error("store event", "pod", e.Namespace+"/"+e.Pod, "err", err)
		}
	}
}

// Recover rebuilds the agent from its store after a restart, before any
// pod source runs: every stored pod gets its worker back, resumed from its
// checkpoint (running containers are adopted, not restarted; a termination
// goes on with its original deadline), deletions that were asked are
// carried out, and containers of pods the store no longer knows are killed.
// After a reboot of the machine, containers are gone: pods that were not
// deleted start again, as new, per their restart policy.
func (a *Agent) Recover(ctx context.Context) error {
	s := a.cfg.Store
	if s == nil {
		return errors.New("recover: the agent has no store")
	}
	boot, err := readBootID()
	if err != nil {
		return err
	}
	prevBoot, err := s.GetMeta("bootID")
	if err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	rebooted := prevBoot != "" && prevBoot != boot
	if err := s.PutMeta("bootID", boot); err != nil {
		return fmt.Errorf("recover: %w", err)
	}
	evs, err := s.ListAllEvents()
	if err != nil {
		return fmt.Errorf("recover events: %w", err)
	}
	a.recorder.Load(evs)
	pods, err := s.ListPods()
	if err != nil {
		return fmt.Errorf("recover pods: %w", err)
	}
	known := map[types.UID]bool{}
	for _, p := range pods {
		known[p.UID] = true
		if err := a.recoverPod(ctx, p, rebooted); err != nil {
			a.log.Error("recover pod", "pod", p.Key(), "podUID", p.UID, "err", err)
		}
	}
	a.killOrphans(ctx, known)
	a.notify()
	return nil
}

func (a *Agent) recoverPod(ctx context.Context, p *model.Pod, rebooted bool) error {
	s := a.cfg.Store
	deletion := p.DeletionTimestamp
	cp, err := s.GetCheckpoint(p.UID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	hasCheckpoint := err == nil
	if rebooted {
		// Nothing of the pod survived the reboot.
		if rm, ok := a.cfg.Runtime.(podRemover); ok {
			if err := rm.RemovePod(ctx, p.UID); err != nil {
				a.log.Error("remove state of pod after reboot", "pod", p.Key(), "err", err)
			}
		}
		if deletion != nil {
			return s.DeletePod(p.UID)
		}
		if hasCheckpoint && checkpointTerminated(cp) {
			// A completed pod keeps its outcome.
			return a.restore(p, cp, nil)
		}
		a.log.Info("machine rebooted: starting pod again", "pod", p.Key(), "podUID", p.UID)
		hasCheckpoint = false
		if err := s.PutCheckpoint(p.UID, nil); err != nil {
			return err
		}
	}
	if hasCheckpoint && len(cp) > 0 {
		return a.restore(p, cp, deletion)
	}
	a.mu.Lock()
	a.pods[p.UID] = &entry{pod: p, deleted: deletion != nil, deletion: deletion}
	a.mu.Unlock()
	a.workers.UpdatePod(podworker.UpdateOptions{Pod: p})
	if deletion != nil {
		a.workers.UpdatePod(podworker.UpdateOptions{Pod: p, Kill: &podworker.KillOptions{GracePeriodSeconds: remaining(deletion.Time, a.cfg.Clock.Now()), Reason: "Deleted"}})
	}
	return nil
}

// restore gives a stored pod its worker back from its checkpoint, and
// re-issues a deletion the worker may not have taken before the crash (a
// kill shortens, never lengthens, so re-issuing is harmless).
func (a *Agent) restore(p *model.Pod, cp []byte, deletion *metav1.Time) error {
	a.mu.Lock()
	a.pods[p.UID] = &entry{pod: p, deleted: deletion != nil, deletion: deletion}
	a.mu.Unlock()
	if err := a.workers.Restore(p, cp); err != nil {
		return err
	}
	if deletion != nil {
		a.workers.UpdatePod(podworker.UpdateOptions{Pod: p, Kill: &podworker.KillOptions{GracePeriodSeconds: remaining(deletion.Time, a.cfg.Clock.Now()), Reason: "Deleted"}})
	}
	return nil
}

func checkpointTerminated(cp []byte) bool {
	return strings.Contains(string(cp), fmt.Sprintf(`"phase":%d`, int(podworker.Terminated)))
}

// remaining is the grace period left until deadline, rounded up, never
// negative.
func remaining(deadline, now time.Time) *int64 {
	s := int64(math.Ceil(deadline.Sub(now).Seconds()))
	if s < 0 {
		s = 0
	}
	return &s
}

// killOrphans kills the containers of pods the runtime still has but the
// store no longer knows (deleted while the agent was down, or whose removal
// the agent did not finish), then drops their state.
func (a *Agent) killOrphans(ctx context.Context, known map[types.UID]bool) {
	pl, ok := a.cfg.Runtime.(podLister)
	if !ok {
		return
	}
	uids, err := pl.ListPods()
	if err != nil {
		a.log.Error("list runtime pods", "err", err)
		return
	}
	for _, uid := range uids {
		if known[uid] {
			continue
		}
		a.log.Warn("killing orphaned containers", "podUID", uid)
		if cl, ok := a.cfg.Runtime.(containerLister); ok {
			list, err := cl.ListContainers(ctx, uid)
			if err != nil {
				a.log.Error("list orphaned containers", "podUID", uid, "err", err)
			}
			for _, c := range list {
				if c.Exit == nil {
					if err := a.cfg.Runtime.Signal(ctx, c.ID, syscall.SIGKILL); err != nil {
						a.log.Error("kill orphaned container", "podUID", uid, "container", c.Container, "err", err)
					}
				}
			}
		}
		if rm, ok := a.cfg.Runtime.(podRemover); ok {
			if err := rm.RemovePod(ctx, uid); err != nil {
				a.log.Error("remove orphaned pod state", "podUID", uid, "err", err)
			}
		}
	}
}
