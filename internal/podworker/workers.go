package podworker

import (
	"context"
	"fmt"
	"log/slog"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
)

// Phase is where a pod worker stands. Transitions are one-way.
type Phase int

// Phases start at one so that the zero value is never a valid phase.
const (
	// Syncing: the pod runs; its containers start and restart by the rules.
	Syncing Phase = iota + 1
	// Terminating: nothing new starts but defer containers and restarted
	// sidecars; everything is being stopped.
	Terminating
	// Terminated: no container of the pod runs and none will.
	Terminated
)

func (p Phase) String() string {
	switch p {
	case Syncing:
		return "Syncing"
	case Terminating:
		return "Terminating"
	case Terminated:
		return "Terminated"
	default:
		return fmt.Sprintf("Phase(%d)", int(p))
	}
}

// Recorder receives the events the workers emit (events.Recorder is one).
type Recorder interface {
	Eventf(pod *model.Pod, fieldPath, eventType string, reason events.Reason, format string, args ...any)
}

// Config wires a Workers.
type Config struct {
	Runtime  runtime.Runtime
	Recorder Recorder
	// Clock drives every timing decision; a fake one in tests.
	Clock   clock.WithDelayedExecution
	Planner planner.Config
	Logger  *slog.Logger
	// Prober, when set, runs the containers' probes; its results come back
	// through HandleProbe.
	Prober Prober
	// Checkpointer, when set, stores each worker's checkpoint so that a
	// restarted agent can resume its pods (see Restore).
	Checkpointer Checkpointer
	// HostIP is the node's address, reported as hostIP and, since pods
	// share the host's network, as podIP. Default 127.0.0.1.
	HostIP string
	// OnChange, when set, is called from a pod's goroutine, with no lock
	// held, after the pod's status or phase changed. It must not block.
	OnChange func(uid types.UID)
}

// KillOptions asks for a pod's termination.
type KillOptions struct {
	// GracePeriodSeconds overrides the pod's terminationGracePeriodSeconds
	// when set. A later kill may shorten the deadline, never lengthen it.
	GracePeriodSeconds *int64
	// Reason says who asked, for logs and events (Deleted, Interrupted...).
	Reason string
}

// UpdateOptions is one update for a pod's worker.
type UpdateOptions struct {
	Pod  *model.Pod
	Kill *KillOptions
}

// Workers owns one goroutine per pod UID.
type Workers struct {
	cfg Config
	ctx context.Context
	log *slog.Logger

	mu   sync.Mutex
	pods map[types.UID]*podWorker

	wg sync.WaitGroup
}

// New returns Workers whose goroutines live until ctx is done. ctx is the
// agent's lifetime: when it ends the goroutines stop, but no container is
// stopped — stopping the agent is not killing its pods.
func New(ctx context.Context, cfg Config) *Workers {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.HostIP == "" {
		cfg.HostIP = "127.0.0.1"
	}
	return &Workers{cfg: cfg, ctx: ctx, log: cfg.Logger, pods: map[types.UID]*podWorker{}}
}

// UpdatePod hands an update to the pod's worker, creating the worker on the
// first update for a UID. It only records the update and wakes the worker:
// it never waits for work to be done. Updates to a busy worker coalesce: the
// latest pod wins and a kill is sticky. A kill cancels a setup in progress,
// and once it is recorded no container of a syncing pod starts.
func (w *Workers) UpdatePod(opts UpdateOptions) {
	uid := opts.Pod.UID
	w.mu.Lock()
	pw, ok := w.pods[uid]
	if !ok {
		pw = newPodWorker(w, opts.Pod)
		w.pods[uid] = pw
		w.wg.Add(1)
	}
	w.mu.Unlock()
	// The first update is recorded before the goroutine runs, so that a
	// pod whose first update is a kill never starts anything.
	pw.update(opts)
	if !ok {
		go pw.run(w.ctx)
	}
}

// HandleEvent routes a runtime event to its pod's worker. Events for pods
// no worker owns are dropped.
func (w *Workers) HandleEvent(ev runtime.Event) {
	pw := w.get(ev.PodUID)
	if pw == nil {
		w.log.Debug("event for an unknown pod", "podUID", ev.PodUID, "container", ev.Container)
		return
	}
	pw.mu.Lock()
	pw.exits = append(pw.exits, ev)
	pw.mu.Unlock()
	pw.ring()
}

// Wait returns once every pod goroutine (and every stop it began) has
// returned, which happens when their pods are terminated or the ctx given
// to New is done.
func (w *Workers) Wait() { w.wg.Wait() }

// Forget drops the worker of a terminated pod. It reports false, and keeps
// the worker, when the pod is not terminated.
func (w *Workers) Forget(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	pw, ok := w.pods[uid]
	if !ok {
		return true
	}
	if pw.Phase() != Terminated {
		return false
	}
	delete(w.pods, uid)
	return true
}

func (w *Workers) get(uid types.UID) *podWorker {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pods[uid]
}

// IsPodKnownTerminated reports whether the pod's worker has terminated it.
func (w *Workers) IsPodKnownTerminated(uid types.UID) bool {
	pw := w.get(uid)
	return pw != nil && pw.Phase() == Terminated
}

// IsPodTerminationRequested reports whether a kill was asked for the pod
// (or it completed and terminates on its own).
func (w *Workers) IsPodTerminationRequested(uid types.UID) bool {
	pw := w.get(uid)
	if pw == nil {
		return false
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.killRequested || pw.phase != Syncing
}

// ShouldPodContainersBeTerminating reports whether the pod's containers
// should be stopping rather than starting: the pod is terminating, or a
// kill is pending.
func (w *Workers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	return w.IsPodTerminationRequested(uid)
}

// CouldHaveRunningContainers reports whether the pod may still have
// running containers: true from its first update until its worker has
// terminated it. A pod no worker knows has none that podward started.
func (w *Workers) CouldHaveRunningContainers(uid types.UID) bool {
	pw := w.get(uid)
	return pw != nil && pw.Phase() != Terminated
}

// ShouldPodContentBeRemoved reports whether the pod's volumes and other
// content may be removed: its worker terminated it, or no worker knows it.
func (w *Workers) ShouldPodContentBeRemoved(uid types.UID) bool {
	pw := w.get(uid)
	return pw == nil || pw.Phase() == Terminated
}

// PodStatus returns the pod as its worker last published it: the pod
// (with the defer container statuses annotation) and its status. The
// returned pod is a copy owned by the caller.
func (w *Workers) PodStatus(uid types.UID) (*v1.Pod, Phase, bool) {
	pw := w.get(uid)
	if pw == nil {
		return nil, 0, false
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.published.DeepCopy(), pw.publishedPhase, true
}

// Terminated returns a channel closed once the pod is terminated (nothing
// of it runs; its content may still be being removed), or nil for an
// unknown pod.
func (w *Workers) Terminated(uid types.UID) <-chan struct{} {
	pw := w.get(uid)
	if pw == nil {
		return nil
	}
	return pw.terminated
}

// Done returns a channel closed when the pod's goroutine has returned, or
// nil for an unknown pod.
func (w *Workers) Done(uid types.UID) <-chan struct{} {
	pw := w.get(uid)
	if pw == nil {
		return nil
	}
	return pw.done
}
