package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/podworker"
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
	AppendEvents(evs []events.Event) error
	ListAllEvents() ([]events.Event, error)
	GetMeta(key string) (string, error)
	PutMeta(key, value string) error
	DeleteMeta(key string) error
	MetaKeys(prefix string) ([]string, error)
}

// recordStored records a pod read back from the store, with the deletion
// and the replacement that were asked for it: in the pod API, or — deleted
// with grace period 0, a forced delete — among the pods whose containers
// are still being stopped (see Delete).
func (a *Agent) recordStored(p *model.Pod) {
	e := &entry{
		pod: p, deletion: p.DeletionTimestamp, deletionGrace: ptr.Deref(p.DeletionGracePeriodSeconds, 0),
		replacement: a.loadReplacement(p.UID),
	}
	a.registerPod(p)
	a.mu.Lock()
	defer a.mu.Unlock()
	if e.deletion != nil && e.deletionGrace == 0 {
		a.forced[p.UID] = e
		return
	}
	a.pods[p.UID] = e
}

// checkpointer adapts the store to the pod workers, and tells the agent's
// state health how each save went. The checkpoints of a pod being removed
// are taken and dropped.
type checkpointer struct {
	s      Store
	health *stateHealth
}

func (c checkpointer) SaveCheckpoint(uid types.UID, data []byte) error {
	if c.health.isRemoved(uid) {
		return nil
	}
	err := c.s.PutCheckpoint(uid, data)
	c.health.saved(uid, stateCheckpoint, err)
	return err
}

// deferredCheckpoints is the optional ability of a Store to take a
// checkpoint deferred (store.Store has it): see
// podworker.DeferredCheckpointer.
type deferredCheckpoints interface {
	PutCheckpointDeferred(uid types.UID, data []byte) (wait func() error)
}

// SaveCheckpointDeferred queues a pod's last checkpoint, which the removal
// of a deleted pod supersedes in the same commit. A store without the
// ability saves it at once.
func (c checkpointer) SaveCheckpointDeferred(uid types.UID, data []byte) (wait func() error) {
	if c.health.isRemoved(uid) {
		return func() error { return nil }
	}
	ds, ok := c.s.(deferredCheckpoints)
	if !ok {
		err := c.SaveCheckpoint(uid, data)
		return func() error { return err }
	}
	w := ds.PutCheckpointDeferred(uid, data)
	return func() error {
		err := w()
		c.health.saved(uid, stateCheckpoint, err)
		return err
	}
}

var (
	_ podworker.DeferredCheckpointer = checkpointer{}
	_ deferredCheckpoints            = (*store.Store)(nil)
)

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

// persistDeletion records a delete request (in the store when there is
// one) before the kill is handed to the worker: after a crash, the deletion
// and its deadline survive. A later request may only bring it forward. It
// reports whether the delete is forced: its grace period is 0. A forced
// delete is recorded as grace period 0 even when an earlier deadline
// stands, since that is what keeps the pod out of the pod API after a
// restart (see recordStored). When the store cannot save it (a full disk),
// the deletion is still recorded in memory, so that the pod is stopped and
// removed all the same, and the store's error is returned.
func (a *Agent) persistDeletion(p *model.Pod, grace *int64) (forced bool, err error) {
	g := p.GracePeriodSeconds()
	if grace != nil {
		g = *grace
	}
	if g < 0 {
		g = 0
	}
	forced = g == 0
	// Stored timestamps have whole seconds: round the deadline up, so that
	// a deadline read back after a crash is never earlier than the real one.
	deadline := a.cfg.Clock.Now().Add(time.Duration(g) * time.Second)
	if t := deadline.Truncate(time.Second); !t.Equal(deadline) {
		deadline = t.Add(time.Second)
	}
	a.mu.Lock()
	prev := a.pods[p.UID]
	var earlier *metav1.Time
	var earlierGrace int64
	if prev != nil {
		earlier, earlierGrace = prev.deletion, prev.deletionGrace
	}
	a.mu.Unlock()
	if earlier != nil && !deadline.Before(earlier.Time) {
		if !forced || earlierGrace == 0 {
			return forced, nil // an earlier deadline stands: a deletion only shortens
		}
		deadline = earlier.Time
	}
	c := &model.Pod{Pod: p.Pod.DeepCopy(), Defer: p.Defer}
	ts := metav1.NewTime(deadline)
	c.DeletionTimestamp = &ts
	c.DeletionGracePeriodSeconds = &g
	if a.cfg.Store != nil {
		if err = a.cfg.Store.PutPod(c); err != nil {
			err = fmt.Errorf("store deletion of pod %s: %w", p.Key(), err)
		}
		a.health.saved(p.UID, stateDeletion, err)
	}
	a.mu.Lock()
	if e, ok := a.pods[p.UID]; ok {
		e.deletion, e.deletionGrace = c.DeletionTimestamp, g
	}
	a.mu.Unlock()
	return forced, err
}

