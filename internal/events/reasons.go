package events

// Reason is an event's reason: one CamelCase word, as Kubernetes uses it
// ("Started", "BackOff"). Every reason podward emits is one of the constants
// below, so that a reason is written once and a typo does not compile.
// Event.Reason stays a plain string: it is what the API serves and the
// store keeps.
type Reason string

// Reasons of events about the node and a pod's admission.
const (
	// Scheduled: the agent accepted a pod and handed it to its pod worker.
	Scheduled Reason = "Scheduled"
	// FailedManifest: a static pod manifest could not be read, decoded or
	// validated; a node event, repeated on each rescan while it stays bad.
	FailedManifest Reason = "FailedManifest"
	// OutOfPods: the node already runs --max-pods pods, so it rejected a
	// new one (a warning; the pod is Failed with this reason). The
	// kubelet's admission reason (pkg/kubelet/lifecycle/predicate.go).
	OutOfPods Reason = "OutOfpods"
	// PodOSNotSupported: the node rejected a pod whose spec.os.name is
	// not its OS (a warning; the pod is Failed with this reason). The
	// kubelet's (pkg/kubelet/lifecycle/predicate.go).
	PodOSNotSupported Reason = "PodOSNotSupported"
	// PodOSSelectorNodeLabelDoesNotMatch: the node rejected a pod whose
	// kubernetes.io/os label is not its OS, as PodOSNotSupported. The
	// kubelet's (pkg/kubelet/lifecycle/predicate.go).
	PodOSSelectorNodeLabelDoesNotMatch Reason = "PodOSSelectorNodeLabelDoesNotMatch"
	// SysctlForbidden: the node rejected a pod that sets a sysctl it does
	// not allow (not safe, nor in --allowed-unsafe-sysctls, or of a
	// namespace the pod shares with the host), as PodOSNotSupported. The
	// kubelet's (pkg/kubelet/sysctl/allowlist.go).
	SysctlForbidden Reason = "SysctlForbidden"
	// FailedCheckpoint: a pod worker's checkpoint (or a pod's deletion)
	// could not be saved, a full state disk say: stopping its containers
	// goes on without it, starting them waits until it is saved. Once per
	// pod until a save succeeds; a node event while any pod's save fails.
	FailedCheckpoint Reason = "FailedCheckpoint"
	// CheckpointSaved: the agent's checkpoints are saved again (a node
	// event, after FailedCheckpoint).
	CheckpointSaved Reason = "CheckpointSaved"
	// NodeShutdown: the node shuts down, or its shutdown was cancelled (a
	// node event, in the kubelet's words); about a pod, the shutdown
	// terminates it, or starts it again once the shutdown is over.
	NodeShutdown Reason = "NodeShutdown"
	// Rebooted: the agent found the machine rebooted (a new boot ID), a
	// Warning node event as the kubelet's.
	Rebooted Reason = "Rebooted"
)

// Reasons of events about a pod's setup and its images.
const (
	// SuccessfulMountVolume: the pod's volumes were set up; one per volume.
	SuccessfulMountVolume Reason = "SuccessfulMountVolume"
	// FailedMount: setting up the pod's volumes failed; it is retried after
	// the crash-loop base delay.
	FailedMount Reason = "FailedMount"
	// Pulling: a pull of a container's image began (also the background
	// pre-pull of a defer container's image).
	Pulling Reason = "Pulling"
	// Pulled: a container's image was pulled, or found present when its pull
	// policy allows that.
	Pulled Reason = "Pulled"
	// ErrImageNeverPull: a container's image is not present and its pull
	// policy is Never.
	ErrImageNeverPull Reason = "ErrImageNeverPull"
)

// Reasons of events about a container's life.
const (
	// Created: a container instance was created (just before it starts).
	Created Reason = "Created"
	// Started: a container that is not a defer container started.
	Started Reason = "Started"
	// Failed: a container could not start, or its image could not be
	// pulled (the message says which).
	Failed Reason = "Failed"
	// BackOff: a container's restart, or its image's next pull, waits out a
	// backoff; once per wait.
	BackOff Reason = "BackOff"
	// Unhealthy: one attempt of a startup, readiness or liveness probe
	// failed.
	Unhealthy Reason = "Unhealthy"
	// ProbeWarning: one attempt of a probe succeeded with a warning (an
	// httpGet probe's redirect to another host, not followed), a warning
	// event as the kubelet's (pkg/kubelet/prober/prober.go).
	ProbeWarning Reason = "ProbeWarning"
	// FailedPostStartHook: a postStart hook failed; the container is killed
	// and its restart policy applies.
	FailedPostStartHook Reason = "FailedPostStartHook"
	// FailedPreStopHook: a preStop hook failed; the stop signal follows
	// anyway.
	FailedPreStopHook Reason = "FailedPreStopHook"
	// LogDropped: output of a container was lost because its log could
	// not be written (a full disk); the message says how many bytes, and a
	// marker line in the log shows where.
	LogDropped Reason = "LogDropped"
	// Killing: a container is being stopped (stop signal after its preStop
	// hook) or killed (SIGKILL); the message says why.
	Killing Reason = "Killing"
	// RestartAllContainers: a container exited with a code its
	// RestartAllContainers rule matches (KEP-5532): every container is
	// stopped and the pod starts over from its init containers, in place.
	RestartAllContainers Reason = "RestartAllContainers"
)

// Reasons of events about a pod's termination and its defer containers.
const (
	// Completed: the pod's containers finished as its restart policy
	// wants; the pod terminates on its own.
	Completed Reason = "Completed"
	// DeadlineExceeded: the pod was active for its activeDeadlineSeconds;
	// it is terminated and fails (a Normal event, as the kubelet's).
	DeadlineExceeded Reason = "DeadlineExceeded"
	// GracePeriodExceeded: the termination deadline came while containers
	// still ran (they are killed) or defer containers had not completed.
	GracePeriodExceeded Reason = "GracePeriodExceeded"
	// DeferStarted: a defer container started (the message says which of
	// how many).
	DeferStarted Reason = "DeferStarted"
	// DeferCompleted: a defer container exited with code 0.
	DeferCompleted Reason = "DeferCompleted"
	// DeferFailed: a defer container failed (retried while a retry fits in
	// the grace period), was killed at the deadline, or the defer containers
	// were given up because no retry fits.
	DeferFailed Reason = "DeferFailed"
	// DeferSkipped: the pod ends without running its defer containers
	// (grace period 0, or no regular container had started).
	DeferSkipped Reason = "DeferSkipped"
)

// SeriesReason says whether repeats of an event of reason r are counted in
// one event (Recorder.Record): its Count and last Time, as Kubernetes
// shows a repeated event ("x5 over 3m"), rather than kept one by one,
// where they would push the pod's other events out. LogDropped is: a
// container writing on a full disk has its output dropped again and again.
func SeriesReason(r Reason) bool {
	switch r {
	case LogDropped:
		return true
	default:
		return false
	}
}
