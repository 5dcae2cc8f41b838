package podworker

import (
	"encoding/json"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
)

// Checkpointer stores a pod worker's checkpoint durably. The worker calls
// SaveCheckpoint before the action the checkpoint guards (write-ahead): a
// container start, a stop signal, a kill, the start of a termination. Save
// must be durable when it returns. A failed save is tried again (a start
// waits for it, a stop does not), also after the pod terminated, until it
// succeeds: a Checkpointer takes (returns nil for, without storing) the
// checkpoints of a pod it removed.
type Checkpointer interface {
	SaveCheckpoint(uid types.UID, data []byte) error
}

// DeferredCheckpointer is the optional ability of a Checkpointer to take a
// checkpoint without waiting for it to be durable: the worker's last save,
// of a terminated pod, guards no action of its own (the termination's stops
// were saved ahead), and whoever removes a deleted pod supersedes it in the
// store, so that the delete does not wait for a commit of its own.
// SaveCheckpointDeferred queues data and returns at once; wait returns
// once it is durable, with SaveCheckpoint's error, and is called once. The
// worker removes the pod's content (CleanupPod: the exits its instances
// recorded) only after wait returned, so that a crash never loses an exit
// code. Saves of one pod are stored in the order they were made.
type DeferredCheckpointer interface {
	SaveCheckpointDeferred(uid types.UID, data []byte) (wait func() error)
}

// checkpointVersion changes when the checkpoint's meaning changes.
const checkpointVersion = 1

// The types below are the checkpoint on disk, version 1: what a worker
// needs, beside the runtime's own view of its instances, to resume a pod
// where it was. They are not the worker's or the planner's in-memory types,
// so that those may change without changing the format; record and
// restoreFrom convert. Field names and encodings are those the first
// agents wrote and must stay readable (testdata/checkpoint-v1-*.json): a
// restarted agent reads the previous one's checkpoints. The fields whose
// JSON names are capitalised were once written from structs without json
// tags; their names are kept.

// checkpointV1 is a pod's checkpoint.
type checkpointV1 struct {
	Version   int       `json:"version"`
	Phase     Phase     `json:"phase"`
	StartTime time.Time `json:"startTime"`
	Prepared  bool      `json:"prepared"`
	Deleted   bool      `json:"deleted,omitempty"`
	// TermReason is who asked for the termination (KillOptions.Reason, or
	// "Completed").
	TermReason  TerminationReason  `json:"terminationReason,omitempty"`
	Termination *terminationRecord `json:"termination,omitempty"`
	// DeadlineGrace is the grace period, in seconds, of the request that
	// set the termination's deadline (absent in checkpoints of agents that
	// did not keep it).
	DeadlineGrace *int64 `json:"deadlineGracePeriodSeconds,omitempty"`
	// GPReported: the GracePeriodExceeded event was emitted.
	GPReported bool `json:"gracePeriodReported,omitempty"`
	// RestartAll is a restart of all containers in progress (added after
	// the first agents; omitted when none).
	RestartAll *restartAllRecord `json:"restartAll,omitempty"`
	// Containers are keyed by container name.
	Containers map[string]containerRecord `json:"containers"`
	// Allocated is what the node allocated to each regular container and
	// sidecar, by name (in-place resize, KEP-1287: the kubelet's
	// allocation checkpoint), and AllocatedGeneration the pod's generation
	// whose resources those are. Added after the first agents, which
	// allocated the spec's: absent, the allocation is the spec's.
	Allocated           map[string]resourcesRecord `json:"allocated,omitempty"`
	AllocatedGeneration int64                      `json:"allocatedGeneration,omitempty"`
}

// resourcesRecord is a v1.ResourceRequirements: each quantity in its
// canonical text, by resource name.
type resourcesRecord struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

// restartAllRecord is a planner.RestartAll.
type restartAllRecord struct {
	Trigger  string    `json:"trigger"`
	ExitCode int32     `json:"exitCode"`
	At       time.Time `json:"at"`
}

// terminationRecord is a planner.Termination.
type terminationRecord struct {
	RequestedAt time.Time `json:"RequestedAt"`
	Deadline    time.Time `json:"Deadline"`
	RunDefer    bool      `json:"RunDefer"`
}

