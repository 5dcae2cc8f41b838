package agent

import (
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
)

// DefaultMaxPods is how many pods a node runs at once unless told
// otherwise: the kubelet's --max-pods default.
const DefaultMaxPods = 110

// ErrRejected is matched (errors.Is) by every *RejectedError.
var ErrRejected = errors.New("pod rejected")

// RejectedError is a valid pod the node does not admit: it has no room for
// it (OutOfPods), it shuts down (NodeShutdownRejection), or the pod sets a
// sysctl it does not allow or is for another OS (podRejection). Reason and
// Message are the kubelet's for the same admission failure, which it reports
// as it reports every one (kubelet.go, rejectPod): the pod Failed, with that
// reason. In the pod API of serve the pod is recorded so (see Status); Sync
// returns the error, for its source to report. It matches ErrRejected.
type RejectedError struct {
	Reason  events.Reason
	Message string
}

func (e *RejectedError) Error() string { return string(e.Reason) + ": " + e.Message }

// Is makes errors.Is(err, ErrRejected) true.
func (e *RejectedError) Is(target error) bool { return target == ErrRejected }

// rejectedPrefix starts the status message of a rejected pod.
const rejectedPrefix = "Pod was rejected: "

// Status is the status the kubelet gives a pod it rejects (kubelet.go,
// rejectPod): Failed, the reason, and the message after "Pod was
// rejected: ".
func (e *RejectedError) Status(pod *v1.Pod) v1.PodStatus {
	return v1.PodStatus{
		Phase:    v1.PodFailed,
		Reason:   string(e.Reason),
		Message:  rejectedPrefix + e.Message,
		QOSClass: model.QOSClass(pod),
	}
}

// OutOfPods is the rejection of a pod when used of capacity pods are
// active: the kubelet's (pkg/kubelet/lifecycle/predicate.go), reason
// OutOfpods, message "Node didn't have enough resource: pods, requested: 1,
// used: 110, capacity: 110".
func OutOfPods(used, capacity int) *RejectedError {
	return &RejectedError{
		Reason:  events.OutOfPods,
		Message: fmt.Sprintf("Node didn't have enough resource: pods, requested: 1, used: %d, capacity: %d", used, capacity),
	}
}

// NodeShutdownRejection is the rejection of a pod while the node shuts
// down: the kubelet's node shutdown manager's (pkg/kubelet/nodeshutdown/
// nodeshutdown_manager.go, Admit), reason NodeShutdown.
func NodeShutdownRejection() *RejectedError {
	return &RejectedError{Reason: events.NodeShutdown, Message: "Pod was rejected as the node is shutting down."}
}

// The kubelet's messages of its OS checks (pkg/kubelet/lifecycle/
// predicate.go, predicateAdmitHandler.Admit).
const (
	osLabelMessage = "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
	osFieldMessage = "Failed to admit pod as the OS field doesn't match node OS"
)

// machineOS is the machine's OS, as the kubelet takes it (runtime.GOOS):
// the value of the Node's kubernetes.io/os label, and the only spec.os.name
// the node runs.
const machineOS = goruntime.GOOS

// podRejection is the rejection of the node's admission checks that
// depend on the pod alone, nil when they admit it. They are the kubelet's
// sysctl admit handler and its predicate handler's first checks
// (kubelet.go, NewMainKubelet; predicate.go, Admit), in its order:
//
//   - a sysctl the node does not allow (Config.Sysctls): reason
//     SysctlForbidden;
//   - a kubernetes.io/os label that is not the machine's OS (the kubelet
//     reads the pod's label, not its nodeSelector, whatever the name of
//     its rejectPodAdmissionBasedOnOSSelector says): reason
//     PodOSSelectorNodeLabelDoesNotMatch;
//   - a spec.os.name that is not the machine's OS: PodOSNotSupported.
//
// A pod they reject is recorded rejected as one beyond --max-pods, before
// the runtime is asked whether it could run it: nothing of it ever runs.
// It is pure and may be called without a.mu.
func (a *Agent) podRejection(pod *model.Pod) *RejectedError {
	if why := a.cfg.Sysctls.admit(pod); why != nil {
		return why
	}
	if os, ok := pod.Labels[v1.LabelOSStable]; ok && os != machineOS {
		return &RejectedError{Reason: events.PodOSSelectorNodeLabelDoesNotMatch, Message: osLabelMessage}
	}
	if pod.Spec.OS != nil && string(pod.Spec.OS.Name) != machineOS {
		return &RejectedError{Reason: events.PodOSNotSupported, Message: osFieldMessage}
	}
	return nil
}

