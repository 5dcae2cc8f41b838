package shutdown

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// Reason says what asked for a node shutdown.
type Reason int

// Reasons start at one so that the zero value is never one. They are
// written by their text (in the store and the API): a value's text never
// changes.
const (
	// ReasonLogind: systemd-logind announced the shutdown
	// (PrepareForShutdown(true) on the system D-Bus).
	ReasonLogind Reason = iota + 1
	// ReasonAPI: `podward shutdown`, through the agent's API.
	ReasonAPI
)

func (r Reason) String() string {
	switch r {
	case ReasonLogind:
		return "Logind"
	case ReasonAPI:
		return "API"
	default:
		return fmt.Sprintf("Reason(%d)", int(r))
	}
}

// MarshalText writes the reason's text.
func (r Reason) MarshalText() ([]byte, error) {
	if r != ReasonLogind && r != ReasonAPI {
		return nil, fmt.Errorf("node shutdown reason %d is not valid", int(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads a reason's text.
func (r *Reason) UnmarshalText(b []byte) error {
	switch string(b) {
	case "Logind":
		*r = ReasonLogind
	case "API":
		*r = ReasonAPI
	default:
		return fmt.Errorf("node shutdown reason %q is not valid", b)
	}
	return nil
}

// State is where a node shutdown stands:
//
//	Terminating ──every group terminated or out of budget──▶ Terminated
//	     │                                                        │
//	     └──────────────────── Cancel ──────────▶ Cancelled ◀─────┘
//
// Terminated waits for the machine to go down: the node keeps refusing
// pods until the reboot (or a Cancel).
type State int

// States start at one so that the zero value is never one; they are written
// by their text.
const (
	// Terminating: the groups are being terminated, one after another.
	Terminating State = iota + 1
	// Terminated: every group is over; the machine may go down.
	Terminated
	// Cancelled: the shutdown was called off.
	Cancelled
)

func (s State) String() string {
	switch s {
	case Terminating:
		return "Terminating"
	case Terminated:
		return "Terminated"
	case Cancelled:
		return "Cancelled"
	default:
		return fmt.Sprintf("State(%d)", int(s))
	}
}

// MarshalText writes the state's text.
func (s State) MarshalText() ([]byte, error) {
	if s < Terminating || s > Cancelled {
		return nil, fmt.Errorf("node shutdown state %d is not valid", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a state's text.
func (s *State) UnmarshalText(b []byte) error {
	for _, v := range []State{Terminating, Terminated, Cancelled} {
		if string(b) == v.String() {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("node shutdown state %q is not valid", b)
}

// Status is a node shutdown as the API shows it (GET /podward/v1/shutdown);
// the zero Status (State 0) means no shutdown since the agent's start or
// the last reboot. The caller owns it.
type Status struct {
	State   State      `json:"state,omitempty"`
	Reason  Reason     `json:"reason,omitempty"`
	BeganAt *time.Time `json:"beganAt,omitempty"`
	// EndedAt is when the last group ended, or the shutdown was
	// cancelled.
	EndedAt *time.Time    `json:"endedAt,omitempty"`
	Groups  []GroupStatus `json:"groups,omitempty"`
}

// GroupStatus is one priority group of a shutdown.
type GroupStatus struct {
	Priority int32 `json:"priority"`
	// Budget is how long the group may take, as a Go duration ("20s").
	Budget    string      `json:"budget"`
	StartedAt *time.Time  `json:"startedAt,omitempty"`
	EndedAt   *time.Time  `json:"endedAt,omitempty"`
	Pods      []PodStatus `json:"pods,omitempty"`
}

// PodStatus is one pod of a group: the grace period the shutdown gives it
// and, once its group started, its deadline.
type PodStatus struct {
	Namespace          string     `json:"namespace"`
	Name               string     `json:"name"`
	UID                types.UID  `json:"uid"`
	Priority           int32      `json:"priority"`
	GracePeriodSeconds int64      `json:"gracePeriodSeconds"`
	Deadline           *time.Time `json:"deadline,omitempty"`
}

// The record below is the shutdown in the store, under metaKey; it is not
// Status, so that either may change without the other. Version 1.
const (
	metaKey       = "nodeShutdown"
	recordVersion = 1
)

type record struct {
	Version int           `json:"version"`
	State   State         `json:"state"`
	Reason  Reason        `json:"reason"`
	BeganAt time.Time     `json:"beganAt"`
	EndedAt time.Time     `json:"endedAt,omitzero"`
	Groups  []groupRecord `json:"groups"`
}

type groupRecord struct {
	Priority int32         `json:"priority"`
	Budget   time.Duration `json:"budgetNanoseconds"`
	// StartedAt is set (write-ahead) before the group's pods are killed.
	StartedAt time.Time   `json:"startedAt,omitzero"`
	EndedAt   time.Time   `json:"endedAt,omitzero"`
	Pods      []podRecord `json:"pods"`
}

type podRecord struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	Priority  int32     `json:"priority"`
	Grace     int64     `json:"gracePeriodSeconds"`
	// Deadline is its group's start plus Grace.
	Deadline time.Time `json:"deadline,omitzero"`
}

func decodeRecord(s string) (*record, error) {
	var r record
	if err := json.Unmarshal([]byte(s), &r); err != nil {
		return nil, fmt.Errorf("decode the node shutdown record: %w", err)
	}
	if r.Version != recordVersion {
		return nil, fmt.Errorf("node shutdown record version %d, want %d", r.Version, recordVersion)
	}
	return &r, nil
}

// status renders the record for the API.
func (r *record) status() Status {
	st := Status{State: r.State, Reason: r.Reason, BeganAt: timePtr(r.BeganAt), EndedAt: timePtr(r.EndedAt)}
	for _, g := range r.Groups {
		gs := GroupStatus{Priority: g.Priority, Budget: g.Budget.String(), StartedAt: timePtr(g.StartedAt), EndedAt: timePtr(g.EndedAt)}
		for _, p := range g.Pods {
			gs.Pods = append(gs.Pods, PodStatus{
				Namespace: p.Namespace, Name: p.Name, UID: p.UID, Priority: p.Priority,
				GracePeriodSeconds: p.Grace, Deadline: timePtr(p.Deadline),
			})
		}
		st.Groups = append(st.Groups, gs)
	}
	return st
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
