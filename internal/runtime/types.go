package runtime

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/runtime/exitstatus"
)

// ErrNotFound is returned for a container ID the runtime does not know.
var ErrNotFound = errors.New("container not found")

// ErrUnsupported wraps a reason why a runtime cannot run a pod as written
// (for example a container without a command on the process runtime). It is
// bad input, not a transient failure: retrying cannot help.
var ErrUnsupported = errors.New("not supported by this runtime")

// ErrContainerConfig wraps a reason why a container's configuration cannot
// be made now (an object its env references does not exist, or lacks the
// key): the container waits with reason CreateContainerConfigError, as the
// kubelet's, and its start is tried again later; it is no exit.
var ErrContainerConfig = errors.New("cannot make the container's configuration")

// ContainerConfigError is why a container's configuration cannot be made
// now, with the kubelet's message (`configmap "x" not found`, `couldn't
// find key k in ConfigMap ns/x`): the pod worker shows Message as the
// container's CreateContainerConfigError. It matches ErrContainerConfig
// and its cause (errors.Is, errors.As).
type ContainerConfigError struct {
	Message string
	Err     error // the cause; may be nil
}

func (e *ContainerConfigError) Error() string { return e.Message }

// Unwrap is ErrContainerConfig and the cause.
func (e *ContainerConfigError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrContainerConfig}
	}
	return []error{ErrContainerConfig, e.Err}
}

// ConfigError is a ContainerConfigError with the message of err, which it
// wraps.
func ConfigError(err error) error {
	return &ContainerConfigError{Message: err.Error(), Err: err}
}

// ConfigErrorf is a ContainerConfigError with a message of its own.
func ConfigErrorf(format string, args ...any) error {
	return &ContainerConfigError{Message: fmt.Sprintf(format, args...)}
}

// ExitReason is why a container instance ended, as Kubernetes reports it in
// ContainerStateTerminated.reason. It is package exitstatus's, which the
// process runtime's shim binary links without the Kubernetes types.
type ExitReason = exitstatus.Reason

// Exit reasons. Every runtime and the pod worker use these; none is spelt
// out elsewhere (see exitstatus for each one's meaning).
const (
	ReasonCompleted     = exitstatus.Completed
	ReasonError         = exitstatus.Error
	ReasonOOMKilled     = exitstatus.OOMKilled
	ReasonStartError    = exitstatus.StartError
	ReasonStatusUnknown = exitstatus.StatusUnknown
)

// Container is one started instance of a pod's container.
type Container struct {
	// ID is unique across every instance the runtime ever started.
	ID        string
	StartedAt time.Time
	// LogPath is the instance's log file in the CRI log format.
	LogPath string
}

// ExitStatus is how a container instance ended (exitstatus.Status).
type ExitStatus = exitstatus.Status

// Event tells the pod worker that a container instance changed state. Today
// the only change a runtime reports on its own is an exit.
type Event struct {
	PodUID    types.UID
	Container string // the container's name in the pod
	ID        string // the instance
	Exit      ExitStatus
}

// WarningReason says what a Warning is about. Its text is the reason of the
// pod's event.
type WarningReason string

// Warning reasons.
const (
	// WarningLogDropped: output of the instance was lost because its log
	// could not be written (a full disk); a marker line in the log shows
	// where, once the log could be written again.
	WarningLogDropped WarningReason = "LogDropped"
)

// Warning is something that went wrong with a container instance that its
// pod's owner should see (Warner).
type Warning struct {
	PodUID    types.UID
	Container string // the container's name in the pod
	ID        string // the instance
	Reason    WarningReason
	Message   string
}

// ContainerStatus is one instance as the runtime knows it, for an agent
// that re-attaches after a restart and rebuilds its view from the runtime.
type ContainerStatus struct {
	PodUID    types.UID
	Container string // the container's name in the pod
	Attempt   int    // the restart count it was started with
	ID        string
	StartedAt time.Time
	// Exit is nil while the instance runs.
	Exit *ExitStatus
	// LogPath is the instance's CRI log.
	LogPath string
}

// SortContainerStatuses sorts a pod's instances the way the runtimes'
// ListContainers return them: by container name, then attempt, then start
// time (zero, never started, first), then ID.
func SortContainerStatuses(list []ContainerStatus) {
	slices.SortFunc(list, func(a, b ContainerStatus) int {
		return cmp.Or(
			cmp.Compare(a.Container, b.Container),
			cmp.Compare(a.Attempt, b.Attempt),
			a.StartedAt.Compare(b.StartedAt),
			cmp.Compare(a.ID, b.ID),
		)
	})
}

// Objects is how a runtime reads what a pod references besides its spec,
// when it writes the pod's configMap, secret, downwardAPI and projected
// volumes and its containers' environment (envFrom, configMapKeyRef,
// secretKeyRef, the service links).
type Objects struct {
	// Getter reads the ConfigMaps and Secrets; nil: there are none, and a
	// pod that needs one waits for it as for one that does not exist.
	Getter objects.Getter
	// Tokens mints service account tokens; nil: nothing can (standalone),
	// and a pod with a serviceAccountToken source is refused.
	Tokens objects.Tokens
	// Services lists the cluster's Services, whose links the containers
	// see (podspec.ServiceEnv); nil: there are none (standalone), and no
	// container gets a service variable.
	Services objects.ServiceLister
}
