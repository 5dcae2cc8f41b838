package podworker

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
)

// Waiting reasons podward uses besides Kubernetes' own.
const (
	reasonPodInitializing   = "PodInitializing"
	reasonContainerCreating = "ContainerCreating"
	reasonCrashLoopBackOff  = "CrashLoopBackOff"
	// reasonCreateContainerConfigError: the container's configuration
	// cannot be made (a ConfigMap or Secret it needs is missing).
	reasonCreateContainerConfigError = "CreateContainerConfigError"
	// reasonDeferPending: a defer container waits for the pod to end.
	reasonDeferPending = "WaitingForTermination"
	// reasonDeferSkipped: the pod ended without running its defer
	// containers (grace period 0, or no regular container started).
	reasonDeferSkipped = "Skipped"
)

// The pod's status reason and message once the active deadline ended it:
// the kubelet's words (pkg/kubelet/active_deadline.go).
const (
	reasonDeadlineExceeded  = "DeadlineExceeded"
	messageDeadlineExceeded = "Pod was active on the node longer than the specified deadline"
)

// The pod's status reason and message once a node shutdown ended it: the
// kubelet's words (pkg/kubelet/nodeshutdown/nodeshutdown_manager.go).
const (
	reasonNodeShutdown  = "Terminated"
	messageNodeShutdown = "Pod was terminated in response to imminent node shutdown."
)

// snapshot renders the worker's state as a pod: a copy of the spec with its
// status and the defer container statuses annotation. Called by run only
// (or by its creator before run starts): it reads the owned state.
func (pw *podWorker) snapshot(now time.Time) *v1.Pod {
	pod := pw.pod.Pod.DeepCopy()
	obs := pw.ctrs.observed()
	phase := pw.phase
	terminated := phase == Terminated
	st := v1.PodStatus{Phase: planner.Phase(pw.pod, obs, terminated)}
	pw.addresses(&st)
	if !pw.startTime.IsZero() {
		t := metav1.NewTime(pw.startTime)
		st.StartTime = &t
	}
	if terminated {
		pw.ending.endedBy(&st)
	}
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		st.PodIP, st.HostIP, st.PodIPs, st.HostIPs = "", "", nil, nil
	}

	var deferStatuses []v1.ContainerStatus
	var unready, incomplete []string
	for _, c := range pw.ctrs.list {
		cs := pw.containerStatus(c, terminated)
		switch c.ref.Role {
		case model.RoleInit:
			st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
			if !cs.Ready {
				incomplete = append(incomplete, c.ref.Name)
			}
		case model.RoleSidecar:
			st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
			if !cs.Ready {
				unready = append(unready, c.ref.Name)
			}
			if !c.obs.StartedOnce && !*cs.Started {
				incomplete = append(incomplete, c.ref.Name)
			}
		case model.RoleMain:
			st.ContainerStatuses = append(st.ContainerStatuses, cs)
			if !cs.Ready {
				unready = append(unready, c.ref.Name)
			}
		case model.RoleDefer:
			deferStatuses = append(deferStatuses, cs)
		case model.RoleEphemeral:
			st.EphemeralContainerStatuses = append(st.EphemeralContainerStatuses, cs)
		}
	}
	others := model.OthersConditions(pw.pod.Status.Conditions)
	st.Conditions = pw.conditions(st.Phase, planner.InitsDone(pw.pod, obs) || pw.ctrs.initializedBeforeRestartAll(), unready, incomplete, others)
	st.QOSClass = model.QOSClass(pw.pod.Pod)
	// The generation of the spec the status is of (KEP-5067, GA in
	// Kubernetes 1.35: the kubelet's status manager sets it to the pod's
	// metadata.generation, pkg/kubelet/status/status_manager.go).
	st.ObservedGeneration = pw.pod.Generation
	pod.Status = keepTransitionTimes(pw.lastPublished(), st, now)
	pod.Status.Conditions = withOthers(others, pod.Status.Conditions)
	if ts, grace := pw.ending.deletion(); ts != nil {
		pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = ts, grace
	}

	if len(deferStatuses) > 0 {
		if b, err := json.Marshal(deferStatuses); err == nil {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[model.DeferContainerStatusesAnnotation] = string(b)
		}
	}
	return pod
}

// Reasons of the pod's conditions, as the kubelet writes them
// (pkg/kubelet/status/generate.go).
const (
	reasonPodCompleted             = "PodCompleted"
	reasonPodFailed                = "PodFailed"
	reasonContainersNotReady       = "ContainersNotReady"
	reasonContainersNotInitialized = "ContainersNotInitialized"
	reasonReadinessGatesNotReady   = "ReadinessGatesNotReady"
)

