package podspec

import (
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/exitstatus"
)

// The kubelet's limits on termination messages (pkg/kubelet/container,
// runtime.go), which the rule itself applies (exitstatus).
const (
	MaxTerminationMessageFileBytes = exitstatus.MaxTerminationMessageFileBytes
	MaxPodTerminationMessageBytes  = exitstatus.MaxPodTerminationMessageBytes
	MaxTerminationMessageLogBytes  = exitstatus.MaxTerminationMessageLogBytes
	MaxTerminationMessageLogLines  = exitstatus.MaxTerminationMessageLogLines
)

// TerminationMessagePath is where in its container c's termination-message
// file is mounted: terminationMessagePath made absolute and clean, as a
// volume's mountPath; "" when c has none (model.Default gives every
// container /dev/termination-log, as the API server does, so "" only comes
// from a pod that was not defaulted: like the kubelet, no file then).
func TerminationMessagePath(c *v1.Container) string {
	if c.TerminationMessagePath == "" {
		return ""
	}
	return filepath.Join("/", c.TerminationMessagePath)
}

// TerminationMessageLimit is one container's share of the pod's message
// budget: MaxPodTerminationMessageBytes split evenly, as the kubelet's
// status manager splits it (status_manager.go, normalizeStatus). Defer
// containers count as containers of the pod: their statuses are published
// beside the others.
func TerminationMessageLimit(pod *model.Pod) int {
	n := len(pod.Spec.InitContainers) + len(pod.Spec.Containers) + len(pod.Defer)
	return MaxPodTerminationMessageBytes / max(n, 1)
}

// TerminationMessage is how the message of a container instance is found
// once it exited (its Message applies the kubelet's rule). It lives in
// package exitstatus, which the process runtime's shim links without the
// Kubernetes types; what a pod spec says of it is here.
type TerminationMessage = exitstatus.TerminationMessage

// NewTerminationMessage is the TerminationMessage of an instance of
// container c of pod whose file on the host is file ("" for none).
func NewTerminationMessage(pod *model.Pod, c *v1.Container, file string) TerminationMessage {
	return TerminationMessage{
		File:           file,
		FallbackToLogs: c.TerminationMessagePolicy == v1.TerminationMessageFallbackToLogsOnError,
		Limit:          TerminationMessageLimit(pod),
	}
}
