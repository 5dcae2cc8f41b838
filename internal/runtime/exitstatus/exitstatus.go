package exitstatus

import "time"

// Reason is why a container instance ended, as Kubernetes reports it in
// ContainerStateTerminated.reason.
type Reason string

// Exit reasons. Every runtime and the pod worker use these (as
// runtime.Reason*); none is spelt out elsewhere.
const (
	// Completed: the process exited 0.
	Completed Reason = "Completed"
	// Error: the process exited non-zero or was killed by a signal.
	Error Reason = "Error"
	// OOMKilled: the kernel's OOM killer ended it.
	OOMKilled Reason = "OOMKilled"
	// StartError: the container never ran its command (exit code 128).
	StartError Reason = "StartError"
	// StatusUnknown: the instance vanished while it ran (its shim died,
	// the runtime lost it, the agent could not find it after a restart),
	// so its exit status is lost; exit code 137, as the kubelet reports
	// it.
	StatusUnknown Reason = "ContainerStatusUnknown"
)

// Status is how a container instance ended.
type Status struct {
	// ExitCode is the process exit code, or 128+signal when a signal
	// killed it, as a container runtime reports it.
	ExitCode   int32
	Reason     Reason
	Message    string
	FinishedAt time.Time
}