// conditions are the pod's conditions as the kubelet generates them
// (pkg/kubelet/status/generate.go), from the pod's phase, whether it is
// initialized, the sidecars and regular containers that are not ready, the
// init containers (and sidecars) that have not completed (started), and
// the conditions others set (model.OthersConditions of the pod the source
// gave: its readiness gates'):
//
//   - Initialized is True once initialized, with reason PodCompleted once
//     the pod Succeeded; else False, ContainersNotInitialized, "containers
//     with incomplete status: [...]";
//   - ContainersReady is False with reason PodCompleted or PodFailed once
//     the phase is terminal; else True when every regular container and
//     sidecar is ready and the pod has not begun terminating (podward's
//     difference: the kubelet keeps it until the containers stop), else
//     False, ContainersNotReady, "containers with unready status: [...]";
//   - Ready is ContainersReady's, then its readiness gates' (podReady).
//
// They are the node's own: the caller puts others' beside them
// (withOthers).
func (pw *podWorker) conditions(phase v1.PodPhase, initsDone bool, unready, incomplete []string, others []v1.PodCondition) []v1.PodCondition {
	initialized := v1.PodCondition{Type: v1.PodInitialized, Status: v1.ConditionTrue}
	switch {
	case phase == v1.PodSucceeded:
		initialized.Reason = reasonPodCompleted
	case !initsDone:
		initialized.Status, initialized.Reason = v1.ConditionFalse, reasonContainersNotInitialized
		initialized.Message = fmt.Sprintf("containers with incomplete status: %s", incomplete)
	}
	ready := v1.PodCondition{Type: v1.ContainersReady, Status: v1.ConditionTrue}
	switch {
	case phase == v1.PodSucceeded:
		ready.Status, ready.Reason = v1.ConditionFalse, reasonPodCompleted
	case phase == v1.PodFailed:
		ready.Status, ready.Reason = v1.ConditionFalse, reasonPodFailed
	case len(unready) > 0 || pw.phase != Syncing:
		ready.Status, ready.Reason = v1.ConditionFalse, reasonContainersNotReady
		if len(unready) > 0 {
			ready.Message = fmt.Sprintf("containers with unready status: %s", unready)
		}
	}
	readyToStart := v1.ConditionFalse
	if pw.setup.prepared && pw.phase != Terminated {
		readyToStart = v1.ConditionTrue
	}
	conds := []v1.PodCondition{{Type: v1.PodReadyToStartContainers, Status: readyToStart}, initialized}
	// The gates are looked up among the conditions generated so far, as
	// the kubelet does (kubelet_pods.go, generateAPIPodStatus): others',
	// then these.
	conds = append(conds,
		podReady(pw.pod.Spec.ReadinessGates, ready, append(slices.Clip(others), conds...)),
		ready,
		v1.PodCondition{Type: v1.PodScheduled, Status: v1.ConditionTrue})
	if planner.CouldRestartAll(pw.pod) {
		conds = append(conds, pw.allContainersRestarting(phase))
	}
	if pw.phase == Terminated && pw.ending.reason == TerminationNodeShutdown {
		conds = append(conds, v1.PodCondition{
			Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: v1.PodReasonTerminationByKubelet, Message: messageNodeShutdown,
		})
	}
	// Each condition observes the pod's generation, as the kubelet 1.37
	// generates them (pkg/kubelet/status/generate.go,
	// CalculatePodConditionObservedGeneration); the resize conditions
	// observe their own (allocState.conditions).
	for i := range conds {
		conds[i].ObservedGeneration = pw.pod.Generation
	}
	return append(conds, pw.alloc.conditions()...)
}

// podReady is the Ready condition as the kubelet generates it
// (generate.go, GeneratePodReadyCondition): ContainersReady's status,
// reason and message while it is not True; then, while the condition of a
// readiness gate is missing from conds or not True, False with reason
// ReadinessGatesNotReady and a message per such gate, joined with ", ";
// else True.
func podReady(gates []v1.PodReadinessGate, containersReady v1.PodCondition, conds []v1.PodCondition) v1.PodCondition {
	ready := v1.PodCondition{Type: v1.PodReady, Status: containersReady.Status, Reason: containersReady.Reason, Message: containersReady.Message}
	if containersReady.Status != v1.ConditionTrue {
		return ready
	}
	var unready []string
	for _, g := range gates {
		i := slices.IndexFunc(conds, func(c v1.PodCondition) bool { return c.Type == g.ConditionType })
		switch {
		case i < 0:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", g.ConditionType))
		case conds[i].Status != v1.ConditionTrue:
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", g.ConditionType, conds[i].Status))
		}
	}
	if len(unready) > 0 {
		ready.Status, ready.Reason, ready.Message = v1.ConditionFalse, reasonReadinessGatesNotReady, strings.Join(unready, ", ")
	}
	return ready
}

