package podworker

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
)

// Checkpointer stores a pod worker's checkpoint durably. The worker calls
// SaveCheckpoint before the action the checkpoint guards (write-ahead): a
// container start, a stop signal, a kill, the start of a termination. Save
// must be durable when it returns.
type Checkpointer interface {
	SaveCheckpoint(uid types.UID, data []byte) error
}

// checkpointVersion changes when the checkpoint's meaning changes.
const checkpointVersion = 1

// checkpoint is what a worker needs, beside the runtime's own view of its
// instances, to resume a pod where it was.
type checkpoint struct {
	Version     int                    `json:"version"`
	Phase       Phase                  `json:"phase"`
	StartTime   time.Time              `json:"startTime"`
	Prepared    bool                   `json:"prepared"`
	Deleted     bool                   `json:"deleted,omitempty"`
	TermReason  string                 `json:"terminationReason,omitempty"`
	Termination *planner.Termination   `json:"termination,omitempty"`
	GPReported  bool                   `json:"gracePeriodReported,omitempty"`
	Containers  map[string]ctrSnapshot `json:"containers"`
}

type ctrSnapshot struct {
	ID               string                       `json:"id,omitempty"`
	Observed         planner.Observed             `json:"observed"`
	Exit             runtime.ExitStatus           `json:"exit"`
	Last             *v1.ContainerStateTerminated `json:"last,omitempty"`
	BackoffAnnounced time.Time                    `json:"backoffAnnounced"`
	// Pending is a start that was decided and may or may not have
	// happened: its attempt and the backoff steps of the new instance.
	Pending *pendingStart `json:"pending,omitempty"`
}

type pendingStart struct {
	Attempt      int `json:"attempt"`
	BackoffSteps int `json:"backoffSteps"`
}

func (pw *podWorker) checkpoint() checkpoint {
	cp := checkpoint{
		Version:     checkpointVersion,
		Phase:       pw.Phase(),
		StartTime:   pw.startTime,
		Prepared:    pw.prepared,
		Deleted:     pw.deleted,
		TermReason:  pw.termReason,
		Termination: pw.term,
		GPReported:  pw.gpReported,
		Containers:  make(map[string]ctrSnapshot, len(pw.ctrs)),
	}
	for _, c := range pw.ctrs {
		cp.Containers[c.ref.Name] = ctrSnapshot{ID: c.id, Observed: c.obs, Exit: c.exit, Last: c.last, BackoffAnnounced: c.backoffAnnounced, Pending: c.pending}
	}
	return cp
}

// save writes the checkpoint when it changed since the last save. Before
// an action (writeAhead) a failure holds the action back; elsewhere it is
// logged and the next save writes the state again.
func (pw *podWorker) save() error {
	cpr := pw.w.cfg.Checkpointer
	if cpr == nil {
		return nil
	}
	data, err := json.Marshal(pw.checkpoint())
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	if string(data) == string(pw.saved) {
		return nil
	}
	if err := cpr.SaveCheckpoint(pw.uid, data); err != nil {
		pw.log.Error("save checkpoint", "err", err)
		return fmt.Errorf("save checkpoint: %w", err)
	}
	pw.saved = data
	return nil
}

// restore loads a checkpoint into a new worker; the runtime's instances
// are reconciled with it by recover, in the worker's first step.
func (pw *podWorker) restore(data []byte) error {
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return fmt.Errorf("decode checkpoint: %w", err)
	}
	if cp.Version != checkpointVersion {
		return fmt.Errorf("checkpoint version %d, want %d", cp.Version, checkpointVersion)
	}
	if cp.Phase < Syncing || cp.Phase > Terminated {
		return fmt.Errorf("checkpoint phase %d is not valid", cp.Phase)
	}
	pw.phase = cp.Phase
	if pw.phase == Terminated {
		close(pw.terminated)
	}
	pw.startTime = cp.StartTime
	pw.prepared = cp.Prepared
	pw.deleted = cp.Deleted
	pw.termReason = cp.TermReason
	pw.term = cp.Termination
	pw.gpReported = cp.GPReported
	if pw.phase != Syncing {
		// A pod that was terminating stays so: nothing of setup resumes.
		pw.killRequested = true
		pw.setupCancel()
	}
	for _, c := range pw.ctrs {
		s, ok := cp.Containers[c.ref.Name]
		if !ok {
			continue
		}
		c.id, c.obs, c.exit, c.last, c.backoffAnnounced, c.pending = s.ID, s.Observed, s.Exit, s.Last, s.BackoffAnnounced, s.Pending
		if c.obs.State == 0 {
			c.obs.State = planner.Waiting
		}
	}
	pw.saved = data
	pw.recovering = true
	return nil
}

