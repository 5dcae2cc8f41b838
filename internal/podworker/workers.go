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

// Phase is where a pod worker stands. Transitions are one-way. Its numbers
// are written in checkpoints: they never change.
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
	// HostIP is the node's address, reported as hostIP and, for a pod
	// that shares the host's network (the runtime is no
	// runtime.PodAddresser, or gives the pod no IPs), as podIP. Default
	// 127.0.0.1.
	HostIP string
	// OnChange, when set, is called from a pod's goroutine, with no lock
	// held, after the pod's status or phase changed. It must not block.
	OnChange func(uid types.UID)
	// Timeline, when set, is told of every instance's start, stop signal,
	// kill and exit, of probe failures and of the termination: the pod's
	// timeline (timeline.go).
	Timeline Timeline
	// Metrics, when set, receives what the workers measure.
	Metrics Metrics
	// Allocatable is the node's allocatable cpu and memory, what a resize
	// that asks for more must fit in with the other pods' allocations
	// (admitResize). A resource it does not name (or names as zero) is not
	// checked.
	Allocatable v1.ResourceList
}

// TerminationReason says why a pod's termination began: who asked for it
// (a kill's reason) or that the pod completed on its own. It is logged and
// kept in the checkpoint by its text, so a value's text never changes.
type TerminationReason string

// Termination reasons, one per cause.
const (
	// TerminationCompleted: every regular container terminated and none
	// will restart, or an init container failed for good.
	TerminationCompleted TerminationReason = "Completed"
	// TerminationDeleted: a delete through the agent's API, or a
	// deletionTimestamp set by the cluster's API server.
	TerminationDeleted TerminationReason = "Deleted"
	// TerminationDeletedFromAPI: the pod is gone from the cluster's API
	// server (deleted while the node was away, or forced).
	TerminationDeletedFromAPI TerminationReason = "DeletedFromAPI"
	// TerminationReplaced: an apply changed the pod's spec; the old pod
	// ends before the new one starts.
	TerminationReplaced TerminationReason = "Replaced"
	// TerminationInterrupted: `podward run` got SIGINT or SIGTERM.
	TerminationInterrupted TerminationReason = "Interrupted"
	// TerminationTimeout: `podward run --timeout` passed.
	TerminationTimeout TerminationReason = "Timeout"
	// TerminationAborted: `podward run` could not create a later pod of its
	// manifest, so the pods already created end.
	TerminationAborted TerminationReason = "Aborted"
	// TerminationDeadlineExceeded: the pod was active for its
	// spec.activeDeadlineSeconds (planner.ActiveDeadline); it ends Failed
	// with reason DeadlineExceeded.
	TerminationDeadlineExceeded TerminationReason = "DeadlineExceeded"
	// TerminationNodeShutdown: the node shuts down (internal/shutdown).
	// The pod ends as for a delete but is not deleted: no
	// deletionTimestamp, and once terminated it shows what the kubelet
	// writes (Failed unless Succeeded, reason Terminated, the
	// DisruptionTarget condition) until it starts again (Rerun).
	TerminationNodeShutdown TerminationReason = "NodeShutdown"
)

// KillOptions asks for a pod's termination.
type KillOptions struct {
	// GracePeriodSeconds overrides the pod's terminationGracePeriodSeconds
	// when set. A later kill may shorten the deadline, never lengthen it.
	GracePeriodSeconds *int64
	// Reason says who asked, for logs and the checkpoint.
	Reason TerminationReason
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

	// allocMu serialises the admissions of resizes (admitResize), each a
	// read of every pod's podWorker.claim.requested and a write of one; it is
	// taken before mu, never after.
	allocMu sync.Mutex
	// allocatable is Config.Allocatable as admitResize counts it.
	allocatable nodeRequest

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
	if cfg.Metrics == nil {
		cfg.Metrics = noMetrics{}
	}
	return &Workers{
		cfg: cfg, ctx: ctx, log: cfg.Logger, pods: map[types.UID]*podWorker{},
		allocatable: nodeRequest{milliCPU: cfg.Allocatable.Cpu().MilliValue(), memory: cfg.Allocatable.Memory().Value()},
	}
}

// UpdatePod hands an update to the pod's worker, creating the worker on the
// first update for a UID. It only records the update and wakes the worker:
// it never waits for work to be done. Updates to a busy worker coalesce: the
// latest pod wins, a kill is sticky and of two kills the shorter grace
// period wins (a kill without one counts with its pod's
// terminationGracePeriodSeconds). A kill cancels a setup in progress, and once it is recorded
// no container of a syncing pod starts. A terminated pod's worker ignores
// updates.
func (w *Workers) UpdatePod(opts UpdateOptions) {
	uid := opts.Pod.UID
	w.mu.Lock()
	pw, ok := w.pods[uid]
	if !ok && w.ctx.Err() != nil {
		// Wait may be counting already: no worker starts after the end.
		w.mu.Unlock()
		return
	}
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
	pw.inbox.push(input{kind: inputExit, exit: ev})
}