// withOthers are the pod's conditions: others' (the conditions the node
// does not own, as its source gave them: readiness gates', untouched),
// then the node's own, as the kubelet lists them (generateAPIPodStatus).
// One of others' of a type the node generates too (DisruptionTarget, which
// it shares) gives way to the node's.
func withOthers(others, own []v1.PodCondition) []v1.PodCondition {
	if len(others) == 0 {
		return own
	}
	out := make([]v1.PodCondition, 0, len(others)+len(own))
	for _, c := range others {
		if !slices.ContainsFunc(own, func(o v1.PodCondition) bool { return o.Type == c.Type }) {
			out = append(out, c)
		}
	}
	return append(out, own...)
}

// Reason and message of a True AllContainersRestarting condition, as the
// kubelet writes them (pkg/kubelet/status/generate.go,
// GenerateAllContainersRestartingCondition).
const (
	reasonRestartAllContainersStarted  = "RestartAllContainersStarted"
	messageRestartAllContainersStarted = "container exited with restart policy rule"
)

// allContainersRestarting is the AllContainersRestarting condition of a
// pod that has a RestartAllContainers rule (KEP-5532): True from the exit
// that triggered a restart of all containers until they are reset, False
// otherwise, with reason PodCompleted or PodFailed once the phase is
// terminal.
func (pw *podWorker) allContainersRestarting(phase v1.PodPhase) v1.PodCondition {
	c := v1.PodCondition{Type: v1.AllContainersRestarting, Status: v1.ConditionFalse}
	switch {
	case phase == v1.PodSucceeded:
		c.Reason = reasonPodCompleted
	case phase == v1.PodFailed:
		c.Reason = reasonPodFailed
	case pw.restartAll != nil:
		c.Status, c.Reason, c.Message = v1.ConditionTrue, reasonRestartAllContainersStarted, messageRestartAllContainersStarted
	}
	return c
}

// lastPublished is the pod the goroutine last published, nil before the
// first.
func (pw *podWorker) lastPublished() *v1.Pod {
	if p := pw.published(); p != nil {
		return p.pod
	}
	return nil
}

// keepTransitionTimes sets each condition's lastTransitionTime: kept from
// the previous status when the condition did not change, now otherwise.
func keepTransitionTimes(prev *v1.Pod, st v1.PodStatus, now time.Time) v1.PodStatus {
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.LastTransitionTime = metav1.NewTime(now)
		if prev == nil {
			continue
		}
		for _, p := range prev.Status.Conditions {
			if p.Type == c.Type && p.Status == c.Status {
				c.LastTransitionTime = p.LastTransitionTime
			}
		}
	}
	return st
}

func (c *ctr) terminatedState() *v1.ContainerStateTerminated {
	if c.obs.State != planner.Exited {
		return nil
	}
	return &v1.ContainerStateTerminated{
		ExitCode:    c.exit.ExitCode,
		Reason:      string(c.exit.Reason),
		Message:     c.exit.Message,
		StartedAt:   metav1.NewTime(c.obs.StartedAt),
		FinishedAt:  metav1.NewTime(c.obs.FinishedAt),
		ContainerID: containerID(c.id),
	}
}

func containerID(id string) string {
	if id == "" {
		return ""
	}
	return "podward://" + id
}