// recover reconciles a restored worker with the instances the runtime has:
// a running instance is adopted (never started again), an exit that
// happened while the agent was down is recorded with its real exit code, a
// start that may have happened is found or known not to have, and an
// instance the checkpoint believed running but the runtime lost is counted
// as exited with an unknown status.
func (pw *podWorker) recover(ctx context.Context) error {
	lister, ok := pw.w.cfg.Runtime.(runtime.ContainerLister)
	if !ok {
		return fmt.Errorf("the runtime cannot list containers: pod %s cannot be resumed", pw.pod.Key())
	}
	list, err := lister.ListContainers(ctx, pw.uid)
	if err != nil {
		return fmt.Errorf("list containers of pod %s: %w", pw.pod.Key(), err)
	}
	byName := map[string][]runtime.ContainerStatus{}
	for _, st := range list {
		byName[st.Container] = append(byName[st.Container], st)
	}
	now := pw.w.cfg.Clock.Now()
	for _, c := range pw.ctrs {
		insts := byName[c.ref.Name]
		sort.Slice(insts, func(i, j int) bool { return insts[i].Attempt < insts[j].Attempt })
		// Never two running instances of one container: keep the newest.
		for i := 0; i+1 < len(insts); i++ {
			if insts[i].Exit == nil {
				pw.log.Warn("killing a stray instance", "container", c.ref.Name, "id", insts[i].ID)
				if err := pw.w.cfg.Runtime.Signal(ctx, insts[i].ID, syscall.SIGKILL); err != nil {
					pw.log.Error("kill stray instance", "container", c.ref.Name, "err", err)
				}
			}
		}
		pending := c.pending
		c.pending = nil
		if len(insts) == 0 {
			if c.obs.State == planner.Running {
				c.obs.State = planner.Exited
				c.obs.FinishedAt = now
				c.obs.ExitCode = 137
				c.exit = runtime.ExitStatus{ExitCode: 137, Reason: runtime.ReasonStatusUnknown, Message: "The container could not be located when the agent restarted", FinishedAt: now}
				c.obs.Started, c.obs.StopRequestedAt, c.obs.Killed = false, time.Time{}, false
			}
			continue
		}
		latest := insts[len(insts)-1]
		if latest.ID != c.id {
			// Started, but the agent died before it recorded the start.
			if c.obs.State == planner.Exited {
				c.last = c.terminatedState()
			}
			steps := c.obs.BackoffSteps
			if pending != nil && pending.Attempt == latest.Attempt {
				steps = pending.BackoffSteps
			}
			c.id = latest.ID
			c.obs = planner.Observed{
				State: planner.Running, Started: true, StartedOnce: true, StartedAt: latest.StartedAt,
				Restarts: latest.Attempt, BackoffSteps: steps,
			}
			pw.log.Info("adopted a container started before the restart", "container", c.ref.Name, "attempt", latest.Attempt)
		}
		if latest.Exit != nil && c.obs.State == planner.Running {
			pw.observeExit(runtime.Event{PodUID: pw.uid, Container: c.ref.Name, ID: latest.ID, Exit: *latest.Exit})
		}
		if c.obs.State == planner.Running && !c.obs.StopRequestedAt.IsZero() && c.obs.SignalledAt.IsZero() && !c.obs.Killed {
			// The agent stopped during the preStop hook (or right before
			// the signal): the hook is not run twice; the stop goes on
			// with its signal.
			killAt := c.obs.KillAt
			if pw.term != nil {
				killAt = pw.term.Deadline
			}
			pw.signalStop(ctx, c.ref, c.id, pw.pod.Container(c.ref), killAt)
			c.obs.SignalledAt = now
		}
		if c.obs.State == planner.Running && !c.obs.Started {
			// Its postStart hook (or startup probe) was running when the
			// agent stopped; its outcome is lost with the agent. Like the
			// kubelet, which never runs a hook twice, count the container
			// as started.
			c.obs.Started, c.obs.StartedOnce = true, true
		}
		if c.obs.State == planner.Running && c.obs.StopRequestedAt.IsZero() {
			// Probe state is not kept: readiness starts over.
			pw.addProbes(c, pw.pod.Container(c.ref))
		}
	}
	return nil
}

// Restore resumes a pod after an agent restart from the checkpoint its
// worker saved: the worker takes the runtime's instances as they are and
// goes on from there. It fails when a worker for the pod exists already or
// the checkpoint cannot be read.
func (w *Workers) Restore(pod *model.Pod, data []byte) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, ok := w.pods[pod.UID]; ok {
		return fmt.Errorf("pod %s has a worker already", pod.UID)
	}
	pw := newPodWorker(w, pod)
	if err := pw.restore(data); err != nil {
		return fmt.Errorf("restore pod %s: %w", pod.Key(), err)
	}
	pw.published = pw.snapshot(w.cfg.Clock.Now())
	pw.publishedPhase = pw.phase
	w.pods[pod.UID] = pw
	w.wg.Add(1)
	go pw.run(w.ctx)
	pw.ring()
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