// Wait returns, once the ctx given to New is done, when every pod
// goroutine (and every stop it began) has returned. From then on no worker
// starts (UpdatePod of a new pod is dropped), so none is missed.
func (w *Workers) Wait() {
	<-w.ctx.Done()
	w.mu.Lock()
	w.mu.Unlock() // a barrier: every worker made before it is counted in w.wg
	w.wg.Wait()
}

// Forget drops the worker of a terminated pod; a worker still trying to
// save the pod's last checkpoint gives up (the pod is gone). It reports
// false, and keeps the worker, when the pod is not terminated.
func (w *Workers) Forget(uid types.UID) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	pw, ok := w.pods[uid]
	if !ok {
		return true
	}
	if pw.published().phase != Terminated {
		return false
	}
	delete(w.pods, uid)
	close(pw.forgotten)
	return true
}

func (w *Workers) get(uid types.UID) *podWorker {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.pods[uid]
}

// The queries below answer from what the pod's worker last published
// (published), plus, where a kill must count before the worker has taken
// it, the inbox's sticky kill flag. Each has its own meaning, after the
// kubelet's pod workers (pkg/kubelet/pod_workers.go); where podward's
// answer differs from the kubelet's, the doc says so. None blocks on the
// worker.

// IsPodKnownTerminated reports whether the pod's worker has terminated it:
// no container of it runs and none will start again. False for a pod no
// worker knows, as in the kubelet.
func (w *Workers) IsPodKnownTerminated(uid types.UID) bool {
	pw := w.get(uid)
	return pw != nil && pw.published().phase == Terminated
}

// IsPodTerminationRequested reports whether the pod is to end: a kill was
// recorded for it — true from the UpdatePod that carried it, before its
// worker has acted on it (the pod may still be being set up) — or its
// worker began terminating it on its own because it completed. It says
// nothing of whether containers still run. False for a pod no worker
// knows, as in the kubelet.
func (w *Workers) IsPodTerminationRequested(uid types.UID) bool {
	pw := w.get(uid)
	return pw != nil && (pw.inbox.killRecorded() || pw.published().phase != Syncing)
}

// ShouldPodContainersBeTerminating reports whether the pod's containers
// should be stopping rather than starting: no container starts any more
// for the pod's own sake, only defer containers and restarted sidecars as
// part of its termination. The kubelet answers true only once the worker
// has taken up the termination, since until then a sync in flight may
// still start containers; in podward a recorded kill stops every start of
// a syncing pod at once (podWorker.start reads the same flag, and the kill
// cancels the setup context), so the answer is true from the moment the
// kill is recorded — which makes it agree, in value, with
// IsPodTerminationRequested. False for a pod no worker knows (the kubelet
// says true once it has synced all its pods; podward has no such moment,
// and starts nothing for a pod without a worker).
func (w *Workers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	pw := w.get(uid)
	if pw == nil {
		return false
	}
	v := pw.published()
	return v.phase == Terminating || v.phase == Terminated || pw.inbox.killRecorded()
}

// CouldHaveRunningContainers reports whether the pod may still have
// running containers: true from its first update until its worker has
// terminated it. A pod no worker knows has none that podward started (the
// kubelet says true for it until it has synced all its pods).
func (w *Workers) CouldHaveRunningContainers(uid types.UID) bool {
	pw := w.get(uid)
	return pw != nil && pw.published().phase != Terminated
}

// ShouldPodContentBeRemoved reports whether the pod's volumes and other
// content may be removed: its worker terminated it, or no worker knows it.
// Unlike the kubelet, which keeps the content of a pod that terminated
// without being deleted or evicted, podward removes a terminated pod's
// content whatever ended it (the worker does so right after terminating).
func (w *Workers) ShouldPodContentBeRemoved(uid types.UID) bool {
	pw := w.get(uid)
	return pw == nil || pw.published().phase == Terminated
}

// PodStatus returns the pod as its worker last published it: the pod
// (with the defer container statuses annotation) and its status. The
// returned pod is a copy owned by the caller.
func (w *Workers) PodStatus(uid types.UID) (*v1.Pod, Phase, bool) {
	pw := w.get(uid)
	if pw == nil {
		return nil, 0, false
	}
	v := pw.published()
	return v.pod.DeepCopy(), v.phase, true
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