// replacementPrefix starts the store's meta keys of replacements.
const replacementPrefix = "replacement/"

// replacementKey is the store's meta key for the pod that replaces old.
func replacementKey(old types.UID) string { return replacementPrefix + string(old) }

// persistReplacement records, before the old pod is deleted, the pod an
// apply put in its place, so that a crash during the replacement does not
// lose it.
func (a *Agent) persistReplacement(old types.UID, next *model.Pod) error {
	if a.cfg.Store == nil {
		return nil
	}
	data, err := json.Marshal(next.Pod)
	if err != nil {
		return fmt.Errorf("encode replacement of pod %s: %w", next.Key(), err)
	}
	if err := a.cfg.Store.PutMeta(replacementKey(old), string(data)); err != nil {
		return fmt.Errorf("store replacement of pod %s: %w", next.Key(), err)
	}
	return nil
}

// clearReplacement deletes the stored replacement of old, once old is
// removed and its replacement created; a failure is logged (a stale record
// is never read again: it belongs to a pod the store no longer has, and the
// next start deletes it, see dropStaleReplacements).
func (a *Agent) clearReplacement(old types.UID) {
	if a.cfg.Store == nil {
		return
	}
	if err := a.cfg.Store.DeleteMeta(replacementKey(old)); err != nil {
		a.log.Error("clear stored replacement", "podUID", old, "err", err)
	}
}

// dropStaleReplacements deletes the stored replacements of pods the store
// does not have (known): never read again, they are what an older podward
// blanked instead of deleting, or a clearReplacement that failed.
func (a *Agent) dropStaleReplacements(known map[types.UID]bool) {
	keys, err := a.cfg.Store.MetaKeys(replacementPrefix)
	if err != nil {
		a.log.Error("list stored replacements", "err", err)
		return
	}
	for _, k := range keys {
		if known[types.UID(strings.TrimPrefix(k, replacementPrefix))] {
			continue
		}
		if err := a.cfg.Store.DeleteMeta(k); err != nil {
			a.log.Error("delete a stale stored replacement", "key", k, "err", err)
		}
	}
}

// loadReplacement reads back a replacement recorded by persistReplacement.
func (a *Agent) loadReplacement(old types.UID) *model.Pod {
	raw, err := a.cfg.Store.GetMeta(replacementKey(old))
	if err != nil || raw == "" {
		return nil
	}
	var p v1.Pod
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		a.log.Error("decode stored replacement", "podUID", old, "err", err)
		return nil
	}
	mp, err := model.FromV1(&p)
	if err != nil {
		a.log.Error("decode stored replacement", "podUID", old, "err", err)
		return nil
	}
	return mp
}

// persistEvents copies every recorded event into the store, off the pod
// workers' path: events are not needed for recovery, so a slow disk must
// not slow the workers down. What was recorded while the last batch was
// being written goes in one commit, so that a burst of events does not put
// a queue of commits on the disk ahead of the workers' checkpoints.
// Once ctx ends (after the pod workers have stopped) what is left is saved
// before it returns.
func (a *Agent) persistEvents(ctx context.Context, w *events.Watcher) {
	defer w.Stop()
	for {
		batch, err := w.NextBatch(ctx)
		if err != nil {
			return
		}
		// The events of a pod removed meanwhile are not kept: nothing
		// would ever remove them.
		if err := a.cfg.Store.AppendEvents(batch); err != nil {
			a.log.Error("store events", "events", len(batch), "err", err)
		}
	}
}

// Recover rebuilds the agent from its store after a restart, before any
// pod source runs: every stored pod gets its worker back, resumed from its
// checkpoint (running containers are adopted, not restarted; a termination
// goes on with its original deadline), deletions that were asked are
// carried out, and containers of pods the store no longer knows are killed.
// After a reboot of the machine, containers are gone: pods that were not
// deleted start again, as new, per their restart policy. What removed pods
// left is collected: their stored replacements, and their logs once kept
// for Config.KeepTerminatedPodLogs (those kept long enough are removed
// before Recover returns).
func (a *Agent) Recover(ctx context.Context) error {
	s := a.cfg.Store
	if s == nil {
		return errors.New("recover: the agent has no store")
	}
	rebooted, err := a.Rebooted()
	if err != nil {
		return err
	}
	evs, err := s.ListAllEvents()
	if err != nil {
		return fmt.Errorf("recover events: %w", err)
	}
	a.recorder.Load(evs)
	if err := a.loadTimelines(); err != nil {
		return err
	}
	if rebooted {
		a.recorder.NodeEventf(a.cfg.NodeName, events.Warning, events.Rebooted, "Node %s has been rebooted, boot id: %s", a.cfg.NodeName, a.bootID)
	}
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
	a.dropStaleReplacements(known)
	orphans := a.killOrphans(ctx, known)
	a.logs.sweep(ctx, func(uid types.UID) bool { return known[uid] || orphans[uid] })
	a.notify()
	return nil
}