// containerRecord is one container's part of the checkpoint.
type containerRecord struct {
	ID       string         `json:"id,omitempty"`
	Observed observedRecord `json:"observed"`
	Exit     exitRecord     `json:"exit"`
	// Last is the Kubernetes API's own (versioned) type.
	Last             *v1.ContainerStateTerminated `json:"last,omitempty"`
	BackoffAnnounced time.Time                    `json:"backoffAnnounced"`
	Pending          *pendingRecord               `json:"pending,omitempty"`
	// Actuated is the resources the running instance has (the kubelet's
	// actuated resources: its allocation when it started, or a resize
	// applied since). Added with in-place resize: absent when unknown.
	Actuated *resourcesRecord `json:"actuated,omitempty"`
	// Ready is the readiness probe's verdict on instance ID, kept across
	// an agent restart as the kubelet since 1.35 keeps it (KEP-4781).
	// Added after the first agents: omitted when false, so that their
	// checkpoints read (as not ready) and write back the same.
	Ready bool `json:"ready,omitempty"`
}

// observedRecord is a planner.Observed; State is one of the record*
// numbers below.
type observedRecord struct {
	State           int       `json:"State"`
	Started         bool      `json:"Started"`
	StartedOnce     bool      `json:"StartedOnce"`
	StartedAt       time.Time `json:"StartedAt"`
	FinishedAt      time.Time `json:"FinishedAt"`
	ExitCode        int32     `json:"ExitCode"`
	Restarts        int       `json:"Restarts"`
	BackoffSteps    int       `json:"BackoffSteps"`
	StopRequestedAt time.Time `json:"StopRequestedAt"`
	SignalledAt     time.Time `json:"SignalledAt"`
	Killed          bool      `json:"Killed"`
	KillAt          time.Time `json:"KillAt"`
	// ProbeKilled was added after the first agents: omitted when false, so
	// that their checkpoints read (as false) and write back the same.
	ProbeKilled bool `json:"probeKilled,omitempty"`
	// RestartedAll was added later still, the same way, and ResizeRestart
	// after it.
	RestartedAll  bool `json:"restartedAll,omitempty"`
	ResizeRestart bool `json:"resizeRestart,omitempty"`
}

// exitRecord is a runtime.ExitStatus.
type exitRecord struct {
	ExitCode   int32     `json:"ExitCode"`
	Reason     string    `json:"Reason"`
	Message    string    `json:"Message"`
	FinishedAt time.Time `json:"FinishedAt"`
}

// pendingRecord is a pendingStart.
type pendingRecord struct {
	Attempt      int `json:"attempt"`
	BackoffSteps int `json:"backoffSteps"`
}

// How planner.State is written: these numbers are the format's, whatever
// the planner's own are.
const (
	recordWaiting = 1
	recordRunning = 2
	recordExited  = 3
)

func stateRecord(s planner.State) int {
	switch s {
	case planner.Running:
		return recordRunning
	case planner.Exited:
		return recordExited
	default:
		return recordWaiting
	}
}

// stateFromRecord reads a written state; 0 (never written by an agent,
// but once the zero value of the field) is Waiting.
func stateFromRecord(n int) (planner.State, error) {
	switch n {
	case 0, recordWaiting:
		return planner.Waiting, nil
	case recordRunning:
		return planner.Running, nil
	case recordExited:
		return planner.Exited, nil
	default:
		return 0, fmt.Errorf("state %d is not valid", n)
	}
}

// record is the worker's checkpoint.
func (pw *podWorker) record() checkpointV1 {
	cp := checkpointV1{
		Version:    checkpointVersion,
		Phase:      pw.phase,
		StartTime:  pw.startTime,
		Prepared:   pw.setup.prepared,
		Containers: make(map[string]containerRecord, len(pw.ctrs.list)),
	}
	pw.ending.record(&cp)
	if r := pw.restartAll; r != nil {
		cp.RestartAll = &restartAllRecord{Trigger: r.Trigger, ExitCode: r.ExitCode, At: r.At}
	}
	for _, c := range pw.ctrs.list {
		cp.Containers[c.ref.Name] = c.record()
	}
	pw.alloc.record(&cp)
	return cp
}

// recordResources is how r is written.
func recordResources(r v1.ResourceRequirements) resourcesRecord {
	list := func(l v1.ResourceList) map[string]string {
		if len(l) == 0 {
			return nil
		}
		out := make(map[string]string, len(l))
		for name, q := range l {
			out[string(name)] = q.String()
		}
		return out
	}
	return resourcesRecord{Requests: list(r.Requests), Limits: list(r.Limits)}
}

// resources reads what recordResources wrote.
func (r resourcesRecord) resources() (v1.ResourceRequirements, error) {
	list := func(what string, m map[string]string) (v1.ResourceList, error) {
		if len(m) == 0 {
			return nil, nil
		}
		out := make(v1.ResourceList, len(m))
		for name, text := range m {
			q, err := resource.ParseQuantity(text)
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", what, name, err)
			}
			out[v1.ResourceName(name)] = q
		}
		return out, nil
	}
	req, err := list("requests", r.Requests)
	if err != nil {
		return v1.ResourceRequirements{}, err
	}
	lim, err := list("limits", r.Limits)
	if err != nil {
		return v1.ResourceRequirements{}, err
	}
	return v1.ResourceRequirements{Requests: req, Limits: lim}, nil
}

