package wire

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ShutdownPath is the node shutdown's endpoint: GET its status (wait=true:
// once the shutdown is over), POST a ShutdownRequest to begin one, DELETE
// to cancel it. Each answers with the NodeShutdown.
const ShutdownPath = "/podward/v1/shutdown"

// ShutdownRequest is the body of POST ShutdownPath; empty is the
// configured budgets.
type ShutdownRequest struct {
	// GracePeriodSeconds, when set and positive, bounds the whole
	// shutdown: the groups shrink in proportion to fit (0 or unset: the
	// configured budgets).
	GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
}

// ShutdownReason says what asked for a node shutdown.
type ShutdownReason int

// Reasons start at one so that the zero value is never one. They are
// written by their text (in the store and the API): a value's text never
// changes.
const (
	// ShutdownReasonLogind: systemd-logind announced the shutdown
	// (PrepareForShutdown(true) on the system D-Bus).
	ShutdownReasonLogind ShutdownReason = iota + 1
	// ShutdownReasonAPI: `podward shutdown`, through the agent's API.
	ShutdownReasonAPI
)

func (r ShutdownReason) String() string {
	switch r {
	case ShutdownReasonLogind:
		return "Logind"
	case ShutdownReasonAPI:
		return "API"
	default:
		return fmt.Sprintf("ShutdownReason(%d)", int(r))
	}
}

// MarshalText writes the reason's text.
func (r ShutdownReason) MarshalText() ([]byte, error) {
	if r != ShutdownReasonLogind && r != ShutdownReasonAPI {
		return nil, fmt.Errorf("node shutdown reason %d is not valid", int(r))
	}
	return []byte(r.String()), nil
}

// UnmarshalText reads a reason's text.
func (r *ShutdownReason) UnmarshalText(b []byte) error {
	switch string(b) {
	case "Logind":
		*r = ShutdownReasonLogind
	case "API":
		*r = ShutdownReasonAPI
	default:
		return fmt.Errorf("node shutdown reason %q is not valid", b)
	}
	return nil
}

// ShutdownState is where a node shutdown stands:
//
//	Terminating ──every group terminated or out of budget──▶ Terminated
//	     │                                                        │
//	     └──────────────────── Cancel ──────────▶ Cancelled ◀─────┘
//
// Terminated waits for the machine to go down: the node keeps rejecting
// new pods until the reboot (or a Cancel).
type ShutdownState int

// States start at one so that the zero value is never one; they are written
// by their text.
const (
	// ShutdownTerminating: the groups are being terminated, one after another.
	ShutdownTerminating ShutdownState = iota + 1
	// ShutdownTerminated: every group is over; the machine may go down.
	ShutdownTerminated
	// ShutdownCancelled: the shutdown was called off.
	ShutdownCancelled
)

func (s ShutdownState) String() string {
	switch s {
	case ShutdownTerminating:
		return "Terminating"
	case ShutdownTerminated:
		return "Terminated"
	case ShutdownCancelled:
		return "Cancelled"
	default:
		return fmt.Sprintf("ShutdownState(%d)", int(s))
	}
}

// MarshalText writes the state's text.
func (s ShutdownState) MarshalText() ([]byte, error) {
	if s < ShutdownTerminating || s > ShutdownCancelled {
		return nil, fmt.Errorf("node shutdown state %d is not valid", int(s))
	}
	return []byte(s.String()), nil
}

// UnmarshalText reads a state's text.
func (s *ShutdownState) UnmarshalText(b []byte) error {
	for _, v := range []ShutdownState{ShutdownTerminating, ShutdownTerminated, ShutdownCancelled} {
		if string(b) == v.String() {
			*s = v
			return nil
		}
	}
	return fmt.Errorf("node shutdown state %q is not valid", b)
}

// NodeShutdown is a node shutdown as the API shows it (GET ShutdownPath);
// the zero NodeShutdown (State 0) means no shutdown since the agent's start
// or the last reboot.
type NodeShutdown struct {
	State   ShutdownState  `json:"state,omitempty"`
	Reason  ShutdownReason `json:"reason,omitempty"`
	BeganAt *time.Time     `json:"beganAt,omitempty"`
	// EndedAt is when the last group ended, or the shutdown was
	// cancelled.
	EndedAt *time.Time          `json:"endedAt,omitempty"`
	Groups  []NodeShutdownGroup `json:"groups,omitempty"`
}

// NodeShutdownGroup is one priority group of a shutdown.
type NodeShutdownGroup struct {
	Priority int32 `json:"priority"`
	// Budget is how long the group may take, as a Go duration ("20s").
	Budget    string            `json:"budget"`
	StartedAt *time.Time        `json:"startedAt,omitempty"`
	EndedAt   *time.Time        `json:"endedAt,omitempty"`
	Pods      []NodeShutdownPod `json:"pods,omitempty"`
}

// NodeShutdownPod is one pod of a group: the grace period the shutdown gives it
// and, once its group started, its deadline.
type NodeShutdownPod struct {
	Namespace          string     `json:"namespace"`
	Name               string     `json:"name"`
	UID                types.UID  `json:"uid"`
	Priority           int32      `json:"priority"`
	GracePeriodSeconds int64      `json:"gracePeriodSeconds"`
	Deadline           *time.Time `json:"deadline,omitempty"`
}
