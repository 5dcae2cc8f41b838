package agent

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/podworker"
	"github.com/podward/podward/internal/store"
)

// The agent's side of a node shutdown: internal/shutdown's manager drives
// it through these methods (its Agent interface). While the node shuts
// down, new pods are rejected (NodeShutdownRejection); the manager kills the pods group by group
// (KillForShutdown) and waits for them (WaitTerminated). With
// Config.RestartShutdownPods (standalone mode), a pod the shutdown
// terminated starts again, under its UID, as soon as the node no longer
// shuts down: when the shutdown is cancelled, or after the reboot
// (Recover); in cluster mode it stays terminated, Failed, for its
// controller to replace.

// SetShuttingDown says whether the node shuts down: while it does, new pods
// are rejected (NodeShutdownRejection: recorded Failed by Create, Apply and
// an apply's replacement, returned by Sync). When it no longer does, the pods a node
// shutdown terminated start again (Config.RestartShutdownPods), each once
// its worker is done.
func (a *Agent) SetShuttingDown(on bool) {
	a.mu.Lock()
	a.shuttingDown = on
	var uids []types.UID
	if !on {
		for uid := range a.pods {
			uids = append(uids, uid)
		}
	}
	a.mu.Unlock()
	for _, uid := range uids {
		a.maybeRerun(uid)
	}
}

// ActivePods returns the pods a node shutdown terminates: every pod the
// agent knows whose worker has not terminated it, but the pods rejected at
// admission, which never ran (and have no worker). The caller owns them.
func (a *Agent) ActivePods() []*v1.Pod {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []*v1.Pod
	for _, m := range []map[types.UID]*entry{a.pods, a.forced} {
		for uid, e := range m {
			if !isRejected(e.pod) && !a.workers.IsPodKnownTerminated(uid) {
				out = append(out, e.pod.Pod.DeepCopy())
			}
		}
	}
	return out
}

// KillForShutdown terminates the pod because the node shuts down, with
// grace seconds: a kill with reason NodeShutdown, which ends the pod as a
// delete does but keeps it (see podworker.TerminationNodeShutdown). A
// termination in progress is only shortened. ErrNotFound for a pod the
// agent does not know.
func (a *Agent) KillForShutdown(uid types.UID, grace int64) error {
	a.mu.Lock()
	e := a.entryLocked(uid)
	a.mu.Unlock()
	if e == nil {
		return fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	if a.workers.IsPodKnownTerminated(uid) {
		return nil
	}
	a.recorder.Eventf(e.pod, "", events.Normal, events.NodeShutdown, "Terminating the pod: the node is shutting down (grace period %ds)", grace)
	a.workers.UpdatePod(podworker.UpdateOptions{Pod: e.pod, Kill: &podworker.KillOptions{GracePeriodSeconds: &grace, Reason: podworker.TerminationNodeShutdown}})
	return nil
}

// ShutdownEvent records a Normal NodeShutdown event about the node, as the
// kubelet's shutdown manager does.
func (a *Agent) ShutdownEvent(message string) {
	a.recorder.NodeEventf(a.cfg.NodeName, events.Normal, events.NodeShutdown, "%s", message)
}

// maybeRerun starts the pod uid again when a node shutdown terminated it
// and the node no longer shuts down (standalone mode): once its worker's
// goroutine is done, from its last checkpoint. A pod deleted meanwhile is
// left to its removal.
func (a *Agent) maybeRerun(uid types.UID) {
	if !a.cfg.RestartShutdownPods || a.cfg.Store == nil {
		return
	}
	a.mu.Lock()
	e := a.pods[uid]
	ok := e != nil && !a.shuttingDown && e.deletion == nil && !e.rerunning &&
		a.workers.IsPodKnownTerminated(uid) && a.workers.TerminationReason(uid) == podworker.TerminationNodeShutdown
	if ok {
		e.rerunning = true
	}
	a.mu.Unlock()
	if !ok {
		return
	}
	done := a.workers.Done(uid)
	a.spawn(func() {
		select {
		case <-done:
		case <-a.ctx.Done():
			return
		}
		a.rerunDone(uid, e)
	})
}

// rerunDone starts e's pod again once its worker is done, unless it was
// deleted, or the node shuts down again, meanwhile.
func (a *Agent) rerunDone(uid types.UID, e *entry) {
	cp, err := a.cfg.Store.GetCheckpoint(uid)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		a.log.Error("start pod again after the node shutdown", "pod", e.pod.Key(), "podUID", uid, "err", err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	e.rerunning = false
	if a.pods[uid] != e || e.deletion != nil || a.shuttingDown || len(cp) == 0 {
		return
	}
	// Under a.mu (agent, then workers), so that no delete nor reap comes
	// between the check and the new worker.
	if err := a.rerun(e.pod, cp, "the node shutdown was cancelled"); err != nil {
		a.log.Error("start pod again after the node shutdown", "pod", e.pod.Key(), "podUID", uid, "err", err)
	}
}

// rerun gives a pod a node shutdown stopped a new worker that starts it
// again (podworker.Workers.Rerun), saying why in an event.
func (a *Agent) rerun(p *model.Pod, cp []byte, why string) error {
	a.log.Info("starting the pod again after the node shutdown", "pod", p.Key(), "podUID", p.UID, "why", why)
	a.recorder.Eventf(p, "", events.Normal, events.NodeShutdown, "Starting the pod again: %s", why)
	if err := a.workers.Rerun(p, cp); err != nil {
		return err
	}
	if m := a.cfg.Metrics; m != nil {
		// Only standalone pods start again: none is the cluster's.
		m.PodRestarted(true)
	}
	return nil
}

// shutdownTerminated says whether a checkpoint is a pod's whose
// termination a node shutdown began.
func shutdownTerminated(cp []byte) bool {
	if len(cp) == 0 {
		return false
	}
	_, reason, err := podworker.CheckpointTermination(cp)
	return err == nil && reason == podworker.TerminationNodeShutdown
}

// restartsShutdownPods says whether a pod a node shutdown terminated
// starts again now: in standalone mode, once the node no longer shuts
// down.
func (a *Agent) restartsShutdownPods() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.cfg.RestartShutdownPods && a.cfg.Store != nil && !a.shuttingDown
}