// restoreAllocation takes the node's allocation from a checkpoint
// (allocState.restore); when it records one, the node counts the pod's
// requests with it.
func (pw *podWorker) restoreAllocation(cp checkpointV1) error {
	if err := pw.alloc.restore(cp, pw.pod); err != nil {
		return err
	}
	if cp.Allocated != nil {
		pw.claim.requested = requestOf(pw.alloc.pod)
	}
	return nil
}

// restoreFrom loads a checkpoint into a new worker. A container the
// checkpoint does not name keeps its initial state.
func (pw *podWorker) restoreFrom(cp checkpointV1) error {
	pw.phase = cp.Phase
	pw.startTime = cp.StartTime
	pw.setup.prepared = cp.Prepared
	pw.ending.restore(cp)
	if r := cp.RestartAll; r != nil {
		if _, ok := pw.ctrs.byName[r.Trigger]; !ok {
			return fmt.Errorf("restartAll.trigger: no container %q", r.Trigger)
		}
		pw.restartAll = &planner.RestartAll{Trigger: r.Trigger, ExitCode: r.ExitCode, At: r.At}
	}
	for _, c := range pw.ctrs.list {
		r, ok := cp.Containers[c.ref.Name]
		if !ok {
			continue
		}
		if err := c.restoreFrom(r); err != nil {
			return fmt.Errorf("container %q: %w", c.ref.Name, err)
		}
	}
	return pw.restoreAllocation(cp)
}

// record is the container's part of the checkpoint.
func (c *ctr) record() containerRecord {
	o := c.obs
	r := containerRecord{
		ID: c.id,
		Observed: observedRecord{
			State: stateRecord(o.State), Started: o.Started, StartedOnce: o.StartedOnce,
			StartedAt: o.StartedAt, FinishedAt: o.FinishedAt, ExitCode: o.ExitCode,
			Restarts: o.Restarts, BackoffSteps: o.BackoffSteps,
			StopRequestedAt: o.StopRequestedAt, SignalledAt: o.SignalledAt, Killed: o.Killed, KillAt: o.KillAt,
			ProbeKilled: o.ProbeKilled, RestartedAll: o.RestartedAll, ResizeRestart: o.ResizeRestart,
		},
		Exit:             exitRecord{ExitCode: c.exit.ExitCode, Reason: string(c.exit.Reason), Message: c.exit.Message, FinishedAt: c.exit.FinishedAt},
		Last:             c.last,
		BackoffAnnounced: c.backoffAnnounced,
		Ready:            c.ready,
	}
	if p := c.pending; p != nil {
		r.Pending = &pendingRecord{Attempt: p.attempt, BackoffSteps: p.backoffSteps}
	}
	if c.applied != nil {
		a := recordResources(*c.applied)
		r.Actuated = &a
	}
	return r
}

// restoreFrom loads the container's part of a checkpoint.
func (c *ctr) restoreFrom(r containerRecord) error {
	o := r.Observed
	state, err := stateFromRecord(o.State)
	if err != nil {
		return fmt.Errorf("observed.State: %w", err)
	}
	c.id = r.ID
	c.obs = planner.Observed{
		State: state, Started: o.Started, StartedOnce: o.StartedOnce,
		StartedAt: o.StartedAt, FinishedAt: o.FinishedAt, ExitCode: o.ExitCode,
		Restarts: o.Restarts, BackoffSteps: o.BackoffSteps,
		StopRequestedAt: o.StopRequestedAt, SignalledAt: o.SignalledAt, Killed: o.Killed, KillAt: o.KillAt,
		ProbeKilled: o.ProbeKilled, RestartedAll: o.RestartedAll, ResizeRestart: o.ResizeRestart,
	}
	c.exit = runtime.ExitStatus{ExitCode: r.Exit.ExitCode, Reason: runtime.ExitReason(r.Exit.Reason), Message: r.Exit.Message, FinishedAt: r.Exit.FinishedAt}
	c.last = r.Last
	c.backoffAnnounced = r.BackoffAnnounced
	// The verdict on instance c.id; recover drops it unless that instance
	// still runs.
	c.ready = r.Ready
	c.pending = nil
	if p := r.Pending; p != nil {
		c.pending = &pendingStart{attempt: p.Attempt, backoffSteps: p.BackoffSteps}
	}
	c.applied = nil
	if a := r.Actuated; a != nil {
		res, err := a.resources()
		if err != nil {
			return fmt.Errorf("actuated.%w", err)
		}
		c.applied = &res
	}
	return nil
}

