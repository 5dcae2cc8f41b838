package agent

import (
	"errors"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
)

// ErrStateNotSaved is wrapped by StateError while some of the agent's state
// could not be saved.
var ErrStateNotSaved = errors.New("state not saved")

// stateKind is what of a pod's state a failed save was of.
type stateKind int

const (
	stateCheckpoint stateKind = iota + 1 // its worker's checkpoint
	stateDeletion                        // its deletion
)

func (k stateKind) String() string {
	switch k {
	case stateCheckpoint:
		return "checkpoint"
	case stateDeletion:
		return "deletion"
	default:
		return fmt.Sprintf("stateKind(%d)", int(k))
	}
}

type stateKey struct {
	uid  types.UID
	kind stateKind
}

// stateHealth keeps the saves of pods' state that failed and did not
// succeed since, a full state disk say. The agent reports them (StateError)
// and records a node event when the first one fails and when the last one
// is saved again. Its lock is never held across I/O or an event.
type stateHealth struct {
	recorder *events.Recorder
	node     string

	mu      sync.Mutex
	failing map[stateKey]error
	last    error // the latest failure
	// removed are pods being removed from the store: their checkpoints
	// are not saved any more (a worker retrying its last one would bring
	// back what the store removed).
	removed map[types.UID]bool
}

func newStateHealth(r *events.Recorder, node string) *stateHealth {
	return &stateHealth{recorder: r, node: node, failing: map[stateKey]error{}, removed: map[types.UID]bool{}}
}

// removing marks uid as being removed from the store, before it is.
func (h *stateHealth) removing(uid types.UID) {
	h.mu.Lock()
	h.removed[uid] = true
	h.mu.Unlock()
}

// isRemoved says whether uid is being removed.
func (h *stateHealth) isRemoved(uid types.UID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.removed[uid]
}

// saved records the result of a save of uid's state of kind k: err nil for
// a success.
func (h *stateHealth) saved(uid types.UID, k stateKind, err error) {
	key := stateKey{uid, k}
	h.mu.Lock()
	before := len(h.failing)
	if err != nil {
		h.failing[key] = err
		h.last = err
	} else {
		delete(h.failing, key)
	}
	after := len(h.failing)
	h.mu.Unlock()
	switch {
	case before == 0 && after > 0:
		h.recorder.NodeEventf(h.node, events.Warning, events.FailedCheckpoint,
			"Cannot save the state of pod %s (%s): %v; containers are still stopped when asked, new ones wait until it is saved", uid, k, err)
	case before > 0 && after == 0:
		h.recorder.NodeEventf(h.node, events.Normal, events.CheckpointSaved, "Nothing of the pods' state waits to be saved any more")
	}
}

// forget drops what is known of a pod that is gone and whose worker has
// returned: its state is no more to be saved.
func (h *stateHealth) forget(uid types.UID) {
	h.mu.Lock()
	before := len(h.failing)
	delete(h.failing, stateKey{uid, stateCheckpoint})
	delete(h.failing, stateKey{uid, stateDeletion})
	delete(h.removed, uid)
	after := len(h.failing)
	h.mu.Unlock()
	if before > 0 && after == 0 {
		h.recorder.NodeEventf(h.node, events.Normal, events.CheckpointSaved, "Nothing of the pods' state waits to be saved any more")
	}
}

// err is nil while every save succeeded, else an error wrapping
// ErrStateNotSaved that says how many pods' saves fail, and the latest
// failure.
func (h *stateHealth) err() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.failing) == 0 {
		return nil
	}
	pods := map[types.UID]bool{}
	for k := range h.failing {
		pods[k.uid] = true
	}
	return fmt.Errorf("%w: the state of %d pod(s) cannot be saved: %w", ErrStateNotSaved, len(pods), h.last)
}

// StateError is nil while the agent saves the state it needs to resume
// after a restart (its pods' checkpoints and deletions); otherwise it says
// what cannot be saved and why, wrapping ErrStateNotSaved. Meanwhile the
// agent still stops containers but does not start new ones. The agent's
// health check and the Node's CheckpointFailing condition report it. An
// agent without a store always answers nil.
func (a *Agent) StateError() error { return a.health.err() }
