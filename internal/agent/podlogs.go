package agent

import (
	"context"
	"log/slog"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/runtime"
)

// DefaultKeepTerminatedPodLogs is how long the logs of a removed pod are
// kept: not at all, as the kubelet removes a deleted pod's log directory
// (at its next container GC, within a minute). Nothing serves them once the
// pod is gone from the API.
const DefaultKeepTerminatedPodLogs time.Duration = 0

// logCollector removes the logs of removed pods once they were kept for
// Config.KeepTerminatedPodLogs, as the kubelet's container GC removes the
// log directory of a deleted pod (pkg/kubelet/kuberuntime/kuberuntime_gc.go,
// evictPodLogsDirectories). Its goroutine (run) does the removals in the
// order they are due; schedule only records one and rings, so it never
// blocks.
//
//	pod removed ──▶ its worker's cleanup done ──▶ schedule(now + keep)
//	agent start ──▶ sweep: the logs of pods nobody knows ──▶ removed if
//	                last written before now - keep, else scheduled
//	run: due ──▶ RemovePodLogs (a failure is logged; the next start retries)
type logCollector struct {
	rt    runtime.PodLogRemover
	keep  time.Duration
	clock clock.Clock
	log   *slog.Logger

	mu      sync.Mutex
	pending []pendingLogs // oldest due first
	wake    chan struct{} // 1 slot
}

// pendingLogs are a pod's logs to be removed at due.
type pendingLogs struct {
	uid types.UID
	due time.Time
}

// newLogCollector is the collector of rt, or nil when the runtime cannot
// remove logs or keep is negative (logs are kept for good); a nil
// collector does nothing.
func newLogCollector(rt runtime.Runtime, keep time.Duration, clk clock.Clock, log *slog.Logger) *logCollector {
	rm, ok := rt.(runtime.PodLogRemover)
	if !ok || keep < 0 {
		return nil
	}
	return &logCollector{rt: rm, keep: keep, clock: clk, log: log, wake: make(chan struct{}, 1)}
}

// removed schedules the logs of uid, a pod just removed whose runtime
// clean-up is done, for removal once they were kept long enough.
func (c *logCollector) removed(uid types.UID) {
	if c == nil {
		return
	}
	c.schedule(uid, c.clock.Now().Add(c.keep))
}

func (c *logCollector) schedule(uid types.UID, due time.Time) {
	c.mu.Lock()
	i, _ := slices.BinarySearchFunc(c.pending, due, func(p pendingLogs, t time.Time) int { return p.due.Compare(t) })
	// After those due at the same time: first come, first removed.
	for i < len(c.pending) && c.pending[i].due.Equal(due) {
		i++
	}
	c.pending = slices.Insert(c.pending, i, pendingLogs{uid: uid, due: due})
	c.mu.Unlock()
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sweep deals with the logs the runtime has of pods that skip does not
// claim — pods removed while no agent ran, or whose removal did not finish
// it: those kept long enough since they were last written are removed now,
// before the agent serves; the others are scheduled.
func (c *logCollector) sweep(ctx context.Context, skip func(types.UID) bool) {
	if c == nil {
		return
	}
	logs, err := c.rt.PodLogs()
	if err != nil {
		c.log.Error("list the logs of removed pods", "err", err)
		return
	}
	now := c.clock.Now()
	for uid, last := range logs {
		if skip(uid) {
			continue
		}
		if due := last.Add(c.keep); due.After(now) {
			c.schedule(uid, due)
			continue
		}
		c.remove(ctx, uid)
	}
}

// run removes the scheduled logs as they fall due, until ctx is done.
// Those still pending then are the next start's sweep's.
func (c *logCollector) run(ctx context.Context) {
	for {
		uid, wait, due := c.next()
		if due {
			c.remove(ctx, uid)
			continue
		}
		var timer clock.Timer
		var fire <-chan time.Time
		if wait >= 0 {
			timer = c.clock.NewTimer(wait)
			fire = timer.C()
		}
		select {
		case <-ctx.Done():
		case <-c.wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// next takes the first pending pod when it is due; otherwise it says how
// long until it is (negative: nothing is pending).
func (c *logCollector) next() (uid types.UID, wait time.Duration, due bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.pending) == 0 {
		return "", -1, false
	}
	if wait := c.pending[0].due.Sub(c.clock.Now()); wait > 0 {
		return "", wait, false
	}
	uid = c.pending[0].uid
	c.pending = slices.Delete(c.pending, 0, 1)
	return uid, 0, true
}

func (c *logCollector) remove(ctx context.Context, uid types.UID) {
	if err := c.rt.RemovePodLogs(ctx, uid); err != nil {
		c.log.Error("remove the logs of a removed pod", "podUID", uid, "err", err)
		return
	}
	c.log.Info("removed the logs of a removed pod", "podUID", uid)
}