// Rebooted reports whether the machine rebooted since the last agent on
// the store ran (the boot ID changed), and records this boot's ID. The
// first call decides; later calls repeat its answer. Recover calls it; a
// part that must know before the pods are recovered (the node shutdown
// manager) calls it first.
func (a *Agent) Rebooted() (bool, error) {
	a.bootOnce.Do(func() { a.rebooted, a.bootErr = a.checkBoot() })
	return a.rebooted, a.bootErr
}

func (a *Agent) checkBoot() (bool, error) {
	s := a.cfg.Store
	if s == nil {
		return false, errors.New("boot ID: the agent has no store")
	}
	boot, err := readBootID()
	if err != nil {
		return false, err
	}
	prevBoot, err := s.GetMeta("bootID")
	if err != nil {
		return false, fmt.Errorf("boot ID: %w", err)
	}
	if err := s.PutMeta("bootID", boot); err != nil {
		return false, fmt.Errorf("boot ID: %w", err)
	}
	a.bootID = boot
	return prevBoot != "" && prevBoot != boot, nil
}

func (a *Agent) recoverPod(ctx context.Context, p *model.Pod, rebooted bool) error {
	s := a.cfg.Store
	deletion := p.DeletionTimestamp
	if isRejected(p) {
		// Nothing of it ever ran: it stays as it was rejected, or goes if
		// its removal was cut short.
		if deletion != nil {
			return s.DeletePod(p.UID)
		}
		a.recordStored(p)
		return nil
	}
	cp, err := s.GetCheckpoint(p.UID)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	hasCheckpoint := err == nil
	if rebooted {
		// Nothing of the pod survived the reboot: drop what the runtime
		// still has on disk of it.
		if err := a.cfg.Runtime.CleanupPod(ctx, p); err != nil {
			a.log.Error("remove state of pod after reboot", "pod", p.Key(), "err", err)
		}
		if deletion != nil {
			if err := s.DeletePod(p.UID); err != nil {
				return err
			}
			a.logs.removed(p.UID)
			return nil
		}
		if hasCheckpoint && shutdownTerminated(cp) {
			if a.cfg.RestartShutdownPods {
				a.recordStored(p)
				return a.rerun(p, cp, "the node rebooted after its shutdown")
			}
			// Cluster mode: it ends as the shutdown had it, Failed, for
			// its controller; nothing of it runs any more.
			return a.restore(p, cp, nil)
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
	if hasCheckpoint && checkpointTerminated(cp) && shutdownTerminated(cp) && deletion == nil && a.restartsShutdownPods() {
		// Its shutdown was cancelled while the agent was down.
		a.recordStored(p)
		return a.rerun(p, cp, "the node shutdown was cancelled")
	}
	if hasCheckpoint && len(cp) > 0 {
		return a.restore(p, cp, deletion)
	}
	a.recordStored(p)
	a.workers.UpdatePod(podworker.UpdateOptions{Pod: p})
	if deletion != nil {
		a.workers.UpdatePod(podworker.UpdateOptions{Pod: p, Kill: &podworker.KillOptions{GracePeriodSeconds: remaining(deletion.Time, a.cfg.Clock.Now()), Reason: podworker.TerminationDeleted}})
	}
	return nil
}

// restore gives a stored pod its worker back from its checkpoint, and
// re-issues a deletion the worker may not have taken before the crash (a
// kill shortens, never lengthens, so re-issuing is harmless).
func (a *Agent) restore(p *model.Pod, cp []byte, deletion *metav1.Time) error {
	a.recordStored(p)
	if err := a.workers.Restore(p, cp); err != nil {
		return err
	}
	// The objects may have changed while the agent was down.
	a.workers.RefreshVolumes(p.UID)
	// A worker that was terminating has the exact deadline in its
	// checkpoint; the stored deletionTimestamp has whole seconds only, so
	// re-issuing the kill from it could bring the deadline forward.
	if ph, err := podworker.CheckpointPhase(cp); err == nil && ph != podworker.Syncing {
		return nil
	}
	if deletion != nil {
		a.workers.UpdatePod(podworker.UpdateOptions{Pod: p, Kill: &podworker.KillOptions{GracePeriodSeconds: remaining(deletion.Time, a.cfg.Clock.Now()), Reason: podworker.TerminationDeleted}})
	}
	return nil
}

func checkpointTerminated(cp []byte) bool {
	ph, err := podworker.CheckpointPhase(cp)
	return err == nil && ph == podworker.Terminated
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