// PodRejection is the rejection of pod by the node's admission checks
// that depend on the pod alone (see podRejection: its sysctls, its OS),
// nil when they admit it. Create records such a pod rejected; `podward
// run`, which starts nothing of a manifest it does not admit whole, asks
// first.
func (a *Agent) PodRejection(pod *model.Pod) error {
	if why := a.podRejection(pod); why != nil {
		return why
	}
	return nil
}

// admitLocked is nil when the node admits pod now, else the rejection.
// The checks of the pod alone come first (podRejection), then the room,
// then the shutdown, in the order of the kubelet's admit handlers
// (kubelet.go, NewMainKubelet: the predicate handler — the OS, then the
// resources — before the shutdown manager's); the first that fails is
// the pod's rejection. a.mu must be held.
func (a *Agent) admitLocked(pod *model.Pod) *RejectedError {
	if why := a.podRejection(pod); why != nil {
		return why
	}
	if why := a.roomLocked(); why != nil {
		return why
	}
	if a.shuttingDown {
		return NodeShutdownRejection()
	}
	return nil
}

// roomLocked is nil when the node can take one more pod, else the refusal.
// It counts the active pods as the kubelet does (GetActivePods): those of
// the pod API that are not terminated. A pod that completed and one that
// was rejected do not count, one that is still terminating does; a
// force-deleted pod whose containers are still being stopped does not (it
// is gone from the pod API, as from the kubelet's pod manager). a.mu must
// be held.
func (a *Agent) roomLocked() *RejectedError {
	capacity := a.cfg.MaxPods
	if capacity <= 0 {
		capacity = DefaultMaxPods
	}
	used := 0
	for uid, e := range a.pods {
		if !isRejected(e.pod) && !a.workers.IsPodKnownTerminated(uid) {
			used++
		}
	}
	if used < capacity {
		return nil
	}
	return OutOfPods(used, capacity)
}

// isRejected says whether the pod was rejected at admission: the agent
// recorded it with the status of its rejection (a RejectedError's reason),
// and nothing of it ever ran. Such a pod has no worker, is Failed for good
// — also after a reboot, as a pod the kubelet rejected stays Failed in the
// API server — and is removed at once when deleted. The agent clears the
// status of every pod it creates, so a manifest cannot make a pod look
// rejected; the store keeps the status, so a rejected pod stays rejected
// across a restart. (A pod a node shutdown terminated is Failed with
// reason Terminated, not NodeShutdown.)
func isRejected(p *model.Pod) bool {
	if p.Status.Phase != v1.PodFailed {
		return false
	}
	switch events.Reason(p.Status.Reason) {
	case events.OutOfPods, events.NodeShutdown, events.PodOSNotSupported, events.PodOSSelectorNodeLabelDoesNotMatch, events.SysctlForbidden:
		return true
	}
	return false
}

// reject records that pod was rejected, in its own status (the agent owns
// it: no worker will).
func reject(pod *model.Pod, why *RejectedError) {
	pod.Status = why.Status(pod.Pod)
}

// recordRejection reports a rejected pod as the kubelet does: a warning
// event with the reason and the message (without the status's "Pod was
// rejected: ").
func (a *Agent) recordRejection(pod *model.Pod) {
	a.log.Info("rejected a pod at admission", "pod", pod.Key(), "podUID", pod.UID, "reason", pod.Status.Reason)
	msg := strings.TrimPrefix(pod.Status.Message, rejectedPrefix)
	a.recorder.Eventf(pod, "", events.Warning, events.Reason(pod.Status.Reason), "%s", msg)
}

// removeRejected removes the rejected pod of e at once, for a delete: there
// is nothing to stop nor wait for. Its last status is its rejection, with
// the deletion. A pod another delete is removing is not found.
func (a *Agent) removeRejected(e *entry) error {
	uid := e.pod.UID
	a.mu.Lock()
	if a.pods[uid] != e || e.reaping {
		a.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	e.reaping = true
	last := e.pod.Pod.DeepCopy()
	a.mu.Unlock()
	now, zero := metav1.NewTime(a.cfg.Clock.Now()), int64(0)
	last.DeletionTimestamp, last.DeletionGracePeriodSeconds = &now, &zero
	a.remove(uid, last)
	return nil
}
