package shutdown

import (
	"encoding/json"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/wire"
)

// A shutdown's state and reason, and its status as the API shows it, are
// declared once, in internal/wire, for the API server and the client alike;
// these are their names here. A State or a Reason is written by its text
// (in the store and the API): a value's text never changes.
type (
	// Reason says what asked for a node shutdown.
	Reason = wire.ShutdownReason
	// State is where a node shutdown stands (see wire.ShutdownState).
	State = wire.ShutdownState
	// Status is a node shutdown as the API shows it (GET
	// /podward/v1/shutdown); the zero Status means none since the agent's
	// start or the last reboot. The caller owns it.
	Status      = wire.NodeShutdown
	GroupStatus = wire.NodeShutdownGroup
	PodStatus   = wire.NodeShutdownPod
)

// The reasons and states.
const (
	ReasonLogind = wire.ShutdownReasonLogind
	ReasonAPI    = wire.ShutdownReasonAPI

	Terminating = wire.ShutdownTerminating
	Terminated  = wire.ShutdownTerminated
	Cancelled   = wire.ShutdownCancelled
)

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
