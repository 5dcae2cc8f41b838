package podworker

import (
	"fmt"
	"time"

	"github.com/podward/podward/internal/model"
)

// Metrics receives what the pod workers measure, as it happens. Each call
// comes from a pod's goroutine, with no lock held, and must not block: an
// implementation only adds to counters and histograms whose labels it
// resolved beforehand (internal/metrics; a fake in tests). Durations come
// from the workers' clock, so a fake clock gives exact ones.
type Metrics interface {
	// WorkerStarted: a worker's goroutine took up its pod, seen after the
	// pod was handed to it (the kubelet's pod_worker_start_duration).
	WorkerStarted(seen time.Duration)
	// PodRunning: the pod's phase became Running for the first time, since
	// its worker was made (the kubelet's pod_start_duration). Not for a pod
	// a restarted agent resumes.
	PodRunning(sinceSeen time.Duration)
	// Synced: one turn of a worker's goroutine (its sync) took d.
	Synced(op SyncOperation, d time.Duration)
	// ContainerStarted: a start of a container of this role was tried —
	// the runtime was asked, or its image pull failed.
	ContainerStarted(role model.Role)
	// ContainerStartFailed: that start failed; code is one of the
	// kubelet's error reasons (StartError* constants).
	ContainerStartFailed(role model.Role, code string)
	// DeferExited: an instance of a defer container exited after running
	// for d.
	DeferExited(outcome DeferOutcome, d time.Duration)
	// PodTerminated: a pod's termination ended, for reason, graceLeft
	// before its deadline (zero when it ran out).
	PodTerminated(reason TerminationReason, outcome TerminationOutcome, graceLeft time.Duration)
	// CheckpointSaved: a checkpoint write took d, and failed when err is
	// set.
	CheckpointSaved(d time.Duration, err error)
}

// The codes of ContainerStartFailed, the kubelet's error reasons
// (pkg/kubelet/container/sync_result.go, pkg/kubelet/images/types.go).
const (
	StartErrorRunContainer = "RunContainerError"
	StartErrorConfig       = reasonCreateContainerConfigError
	StartErrorImagePull    = reasonErrImagePull
	StartErrorNeverPull    = reasonErrImageNeverPull
)

// SyncOperation is what a turn of a worker's goroutine was for, the
// kubelet's sync types (pkg/kubelet/types/pod_update.go).
type SyncOperation int

// Sync operations start at one so that the zero value is never valid.
const (
	// SyncCreate: the worker's first turn.
	SyncCreate SyncOperation = iota + 1
	// SyncUpdate: the pod's spec came anew.
	SyncUpdate
	// SyncOther: anything else the pod learnt (exits, probes, hooks, a
	// wake-up time).
	SyncOther
	// SyncKill: the pod is terminating, or a kill came.
	SyncKill
)

// SyncOperations are every SyncOperation, in order.
var SyncOperations = []SyncOperation{SyncCreate, SyncUpdate, SyncOther, SyncKill}

// String is the kubelet's label value of the operation.
func (o SyncOperation) String() string {
	switch o {
	case SyncCreate:
		return "create"
	case SyncUpdate:
		return "update"
	case SyncOther:
		return "sync"
	case SyncKill:
		return "kill"
	default:
		return fmt.Sprintf("SyncOperation(%d)", int(o))
	}
}

// DeferOutcome is how a defer container's instance ended.
type DeferOutcome int

// Defer outcomes start at one so that the zero value is never valid.
const (
	// DeferCompleted: it exited 0.
	DeferCompleted DeferOutcome = iota + 1
	// DeferFailed: it exited non-zero on its own (or after a stop signal).
	DeferFailed
	// DeferKilled: it was killed at the end of the grace period.
	DeferKilled
)

// DeferOutcomes are every DeferOutcome, in order.
var DeferOutcomes = []DeferOutcome{DeferCompleted, DeferFailed, DeferKilled}

func (o DeferOutcome) String() string {
	switch o {
	case DeferCompleted:
		return "completed"
	case DeferFailed:
		return "failed"
	case DeferKilled:
		return "killed"
	default:
		return fmt.Sprintf("DeferOutcome(%d)", int(o))
	}
}

// TerminationOutcome is how a pod's termination ended against its
// deadline.
type TerminationOutcome int

// Termination outcomes start at one so that the zero value is never valid.
const (
	// EndedEarly: everything stopped before the deadline.
	EndedEarly TerminationOutcome = iota + 1
	// KilledAtDeadline: the grace period ran out with containers (or defer
	// containers yet to complete) left, which were killed or given up.
	KilledAtDeadline
)

// TerminationOutcomes are every TerminationOutcome, in order.
var TerminationOutcomes = []TerminationOutcome{EndedEarly, KilledAtDeadline}

func (o TerminationOutcome) String() string {
	switch o {
	case EndedEarly:
		return "ended_early"
	case KilledAtDeadline:
		return "killed_at_deadline"
	default:
		return fmt.Sprintf("TerminationOutcome(%d)", int(o))
	}
}

// TerminationReasons are every TerminationReason.
var TerminationReasons = []TerminationReason{
	TerminationCompleted, TerminationDeleted, TerminationDeletedFromAPI, TerminationReplaced,
	TerminationInterrupted, TerminationTimeout, TerminationAborted, TerminationDeadlineExceeded,
	TerminationNodeShutdown,
}

// Census counts what the workers hold, for the kubelet's running gauges.
type Census struct {
	// Pods are the pods that may have running containers: not terminated.
	Pods int
	// Running and Exited count the containers whose latest instance runs,
	// or has exited, in every pod the workers hold (terminated ones
	// included, until forgotten).
	Running, Exited int
}

// Census counts the pods and containers as their workers last published
// them; any goroutine may call it. It holds the workers' lock while it
// counts, and reads nothing else.
func (w *Workers) Census() Census {
	w.mu.Lock()
	defer w.mu.Unlock()
	var c Census
	for _, pw := range w.pods {
		st := pw.published()
		if st.phase != Terminated {
			c.Pods++
		}
		c.Running += st.running
		c.Exited += st.exited
	}
	return c
}

// noMetrics is the Metrics of Workers configured without any.
type noMetrics struct{}

func (noMetrics) WorkerStarted(time.Duration)                                        {}
func (noMetrics) PodRunning(time.Duration)                                           {}
func (noMetrics) Synced(SyncOperation, time.Duration)                                {}
func (noMetrics) ContainerStarted(model.Role)                                        {}
func (noMetrics) ContainerStartFailed(model.Role, string)                            {}
func (noMetrics) DeferExited(DeferOutcome, time.Duration)                            {}
func (noMetrics) PodTerminated(TerminationReason, TerminationOutcome, time.Duration) {}
func (noMetrics) CheckpointSaved(time.Duration, error)                               {}

var _ Metrics = noMetrics{}

// syncOperation says what a turn is for, from the inputs it drained.
func (pw *podWorker) syncOperation(first bool, inputs []input) SyncOperation {
	if first {
		return SyncCreate
	}
	op := SyncOther
	if pw.phase != Syncing {
		return SyncKill
	}
	for _, in := range inputs {
		switch in.kind {
		case inputKill:
			return SyncKill
		case inputPod:
			op = SyncUpdate
		}
	}
	return op
}

// noteTerminated reports the end of the pod's termination.
func (pw *podWorker) noteTerminated(now time.Time) {
	if outcome, left, ok := pw.ending.outcome(now); ok {
		pw.w.cfg.Metrics.PodTerminated(pw.ending.reason, outcome, left)
	}
}
