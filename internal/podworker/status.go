package podworker

import (
	"encoding/json"
	"fmt"
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

// snapshot renders the worker's state as a pod: a copy of the spec with its
// status and the defer container statuses annotation. Called by run only
// (or by its creator before run starts): it reads the owned state.
func (pw *podWorker) snapshot(now time.Time) *v1.Pod {
	pod := pw.pod.Pod.DeepCopy()
	obs := pw.observed()
	phase := pw.phase
	terminated := phase == Terminated
	st := v1.PodStatus{Phase: planner.Phase(pw.pod, obs, terminated), HostIP: pw.w.cfg.HostIP, PodIP: pw.w.cfg.HostIP}
	if ip := pw.podIP(); ip != "" {
		st.PodIP = ip
	}
	if st.HostIP != "" {
		st.HostIPs = []v1.HostIP{{IP: st.HostIP}}
		st.PodIPs = []v1.PodIP{{IP: st.PodIP}}
	}
	if !pw.startTime.IsZero() {
		t := metav1.NewTime(pw.startTime)
		st.StartTime = &t
	}
	if terminated && pw.termReason == TerminationDeadlineExceeded {
		// Failed once terminated, whatever the containers' exit codes;
		// until then the phase is the containers' and the reason waits,
		// as the kubelet's status manager holds both back together.
		st.Phase, st.Reason, st.Message = v1.PodFailed, reasonDeadlineExceeded, messageDeadlineExceeded
	}
	if st.Phase == v1.PodSucceeded || st.Phase == v1.PodFailed {
		st.PodIP, st.HostIP, st.PodIPs, st.HostIPs = "", "", nil, nil
	}

	initsDone := planner.InitsDone(pw.pod, obs)
	var deferStatuses []v1.ContainerStatus
	allReady := true
	for _, c := range pw.ctrs {
		cs := pw.containerStatus(c, initsDone, terminated)
		switch c.ref.Role {
		case model.RoleInit, model.RoleSidecar:
			st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
			if c.ref.Role == model.RoleSidecar && !cs.Ready {
				allReady = false
			}
		case model.RoleMain:
			st.ContainerStatuses = append(st.ContainerStatuses, cs)
			if !cs.Ready {
				allReady = false
			}
		case model.RoleDefer:
			deferStatuses = append(deferStatuses, cs)
		}
	}
	ready := allReady && phase == Syncing
	cond := func(t v1.PodConditionType, ok bool, reason string) {
		c := v1.PodCondition{Type: t, Status: v1.ConditionFalse, Reason: reason}
		if ok {
			c.Status, c.Reason = v1.ConditionTrue, ""
		}
		st.Conditions = append(st.Conditions, c)
	}
	cond(v1.PodReadyToStartContainers, pw.prepared && !terminated, "")
	cond(v1.PodInitialized, initsDone, "ContainersNotInitialized")
	cond(v1.PodReady, ready, "ContainersNotReady")
	cond(v1.ContainersReady, ready, "ContainersNotReady")
	cond(v1.PodScheduled, true, "")
	pod.Status = keepTransitionTimes(pw.lastPublished(), st, now)
	if pw.deleted && pw.term != nil {
		ts := metav1.NewTime(pw.term.Deadline)
		pod.DeletionTimestamp = &ts
		grace := int64(pw.term.Deadline.Sub(pw.term.RequestedAt) / time.Second)
		pod.DeletionGracePeriodSeconds = &grace
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

func (pw *podWorker) containerStatus(c *ctr, initsDone, terminated bool) v1.ContainerStatus {
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
	case c.image.reason != "" && c.obs.State != planner.Running && !terminated:
		// The next instance cannot start: its image did not come.
		if c.obs.State == planner.Exited {
			cs.LastTerminationState.Terminated = c.terminatedState()
		}
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: c.image.reason, Message: c.image.message}
		return cs
	}
	switch c.obs.State {
	case planner.Running:
		cs.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(c.obs.StartedAt)}
		// Without readiness probes (issue 4) a started container is ready,
		// as in Kubernetes; init containers are never ready.
		// Readiness goes false as soon as the pod terminates.
		cs.Ready = started && c.ref.Role != model.RoleInit && (spec.ReadinessProbe == nil || c.ready) && pw.phase == Syncing
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
		}
	default:
		reason := reasonContainerCreating
		switch {
		case c.ref.Role == model.RoleDefer && terminated:
			reason = reasonDeferSkipped
		case c.ref.Role == model.RoleDefer && (pw.term == nil || !pw.term.RunDefer):
			reason = reasonDeferPending
			if pw.term != nil {
				reason = reasonDeferSkipped
			}
		case c.ref.Role == model.RoleMain && !initsDone:
			reason = reasonPodInitializing
		case (c.ref.Role == model.RoleInit || c.ref.Role == model.RoleSidecar) && c.ref.Index > 0:
			reason = reasonPodInitializing
		}
		cs.State.Waiting = &v1.ContainerStateWaiting{Reason: reason}
	}
	return cs
}
