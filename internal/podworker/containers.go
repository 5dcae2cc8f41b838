package podworker

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
)

// containers is what the pod's goroutine knows of the pod's containers:
// each one's state (ctr), in model.Pod.Containers order, and by name.
// Owned by run (and by newPodWorker, Restore and Rerun before run starts).
// Its invariant: byName indexes list, and a container, once known, stays
// (add, take).
type containers struct {
	list   []*ctr
	byName map[string]*ctr
}

func newContainers(pod *model.Pod) containers {
	cs := containers{byName: map[string]*ctr{}}
	for _, ref := range pod.Containers() {
		cs.add(ref)
	}
	return cs
}

// add makes a container known, Waiting, so that the planner starts it.
func (cs *containers) add(ref model.ContainerRef) {
	c := &ctr{ref: ref, obs: planner.Observed{State: planner.Waiting}}
	cs.list = append(cs.list, c)
	cs.byName[ref.Name] = c
}

// take takes the containers of the pod of an update: its spec does not
// change but for the ephemeral containers added to it, each of which is
// added (start rule 8). The list may come in another order (a patch does
// not keep it), so every container's ref is taken again from the new pod.
func (cs *containers) take(pod *model.Pod) {
	for _, ref := range pod.Containers() {
		if c := cs.byName[ref.Name]; c != nil {
			c.ref = ref
			continue
		}
		cs.add(ref)
	}
}

// observed is what the planner is told of each container, by name.
func (cs *containers) observed() map[string]planner.Observed {
	m := make(map[string]planner.Observed, len(cs.list))
	for _, c := range cs.list {
		m[c.ref.Name] = c.obs
	}
	return m
}

// census counts the containers whose latest instance runs, or has exited.
func (cs *containers) census() (running, exited int) {
	for _, c := range cs.list {
		switch c.obs.State {
		case planner.Running:
			running++
		case planner.Exited:
			exited++
		}
	}
	return running, exited
}

// notReady makes every container unready (the pod begins terminating).
func (cs *containers) notReady() {
	for _, c := range cs.list {
		c.ready = false
	}
}

// cutPreStopHooks cuts off the preStop hooks that still run.
func (cs *containers) cutPreStopHooks() {
	for _, c := range cs.list {
		if c.preStopCut != nil {
			c.preStopCut(errHookTimeUp)
			c.preStopCut = nil
		}
	}
}

// initializedBeforeRestartAll says whether the pod was initialized before a
// restart of all containers reset it: a regular container had started.
// The kubelet keeps the Initialized condition True through such a restart
// (generate.go, GeneratePodInitializedCondition: a pod once initialized is
// not uninitialized), although its init containers run again.
func (cs *containers) initializedBeforeRestartAll() bool {
	for _, c := range cs.list {
		if c.ref.Role == model.RoleMain && c.obs.RestartedAll && c.obs.StartedOnce {
			return true
		}
	}
	return false
}

// ctr is what the worker knows of one container.
type ctr struct {
	ref  model.ContainerRef
	obs  planner.Observed
	id   string
	exit runtime.ExitStatus // of the latest instance, once it exited
	// last is how the previous instance ended (Kubernetes' lastState).
	last *v1.ContainerStateTerminated
	// backoffAnnounced is the end of the backoff the BackOff event was
	// emitted for, so that one wait gives one event.
	backoffAnnounced time.Time
	// pending is a start in flight, checkpointed before it happens.
	pending *pendingStart
	// hookCancel cuts off the running postStart hook.
	hookCancel context.CancelFunc
	// preStopCut cuts off the running preStop hook, after which the stop
	// signal goes out at once (errHookTimeUp: the deadline passed).
	preStopCut context.CancelCauseFunc
	// ready is the readiness probe's verdict (containers with one).
	ready bool
	// image is what the last pulls of its image gave.
	image imageState
	// configErr is the message of its last start's configuration error
	// (CreateContainerConfigError), "" when that start did not fail so.
	configErr string
	// applied is the resources its running instance has (the kubelet's
	// actuated resources: what the node had allocated to it when it
	// started, or a resize applied since); checkpointed; nil when unknown
	// (resumed from an earlier agent's checkpoint) or not started.
	applied *v1.ResourceRequirements
}

// pendingStart is a start that was decided and may or may not have
// happened: its attempt and the backoff steps of the new instance.
type pendingStart struct {
	attempt      int
	backoffSteps int
}

// exited records that the tracked instance exited with exit: it is not
// ready, its hooks are cut off, and nothing of a start or a stop is left
// in progress. It reports whether the instance had been killed.
func (c *ctr) exited(exit runtime.ExitStatus) (killed bool) {
	killed = c.obs.Killed
	c.ready = false
	c.obs.KillAt = time.Time{}
	if c.hookCancel != nil {
		c.hookCancel()
		c.hookCancel = nil
	}
	if c.preStopCut != nil {
		c.preStopCut(nil)
		c.preStopCut = nil
	}
	c.obs.State = planner.Exited
	c.obs.FinishedAt = exit.FinishedAt
	c.obs.ExitCode = exit.ExitCode
	c.obs.Started = false
	c.obs.StopRequestedAt = time.Time{}
	c.obs.SignalledAt = time.Time{}
	c.obs.Killed = false
	c.exit = exit
	return killed
}
