package agent

import (
	"fmt"

	"github.com/podward/podward/internal/podworker"
)

// The agent's own words for what its callers say and hear about a pod:
// they never reach the pod worker's types (internal/archtest keeps
// everything above the agent from importing the worker).

// StopReason is why a caller stops a pod (Delete).
type StopReason string

// The reasons a caller may give.
const (
	// StopDeleted: a delete by the pod's source (the API, a manifest).
	StopDeleted StopReason = "Deleted"
	// StopDeletedFromAPI: the pod's object is gone from a cluster's API
	// server (a forced delete there, the node's pods listed again).
	StopDeletedFromAPI StopReason = "DeletedFromAPI"
	// StopReplaced: an apply put another pod in its place.
	StopReplaced StopReason = "Replaced"
	// StopInterrupted: `podward run` was interrupted.
	StopInterrupted StopReason = "Interrupted"
	// StopTimeout: `podward run`'s --timeout passed.
	StopTimeout StopReason = "Timeout"
	// StopAborted: `podward run` gave up on its pods (one failed to be
	// created).
	StopAborted StopReason = "Aborted"
)

// workerReason is r as the pod worker's termination reason.
func (r StopReason) workerReason() (podworker.TerminationReason, error) {
	switch r {
	case StopDeleted:
		return podworker.TerminationDeleted, nil
	case StopDeletedFromAPI:
		return podworker.TerminationDeletedFromAPI, nil
	case StopReplaced:
		return podworker.TerminationReplaced, nil
	case StopInterrupted:
		return podworker.TerminationInterrupted, nil
	case StopTimeout:
		return podworker.TerminationTimeout, nil
	case StopAborted:
		return podworker.TerminationAborted, nil
	}
	return "", fmt.Errorf("unknown stop reason %q", r)
}

// Phase is where a pod's lifecycle is, as Get reports it.
type Phase int

// The phases.
const (
	// Syncing: the pod runs, or starts.
	Syncing Phase = iota + 1
	// Terminating: it stops: nothing new starts but its defer containers.
	Terminating
	// Terminated: nothing of it runs any more.
	Terminated
)

func (p Phase) String() string {
	switch p {
	case Syncing:
		return "Syncing"
	case Terminating:
		return "Terminating"
	case Terminated:
		return "Terminated"
	}
	return fmt.Sprintf("Phase(%d)", int(p))
}

// phaseOf is the worker's phase in the agent's words.
func phaseOf(p podworker.Phase) Phase {
	switch p {
	case podworker.Terminating:
		return Terminating
	case podworker.Terminated:
		return Terminated
	}
	return Syncing
}
