package podworker

import (
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/planner"
)

// termination is what the pod's goroutine keeps of the pod's termination,
// as the kubelet's podSyncStatus keeps when it began, its grace period and
// whether the pod was deleted: the termination the planner plans (its
// deadline), who asked for it, the grace period the published pod shows,
// and the events of its deadline, each emitted once. Owned by run (and by
// newPodWorker, Restore and Rerun before run starts); empty while the pod
// syncs. Its invariants: term, once set, is never unset, and its deadline
// only comes earlier (shorten); deadlineGrace is the grace period of the
// request that set that deadline; each event is emitted once.
//
//	begin ──▶ term set (deadline) ──shorten──▶ earlier deadline (never later)
//	                  │
//	                  └─ deadline passed: GracePeriodExceeded (once), after the kills it names
type termination struct {
	// term is the termination once it began, reason who asked for it.
	term   *planner.Termination
	reason TerminationReason
	// deadlineGrace is the grace period, in seconds, of the request that
	// set term's deadline (the first, or a later one that shortened it);
	// nil when restored from a checkpoint written before it was kept.
	deadlineGrace *int64
	// deleted is set once a kill was applied: the published pod then
	// carries deletionTimestamp = the termination deadline, as the API
	// server shows a deleted pod.
	deleted bool
	// gpReported and deferGivenUp: the GracePeriodExceeded event, and the
	// event saying the defer containers were given up before the deadline,
	// were emitted (once each).
	gpReported   bool
	deferGivenUp bool
	// gpKilled names the containers the GracePeriodExceeded event reported
	// killed, whose Kill then needs no Killing event of its own.
	gpKilled map[string]bool
	// gpEvent is the GracePeriodExceeded message of a plan whose kills
	// are being carried out: emitted once they were sent (takeGPEvent).
	gpEvent string
}

func newTermination() termination {
	return termination{gpKilled: map[string]bool{}}
}

// begin records term, the termination that began, with grace period grace
// (seconds), asked for by reason.
func (t *termination) begin(term planner.Termination, grace int64, reason TerminationReason) {
	t.term = &term
	t.deadlineGrace = &grace
	t.reason = reason
}

// shorten brings the deadline forward to now plus grace, when that is
// earlier, and reports whether it did; a deadline is never put off.
func (t *termination) shorten(now time.Time, grace int64) bool {
	if !t.term.Shorten(now, time.Duration(grace)*time.Second) {
		return false
	}
	t.deadlineGrace = &grace
	return true
}

// deadlinePassed says whether the termination began and its deadline is
// not after now.
func (t *termination) deadlinePassed(now time.Time) bool {
	return t.term != nil && !now.Before(t.term.Deadline)
}

// giveUpDefer reports whether the event giving up on the defer
// containers is to be emitted: the first time only.
func (t *termination) giveUpDefer() bool {
	if t.deferGivenUp {
		return false
	}
	t.deferGivenUp = true
	return true
}

// gracePeriodExceeded records, once, the GracePeriodExceeded event of p,
// the first plan past the deadline: what it kills, what is left the
// minimum time (minStopGrace) after its stop signal (signalled now,
// before, or once its preStop hook is cut off), and the defer containers
// that did not complete. It returns the message to emit now; "" when it
// was reported before, or when the plan kills: the event then waits until
// the kills were sent (takeGPEvent).
func (t *termination) gracePeriodExceeded(p planner.Plan, ctrs []*ctr, minStopGrace time.Duration) string {
	if t.gpReported {
		return ""
	}
	t.gpReported = true
	for _, a := range p.Actions {
		if a.Kind == planner.Kill {
			t.gpKilled[a.Container.Name] = true
		}
	}
	var killed, stopped []string
	for _, c := range ctrs {
		switch {
		case t.gpKilled[c.ref.Name]:
			killed = append(killed, c.ref.Name)
		case c.obs.State == planner.Running && !c.obs.Killed:
			stopped = append(stopped, c.ref.Name)
		}
	}
	var parts []string
	if len(killed) > 0 {
		parts = append(parts, "killed "+strings.Join(killed, ", "))
	}
	if len(stopped) > 0 {
		parts = append(parts, fmt.Sprintf("stopping %s (SIGKILL %v after the stop signal)", strings.Join(stopped, ", "), minStopGrace))
	}
	msg := "Grace period exceeded"
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, "; ")
	}
	if len(p.DeferIncomplete) > 0 {
		msg += "; defer containers that did not complete: " + strings.Join(p.DeferIncomplete, ", ")
	}
	if len(killed) > 0 {
		t.gpEvent = msg
		return ""
	}
	return msg
}

