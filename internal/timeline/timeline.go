package timeline

import (
	"fmt"
	"time"
)

// Role is what a container is to its pod, in the order its kind starts.
type Role int

// Roles start at one so that the zero value is never a valid role.
const (
	RoleInit Role = iota + 1
	RoleSidecar
	RoleMain
	RoleDefer
)

var roleNames = [...]string{RoleInit: "init", RoleSidecar: "sidecar", RoleMain: "main", RoleDefer: "defer"}

func (r Role) String() string {
	if r >= RoleInit && r <= RoleDefer {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", int(r))
}

// MarshalText writes the role's name: the wire form.
func (r Role) MarshalText() ([]byte, error) {
	if r < RoleInit || r > RoleDefer {
		return nil, fmt.Errorf("marshal role: unknown role %d", int(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads a role's name.
func (r *Role) UnmarshalText(b []byte) error {
	for i := RoleInit; i <= RoleDefer; i++ {
		if roleNames[i] == string(b) {
			*r = i
			return nil
		}
	}
	return fmt.Errorf("unmarshal role: unknown role %q", b)
}

// Instance is one run of a container, from its start to its exit. The
// times are the worker's clock; a zero time is one that did not happen
// (yet).
type Instance struct {
	Container string `json:"container"`
	Role      Role   `json:"role"`
	// Attempt is the instance's restart count: 0 for the first.
	Attempt   int       `json:"attempt"`
	StartedAt time.Time `json:"startedAt"`
	// StopRequestedAt is when the worker began to stop it: its preStop
	// hook, then its stop signal.
	StopRequestedAt time.Time `json:"stopRequestedAt,omitzero"`
	// SignalledAt is when its stop signal (Signal) went out.
	SignalledAt time.Time `json:"signalledAt,omitzero"`
	Signal      string    `json:"signal,omitempty"`
	// KilledAt is when the worker sent SIGKILL.
	KilledAt time.Time `json:"killedAt,omitzero"`
	// FinishedAt is when it exited, with ExitCode and Reason (the
	// runtime's: Completed, Error, StartError, ...); zero while it runs.
	FinishedAt time.Time `json:"finishedAt,omitzero"`
	ExitCode   int32     `json:"exitCode,omitempty"`
	Reason     string    `json:"reason,omitempty"`
}

// Exited says whether the instance has ended.
func (in *Instance) Exited() bool { return !in.FinishedAt.IsZero() }

// MarkKind says what a Mark marks.
type MarkKind int

// Mark kinds start at one so that the zero value is never valid.
const (
	// MarkProbeFailed: a probe attempt of an instance failed (Container,
	// Attempt; Detail is the probe: Startup, Readiness, Liveness).
	MarkProbeFailed MarkKind = iota + 1
	// MarkTerminationRequested: the pod's termination began (Detail is
	// why: Deleted, Completed, DeadlineExceeded, ...).
	MarkTerminationRequested
	// MarkDeadline: the termination's deadline, the end of the grace
	// period; a later request that shortens it moves it (Detail is the
	// grace period).
	MarkDeadline
	// MarkTerminated: nothing of the pod runs any more.
	MarkTerminated
)

var markNames = [...]string{
	MarkProbeFailed:          "ProbeFailed",
	MarkTerminationRequested: "TerminationRequested",
	MarkDeadline:             "Deadline",
	MarkTerminated:           "Terminated",
}

func (k MarkKind) String() string {
	if k >= MarkProbeFailed && k <= MarkTerminated {
		return markNames[k]
	}
	return fmt.Sprintf("MarkKind(%d)", int(k))
}

// MarshalText writes the kind's name: the wire form.
func (k MarkKind) MarshalText() ([]byte, error) {
	if k < MarkProbeFailed || k > MarkTerminated {
		return nil, fmt.Errorf("marshal mark kind: unknown kind %d", int(k))
	}
	return []byte(k.String()), nil
}

// UnmarshalText reads a kind's name.
func (k *MarkKind) UnmarshalText(b []byte) error {
	for i := MarkProbeFailed; i <= MarkTerminated; i++ {
		if markNames[i] == string(b) {
			*k = i
			return nil
		}
	}
	return fmt.Errorf("unmarshal mark kind: unknown kind %q", b)
}

// Mark is a moment of the pod's life, about the pod or, with Container
// set, about one instance of a container.
type Mark struct {
	Kind      MarkKind  `json:"kind"`
	At        time.Time `json:"at"`
	Container string    `json:"container,omitempty"`
	Attempt   int       `json:"attempt,omitempty"`
	Detail    string    `json:"detail,omitempty"`
}

// PodRef names a pod.
type PodRef struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       string    `json:"uid"`
	CreatedAt time.Time `json:"createdAt,omitzero"`
}

// Pod is the timeline of one pod: its instances in the order they
// started, its marks in the order they happened. It is the API's object
// (GET .../pods/{name}/timeline).
type Pod struct {
	PodRef
	Instances []Instance `json:"instances"`
	Marks     []Mark     `json:"marks"`
	// Dropped counts the oldest instances and marks dropped to stay
	// within the History's bounds.
	Dropped int `json:"dropped,omitempty"`
	// Gone says the pod was removed: what is shown is what was kept.
	Gone bool `json:"gone,omitempty"`
	// Now is when the timeline was read: where what still runs ends in
	// the picture.
	Now time.Time `json:"now"`
}

// mark returns the last mark of kind k, or nil.
func (p *Pod) mark(k MarkKind) *Mark {
	for i := len(p.Marks) - 1; i >= 0; i-- {
		if p.Marks[i].Kind == k {
			return &p.Marks[i]
		}
	}
	return nil
}

// Window is the span of time a picture shows.
type Window struct {
	From, To time.Time
}

// Span is the window's length; at least a millisecond.
func (w Window) Span() time.Duration {
	return max(w.To.Sub(w.From), time.Millisecond)
}

// DefaultWindow spans the pod's life as kept: from its creation (or its
// first record, if the creation is not known or was dropped) to its
// termination, or Now while it has not terminated.
func (p *Pod) DefaultWindow() Window {
	var from time.Time
	first := func(t time.Time) {
		if !t.IsZero() && (from.IsZero() || t.Before(from)) {
			from = t
		}
	}
	for i := range p.Instances {
		first(p.Instances[i].StartedAt)
	}
	for i := range p.Marks {
		first(p.Marks[i].At)
	}
	if p.Dropped == 0 {
		first(p.CreatedAt)
	}
	to := p.Now
	if m := p.mark(MarkTerminated); m != nil {
		to = m.At
	}
	if from.IsZero() {
		from = to
	}
	if to.Before(from) {
		to = from
	}
	return Window{From: from, To: to}
}
