package logind

import "fmt"

// phase is where a watcher stands in logind's delay-lock protocol (the
// timeline in doc.go).
type phase int

const (
	// phaseIdle: the lock is held, the machine is not shutting down.
	phaseIdle phase = iota + 1
	// phaseShuttingDown: PrepareForShutdown(true) came; the node shutdown
	// runs and the lock is held until it is done or its grace is spent.
	phaseShuttingDown
	// phaseReleased: the lock is released; logind goes on with the
	// machine's shutdown, unless it is cancelled.
	phaseReleased
)

func (p phase) String() string {
	switch p {
	case phaseIdle:
		return "idle"
	case phaseShuttingDown:
		return "shuttingDown"
	case phaseReleased:
		return "released"
	default:
		return fmt.Sprintf("phase(%d)", int(p))
	}
}

// event is what moves a watcher.
type event int

const (
	// evShutdown: PrepareForShutdown(true), the machine is going down.
	evShutdown event = iota + 1
	// evCancel: PrepareForShutdown(false), the shutdown was cancelled.
	evCancel
	// evDone: the node shutdown ended (or did not start).
	evDone
	// evBudgetSpent: the node shutdown's grace ran out.
	evBudgetSpent
)

func (e event) String() string {
	switch e {
	case evShutdown:
		return "shutdown"
	case evCancel:
		return "cancel"
	case evDone:
		return "done"
	case evBudgetSpent:
		return "budgetSpent"
	default:
		return fmt.Sprintf("event(%d)", int(e))
	}
}

// eventOf is the event of PrepareForShutdown(active).
func eventOf(active bool) event {
	if active {
		return evShutdown
	}
	return evCancel
}

// action is the side effect a transition asks for.
type action int

const (
	// actNone: nothing to do (a repeated or stale event).
	actNone action = iota + 1
	// actBegin: start the node shutdown and its budget timer.
	actBegin
	// actRelease: close the lock; logind may go on.
	actRelease
	// actCancel: cancel the node shutdown; the lock is still held.
	actCancel
	// actCancelRelock: cancel the node shutdown and take the lock again.
	actCancelRelock
)

func (a action) String() string {
	switch a {
	case actNone:
		return "none"
	case actBegin:
		return "begin"
	case actRelease:
		return "release"
	case actCancel:
		return "cancel"
	case actCancelRelock:
		return "cancelRelock"
	default:
		return fmt.Sprintf("action(%d)", int(a))
	}
}

// next is the watcher's state machine: from where it stands and what
// happened, where it goes and what it does. It is pure.
//
//   - idle: a shutdown begins the node shutdown; a cancel is spurious
//     (the lock is still held); done and budgetSpent are stale.
//   - shuttingDown: done or budgetSpent releases the lock; a cancel
//     cancels the node shutdown, the lock still held; a second shutdown
//     is the same one.
//   - released: a cancel cancels the node shutdown and takes the lock
//     again (the kubelet's acquireInhibitLock on PrepareForShutdown(false));
//     anything else is stale, the machine is going down.
func next(p phase, e event) (phase, action) {
	switch p {
	case phaseIdle:
		if e == evShutdown {
			return phaseShuttingDown, actBegin
		}
	case phaseShuttingDown:
		switch e {
		case evDone, evBudgetSpent:
			return phaseReleased, actRelease
		case evCancel:
			return phaseIdle, actCancel
		}
	case phaseReleased:
		if e == evCancel {
			return phaseIdle, actCancelRelock
		}
	}
	return p, actNone
}
