package podworker

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
)

// Rerun starts a pod again, under its UID, after a termination that did not
// end it for good: a node shutdown that was cancelled, or after which the
// machine rebooted. data is the checkpoint of its last worker — terminated,
// or, after a reboot, caught terminating. The new worker syncs the pod from
// the start (its setup, then its init containers), and every container
// that ran keeps its history as the kubelet shows containers started again
// after a reboot: its last instance is its lastState, and its next start
// counts one restart more. Backoffs start afresh.
//
// A worker of the pod that is still there must be terminated and its
// goroutine returned (Done closed): Rerun replaces it. Rerun fails for a
// worker that still runs and for a checkpoint it cannot read.
func (w *Workers) Rerun(pod *model.Pod, data []byte) error {
	cp, err := decodeCheckpoint(data)
	if err != nil {
		return fmt.Errorf("start pod %s again: %w", pod.Key(), err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.pods[pod.UID]; ok {
		select {
		case <-old.done:
		default:
			return fmt.Errorf("start pod %s again: its worker still runs", pod.Key())
		}
	}
	if err := w.ctx.Err(); err != nil {
		return fmt.Errorf("start pod %s again: %w", pod.Key(), err)
	}
	now := w.cfg.Clock.Now()
	pw := newPodWorker(w, pod)
	if err := pw.rerunFrom(cp, now); err != nil {
		return fmt.Errorf("start pod %s again: checkpoint: %w", pod.Key(), err)
	}
	pw.storeStatus(now)
	w.pods[pod.UID] = pw
	w.wg.Add(1)
	go pw.run(w.ctx)
	pw.inbox.ring()
	pw.log.Info("pod starts again", "after", cp.TermReason)
	return nil
}

// rerunFrom gives a new worker the containers' history from a checkpoint:
// each container that ran is reset as a restart of all containers resets
// it (planner.Observed.RestartedAll: its next start is a restart, its last
// instance stays its lastState), and one the checkpoint still saw running
// — its instance went with the reboot, or outlived the checkpoint — ended
// with an unknown status. The pod itself starts anew: not set up, no
// termination. Its first checkpoint is saved at its first step.
func (pw *podWorker) rerunFrom(cp checkpointV1, now time.Time) error {
	for _, c := range pw.ctrs.list {
		r, ok := cp.Containers[c.ref.Name]
		if !ok {
			continue
		}
		if err := c.restoreFrom(r); err != nil {
			return fmt.Errorf("container %q: %w", c.ref.Name, err)
		}
		c.pending = nil
		o := c.obs
		switch o.State {
		case planner.Waiting:
			c.obs = planner.Observed{State: planner.Waiting, Restarts: o.Restarts, RestartedAll: o.RestartedAll}
			continue
		case planner.Running:
			o.FinishedAt, o.ExitCode = now, 137
			c.exit = runtime.ExitStatus{ExitCode: 137, Reason: runtime.ReasonStatusUnknown, Message: "The container could not be located when the pod started again", FinishedAt: now}
		}
		c.obs = planner.Observed{
			State: planner.Exited, StartedAt: o.StartedAt, FinishedAt: o.FinishedAt, ExitCode: o.ExitCode,
			Restarts: o.Restarts, RestartedAll: true,
		}
		if o.State == planner.Running {
			pw.noteExit(c)
		}
	}
	// What the node allocated stays the pod's (the kubelet keeps its
	// allocation checkpoint across a reboot).
	return pw.restoreAllocation(cp)
}

// CheckpointTermination reads, from a checkpoint, the phase it was saved
// in and why the pod's termination began ("" while it synced).
func CheckpointTermination(data []byte) (Phase, TerminationReason, error) {
	var cp struct {
		Phase      Phase             `json:"phase"`
		TermReason TerminationReason `json:"terminationReason"`
	}
	if err := json.Unmarshal(data, &cp); err != nil {
		return 0, "", fmt.Errorf("decode checkpoint: %w", err)
	}
	return cp.Phase, cp.TermReason, nil
}

// TerminationReason is why the pod's termination began, as its worker
// last published it: "" while it syncs, and for a pod no worker knows.
func (w *Workers) TerminationReason(uid types.UID) TerminationReason {
	pw := w.get(uid)
	if pw == nil {
		return ""
	}
	return pw.published().reason
}
