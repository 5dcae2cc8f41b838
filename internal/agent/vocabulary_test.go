package agent

import (
	"testing"

	"github.com/podward/podward/internal/podworker"
)

// Every reason a caller may give is one of the pod worker's, and the
// worker's phases read as the agent's.
func TestVocabulary(t *testing.T) {
	for r, want := range map[StopReason]podworker.TerminationReason{
		StopDeleted: podworker.TerminationDeleted, StopDeletedFromAPI: podworker.TerminationDeletedFromAPI,
		StopReplaced: podworker.TerminationReplaced, StopInterrupted: podworker.TerminationInterrupted,
		StopTimeout: podworker.TerminationTimeout, StopAborted: podworker.TerminationAborted,
	} {
		if got, err := r.workerReason(); err != nil || got != want {
			t.Errorf("%s: %q, %v; want %q", r, got, err, want)
		}
	}
	if _, err := StopReason("NodeShutdown").workerReason(); err == nil {
		t.Error("a reason callers may not give is taken: the node's shutdown is the agent's own")
	}
	for p, want := range map[podworker.Phase]Phase{podworker.Syncing: Syncing, podworker.Terminating: Terminating, podworker.Terminated: Terminated} {
		if got := phaseOf(p); got != want {
			t.Errorf("phaseOf(%v) = %v, want %v", p, got, want)
		}
	}
}