// containerStatus is a container's status as the kubelet reports it
// (kubelet_pods.go, convertToAPIContainerStatuses, and the prober manager's
// UpdatePodStatus for the ready flags); terminated says the pod is.
func (pw *podWorker) containerStatus(c *ctr, terminated bool) v1.ContainerStatus {
	spec := pw.pod.Container(c.ref)
	cs := v1.ContainerStatus{
		Name:         c.ref.Name,
		Image:        spec.Image,
		ImageID:      c.image.ref,
		ContainerID:  containerID(c.id),
		RestartCount: int32(c.obs.Restarts),
	}
	started := c.obs.State == planner.Running && c.obs.Started
	cs.Started = &started
	if c.last != nil {
		cs.LastTerminationState.Terminated = c.last
	}
	switch {
	case c.configErr != "" && c.obs.State != planner.Running && !terminated:
		// The next instance cannot start: its configuration cannot be made.
		if c.obs.State == planner.Exited {
			cs.LastTerminationState.Terminated = c.terminatedState()
		}
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reasonCreateContainerConfigError, Message: c.configErr}
		return cs
	case c.image.reason != "" && c.obs.State != planner.Running && !terminated:
		// The next instance cannot start: its image did not come.
		if c.obs.State == planner.Exited {
			cs.LastTerminationState.Terminated = c.terminatedState()
		}
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: c.image.reason, Message: c.image.message}
		return cs
	}
	state := c.obs.State
	if c.obs.RestartedAll {
		// Reset by a restart of all containers: waiting for its next
		// instance, the last one kept as lastState.
		state = planner.Waiting
		cs.LastTerminationState.Terminated = c.terminatedState()
	}
	if resizable(c.ref.Role) {
		cs.AllocatedResources = allocatedResources(pw.alloc.pod.Container(c.ref))
	}
	switch state {
	case planner.Running:
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(c.obs.StartedAt)}
		if resizable(c.ref.Role) {
			cs.Resources = appliedResources(c.applied)
		}
		// Without readiness probes (issue 4) a started container is ready,
		// as in Kubernetes; init containers are never ready.
		// Readiness goes false as soon as the pod terminates.
		// So does it for a restart of all containers, which stops them
		// (KEP-5532: Ready and ContainersReady turn False).
		// An ephemeral container is never ready: the kubelet's prober
		// manager sets the flag of regular and init containers only.
		cs.Ready = started && c.ref.Role != model.RoleInit && c.ref.Role != model.RoleEphemeral && (spec.ReadinessProbe == nil || c.ready) && pw.phase == Syncing && pw.restartAll == nil
	case planner.Exited:
		if _, ok := pw.backoffs[c.ref.Name]; ok && !terminated {
			cs.LastTerminationState.Terminated = c.terminatedState()
			cs.State.Waiting = &v1.ContainerStateWaiting{
				Reason: reasonCrashLoopBackOff,
				Message: fmt.Sprintf("back-off %s restarting failed container=%s pod=%s_%s(%s)",
					pw.w.cfg.Planner.Delay(c.obs.BackoffSteps), c.ref.Name, pw.pod.Name, pw.pod.Namespace, pw.pod.UID),
			}
		} else {
			cs.State.Terminated = c.terminatedState()
			// A completed init container is ready (the kubelet's prober
			// manager, UpdatePodStatus), also once the pod terminated.
			cs.Ready = c.ref.Role == model.RoleInit && c.obs.ExitCode == 0
		}
	default:
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: pw.waitingReason(c, terminated)}
	}
	return cs
}

// waitingReason is the reason of a container that waits for its first or
// next instance without a reason of its own. The kubelet's default waiting
// state: PodInitializing in a pod with init containers, ContainerCreating
// otherwise, until a start failure gives a reason of its own. A defer
// container next in line is being created; one not (yet) in line is
// pending, or skipped once the pod terminates without running it.
func (pw *podWorker) waitingReason(c *ctr, terminated bool) string {
	reason := reasonContainerCreating
	if len(pw.pod.Spec.InitContainers) > 0 && c.ref.Role != model.RoleDefer {
		reason = reasonPodInitializing
	}
	switch {
	case c.ref.Role == model.RoleDefer && terminated:
		reason = reasonDeferSkipped
	case c.ref.Role == model.RoleDefer && (pw.ending.term == nil || !pw.ending.term.RunDefer):
		reason = reasonDeferPending
		if pw.ending.term != nil {
			reason = reasonDeferSkipped
		}
	}
	return reason
}

// addresses fills the status's hostIP(s), the node's, and podIP(s): the
// pod's own addresses when the runtime gave it a network of its own (the
// primary first), the node's when it shares the host's network (always on
// the process runtime; hostNetwork pods on CRI), as the kubelet reports a
// host-network pod's. HostIP is never empty (New defaults it).
func (pw *podWorker) addresses(st *v1.PodStatus) {
	host := pw.w.cfg.HostIP
	st.HostIP = host
	st.HostIPs = []v1.HostIP{{IP: host}}
	ips := pw.podIPs()
	if len(ips) == 0 {
		ips = []string{host}
	}
	st.PodIP = ips[0]
	for _, ip := range ips {
		st.PodIPs = append(st.PodIPs, v1.PodIP{IP: ip})
	}
}