// takeGPEvent returns, once, the GracePeriodExceeded message that waited
// for its kills to be sent; "" when none waits.
func (t *termination) takeGPEvent() string {
	msg := t.gpEvent
	t.gpEvent = ""
	return msg
}

// killedAtDeadline reports whether the GracePeriodExceeded event named the
// container killed (its kill then needs no event of its own), and forgets
// it.
func (t *termination) killedAtDeadline(name string) bool {
	k := t.gpKilled[name]
	delete(t.gpKilled, name)
	return k
}

// outcome is how the termination ended, at now, for the metrics: killed at
// the deadline or ended early, and the time left before the deadline; ok
// is false when no termination began.
func (t *termination) outcome(now time.Time) (outcome TerminationOutcome, left time.Duration, ok bool) {
	if t.term == nil {
		return 0, 0, false
	}
	outcome = EndedEarly
	if t.gpReported {
		outcome = KilledAtDeadline
	}
	left = t.term.Deadline.Sub(now)
	if left < 0 {
		left = 0
	}
	return outcome, left, true
}

// deletion is the deletionTimestamp and deletionGracePeriodSeconds of a
// deleted pod (both nil otherwise): its deadline, and the grace period of
// the request that set it, as the API server keeps it for the delete that
// set deletionTimestamp. A worker restored from a checkpoint that predates
// the record takes the time from the start of the termination to the
// deadline.
func (t *termination) deletion() (*metav1.Time, *int64) {
	if !t.deleted || t.term == nil {
		return nil, nil
	}
	ts := metav1.NewTime(t.term.Deadline)
	var g int64
	if t.deadlineGrace != nil {
		g = *t.deadlineGrace
	} else {
		g = int64(t.term.Deadline.Sub(t.term.RequestedAt) / time.Second)
	}
	return &ts, &g
}

// endedBy gives a terminated pod's status what its termination's cause
// says of it: after the active deadline, Failed with reason
// DeadlineExceeded whatever the containers' exit codes; after a node
// shutdown, what the kubelet's shutdown manager writes (Failed unless
// Succeeded, reason Terminated, its message; the DisruptionTarget
// condition is conditions'). Until the pod is terminated the phase is its
// containers' and the reason waits, as the kubelet's status manager holds
// both back together (mergePodStatus).
func (t *termination) endedBy(st *v1.PodStatus) {
	switch t.reason {
	case TerminationDeadlineExceeded:
		st.Phase, st.Reason, st.Message = v1.PodFailed, reasonDeadlineExceeded, messageDeadlineExceeded
	case TerminationNodeShutdown:
		if st.Phase != v1.PodSucceeded {
			st.Phase = v1.PodFailed
		}
		st.Reason, st.Message = reasonNodeShutdown, messageNodeShutdown
	}
}

// record writes the termination's part of the checkpoint.
func (t *termination) record(cp *checkpointV1) {
	cp.Deleted = t.deleted
	cp.TermReason = t.reason
	cp.GPReported = t.gpReported
	if g := t.deadlineGrace; g != nil {
		cp.DeadlineGrace = new(int64)
		*cp.DeadlineGrace = *g
	}
	if term := t.term; term != nil {
		cp.Termination = &terminationRecord{RequestedAt: term.RequestedAt, Deadline: term.Deadline, RunDefer: term.RunDefer}
	}
}

// restore reads the termination's part of a checkpoint.
func (t *termination) restore(cp checkpointV1) {
	t.deleted = cp.Deleted
	t.reason = cp.TermReason
	t.gpReported = cp.GPReported
	t.deadlineGrace = cp.DeadlineGrace
	if r := cp.Termination; r != nil {
		t.term = &planner.Termination{RequestedAt: r.RequestedAt, Deadline: r.Deadline, RunDefer: r.RunDefer}
	}
}
