package prober

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"
)

// Kind is the kind of a probe.
type Kind int

// Kinds start at one so that the zero value is never a valid kind.
const (
	Startup Kind = iota + 1
	Readiness
	Liveness
)

// kinds is every Kind, in the order a container's probes are kept.
var kinds = [...]Kind{Startup, Readiness, Liveness}

func (k Kind) String() string {
	switch k {
	case Startup:
		return "Startup"
	case Readiness:
		return "Readiness"
	case Liveness:
		return "Liveness"
	default:
		return fmt.Sprintf("Kind(%d)", int(k))
	}
}

// Result is one report to the pod worker.
type Result struct {
	PodUID    types.UID
	Container string // name
	ID        string // the container instance the probe ran against
	Kind      Kind
	// Healthy is the probe's state after this attempt, thresholds applied
	// (readiness: ready; startup and liveness: not failed — a startup
	// probe's Changed and Healthy together mean the container has started).
	Healthy bool
	// Changed says Healthy changed with this attempt (the worker acts on
	// changes). A startup probe changes once: to started or to failed.
	Changed bool
	// Failed says this attempt failed; Output says why (for the Unhealthy
	// event: "Liveness probe failed: <Output>").
	Failed bool
	Output string
	// Warning, for an attempt that succeeded, says it succeeded with a
	// warning: an httpGet probe answered with a redirect it did not
	// follow (to another host), which counts as a success. It is the
	// kubelet's output of such an attempt (pkg/probe/http, DoHTTPProbe:
	// "Probe terminated redirects, Response body: <body>"), for the
	// Warning ProbeWarning event "Liveness probe warning: <Warning>". An
	// attempt that warns is reported, changed or not.
	Warning string
}

// state is what a probe says about its container, as the kubelet's results
// manager holds it.
type state int8

const (
	stateUnknown state = iota + 1
	stateSuccess
	stateFailure
)

func (s state) String() string {
	switch s {
	case stateUnknown:
		return "Unknown"
	case stateSuccess:
		return "Success"
	case stateFailure:
		return "Failure"
	default:
		return fmt.Sprintf("state(%d)", int(s))
	}
}

// initialState is a probe's state before its first attempt: readiness
// starts not ready, liveness healthy, startup unknown.
func initialState(k Kind) state {
	switch k {
	case Readiness:
		return stateFailure
	case Liveness:
		return stateSuccess
	default:
		return stateUnknown
	}
}

// healthy is how a state reads in a Result of kind k.
func healthy(k Kind, s state) bool {
	if k == Readiness {
		return s == stateSuccess
	}
	return s != stateFailure
}

// tally counts a probe's attempts against its thresholds.
type tally struct {
	state state
	// last is the outcome of the last attempt (stateUnknown before the
	// first) and run how many attempts in a row had it.
	last state
	run  int32
}

// next is the pure threshold step: the tally after an attempt that
// succeeded (ok) or failed. The state changes only once successThreshold
// successes or failureThreshold failures have come in a row; thresholds
// below one count as one.
func next(t tally, ok bool, successThreshold, failureThreshold int32) tally {
	outcome := stateFailure
	if ok {
		outcome = stateSuccess
	}
	if t.last == outcome {
		t.run++
	} else {
		t.last, t.run = outcome, 1
	}
	switch {
	case ok && t.run >= max(successThreshold, 1):
		t.state = stateSuccess
	case !ok && t.run >= max(failureThreshold, 1):
		t.state = stateFailure
	}
	return t
}