// decodeCheckpoint reads and checks a checkpoint.
func decodeCheckpoint(data []byte) (checkpointV1, error) {
	var cp checkpointV1
	if err := json.Unmarshal(data, &cp); err != nil {
		return cp, fmt.Errorf("decode checkpoint: %w", err)
	}
	if cp.Version != checkpointVersion {
		return cp, fmt.Errorf("checkpoint version %d, want %d", cp.Version, checkpointVersion)
	}
	if cp.Phase < Syncing || cp.Phase > Terminated {
		return cp, fmt.Errorf("checkpoint phase %d is not valid", cp.Phase)
	}
	return cp, nil
}

// save writes the checkpoint when it changed since the last save. Before
// an action (writeAhead) a failure holds back a start, never a stop;
// elsewhere it is logged and the next save writes the state again. The
// first failure after a success is a Warning event (FailedCheckpoint); while
// saves fail the worker tries again every checkpointRetry (step). Only the
// pod's goroutine calls it.
func (pw *podWorker) save() error {
	cpr := pw.w.cfg.Checkpointer
	if cpr == nil {
		return nil
	}
	data, err := json.Marshal(pw.record())
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	if pw.saving.upToDate(data) {
		return nil
	}
	began := pw.w.cfg.Clock.Now()
	err = cpr.SaveCheckpoint(pw.uid, data)
	pw.w.cfg.Metrics.CheckpointSaved(pw.w.cfg.Clock.Since(began), err)
	if err != nil {
		pw.failedCheckpoint(pw.saving.failed(), err)
		pw.log.Error("save checkpoint", "err", err)
		return fmt.Errorf("save checkpoint: %w", err)
	}
	if pw.saving.saved(data) {
		pw.log.Info("checkpoint saved again")
	}
	return nil
}

// failedCheckpoint emits the Warning event of a failed save, err, when it
// is the first since the last success.
func (pw *podWorker) failedCheckpoint(first bool, err error) {
	if first {
		pw.eventf("", events.Warning, events.FailedCheckpoint, "Cannot save the pod's checkpoint: %v; stopping containers goes on without it, starting them waits until it is saved", err)
	}
}

// saveDeferred is save for the last checkpoint of a terminated pod, where
// the Checkpointer can take it deferred: it returns at once, and
// saving.await waits for it. Only the pod's goroutine calls it.
func (pw *podWorker) saveDeferred() {
	cpr, ok := pw.w.cfg.Checkpointer.(DeferredCheckpointer)
	if !ok {
		_ = pw.save()
		return
	}
	data, err := json.Marshal(pw.record())
	if err != nil {
		pw.log.Error("save checkpoint", "err", fmt.Errorf("encode checkpoint: %w", err))
		return
	}
	if pw.saving.same(data) {
		return
	}
	began := pw.w.cfg.Clock.Now()
	wait := cpr.SaveCheckpointDeferred(pw.uid, data)
	pw.saving.queued(data, func() {
		err := wait()
		pw.w.cfg.Metrics.CheckpointSaved(pw.w.cfg.Clock.Since(began), err)
		if err != nil {
			// As a failed save: the next save (saveUntilSaved) writes it
			// again.
			pw.failedCheckpoint(pw.saving.lost(), err)
			pw.log.Error("save checkpoint", "err", fmt.Errorf("save checkpoint: %w", err))
		}
	})
}

// restore loads a checkpoint into a new worker, before its goroutine
// starts; the runtime's instances are reconciled with it by recover, in
// the worker's first step.
func (pw *podWorker) restore(data []byte) error {
	cp, err := decodeCheckpoint(data)
	if err != nil {
		return err
	}
	if err := pw.restoreFrom(cp); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if pw.phase == Terminated {
		close(pw.terminated)
	}
	if pw.phase != Syncing {
		// A pod that was terminating stays so: nothing of setup resumes.
		pw.inbox.markKilled()
		pw.setup.cancel()
	}
	pw.saving.saved(data) // what the store holds
	pw.recovering = true
	pw.milestones.resumed()
	return nil
}

// CheckpointPhase reads the phase a checkpoint was saved in.
func CheckpointPhase(data []byte) (Phase, error) {
	var cp struct {
		Phase Phase `json:"phase"`
	}
	if err := json.Unmarshal(data, &cp); err != nil {
		return 0, fmt.Errorf("decode checkpoint: %w", err)
	}
	return cp.Phase, nil
}
