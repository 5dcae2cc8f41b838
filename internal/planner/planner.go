package planner

import (
	"fmt"
	"time"

	"github.com/podward/podward/internal/model"
)

// State is where one container of the pod stands, as the worker observed it.
//
//	Waiting ──start──▶ Running ──exit──▶ Exited ──restart──▶ Running ...
type State int

// States start at one so that an unset State is never mistaken for one.
const (
	// Waiting means no instance was ever started.
	Waiting State = iota + 1
	Running
	Exited
)

func (s State) String() string {
	switch s {
	case Waiting:
		return "Waiting"
	case Running:
		return "Running"
	case Exited:
		return "Exited"
	default:
		return fmt.Sprintf("State(%d)", int(s))
	}
}

// Observed is what the worker knows of one container: its latest instance,
// and the history the rules need (restarts, backoff, whether it ever
// started).
type Observed struct {
	State State
	// Started is true while the running instance counts as started: its
	// process runs, its postStart hook finished and its startupProbe (where
	// it has one) succeeded. Sidecar gating waits on it.
	Started bool
	// StartedOnce is true when any instance ever counted as started. A
	// sidecar that started once does not hold up later init containers
	// while it restarts.
	StartedOnce bool
	StartedAt   time.Time
	FinishedAt  time.Time
	ExitCode    int32
	// Restarts is the Kubernetes restartCount: instances started minus one.
	Restarts int
	// BackoffSteps counts the quick consecutive restarts that feed the
	// crash-loop backoff (see Config.Delay).
	BackoffSteps int
	// StopRequestedAt is when the stop sequence (preStop, stop signal) of
	// the running instance began; zero if it did not.
	StopRequestedAt time.Time
	// SignalledAt is when the stop signal was sent, after the preStop
	// hook; zero until then.
	SignalledAt time.Time
	// Killed is true once SIGKILL was sent to the running instance.
	Killed bool
	// ProbeFailed, PostStartFailedAt and ResizeNeedsRestartAt are the facts
	// the worker observed of the running instance that ask for its stop
	// (see containerStops), each with when it learnt it: ProbeFailed is the
	// probe (liveness or startup) whose failure asks for it, at
	// ProbeFailedAt; PostStartFailedAt is when its postStart hook failed;
	// ResizeNeedsRestartAt is when the worker found that the resources the
	// node allocated to it need a restart to apply (Resize said
	// ResizeRestart). The plan that stops the instance for one of them turns
	// it into the stop's marks (KillAt, ProbeKilled, ResizeRestart), which
	// the worker writes ahead with the stop; a new instance starts without
	// them. The worker does not checkpoint them: they become marks in the
	// same step.
	ProbeFailed          Probe
	ProbeFailedAt        time.Time
	PostStartFailedAt    time.Time
	ResizeNeedsRestartAt time.Time
	// KillAt is when a container being stopped by containerStops (a failed
	// probe or postStart hook, a resize that restarts it) gets SIGKILL: the
	// KillAt of its Stop action, which the worker records with the stop.
	KillAt time.Time
	// ProbeKilled is true once the worker began stopping the instance
	// because its liveness or startup probe failed (a Stop with
	// ReasonProbeFailed); it stays true after the instance exited, so that
	// the restart rule knows (see restarts), and a new instance starts
	// without it.
	ProbeKilled bool
	// RestartedAll is true once a restart of all containers (RestartAll)
	// reset the container, until its next instance starts: the rules then
	// read it as Waiting (see current), and its next start is a restart.
	RestartedAll bool
	// ResizeRestart is true once the worker began stopping the instance
	// to apply a resize its resizePolicy restarts it for (KEP-1287: a Stop
	// with ReasonResize); it
	// stays true after the instance exited, so that the next one starts at
	// once whatever the restart policy (see resizeRestart), and a new
	// instance starts without it.
	ResizeRestart bool
	// ConfigErrorAt is when the container's last start failed because its
	// configuration could not be made (a ConfigMap or Secret its
	// environment needs is missing: CreateContainerConfigError), zero when
	// it did not; ConfigErrorChanges is Input.ObjectChanges at that
	// moment. The container keeps its state: no instance started. See
	// configRetries.
	ConfigErrorAt      time.Time
	ConfigErrorChanges uint64
}

// Input is everything Next may look at. Next does not modify it.
type Input struct {
	Pod *model.Pod
	// Containers is keyed by container name; a missing entry means Waiting.
	Containers map[string]Observed
	// Termination is nil while the pod syncs, set once it terminates.
	Termination *Termination
	// StartTime is the pod's status.startTime: when its worker first
	// synced it. The active deadline counts from it; zero before.
	StartTime time.Time
	// RestartAll is the restart of all containers in progress, nil when
	// none (see restartAllContainers).
	RestartAll *RestartAll
	// ObjectChanges counts the changes of the objects pods read
	// (ConfigMaps, Secrets) the worker was told of: one after a
	// container's ConfigErrorChanges means its configuration may be made
	// now (see configRetries).
	ObjectChanges uint64
	Now           time.Time
	Config        Config
}

// Kind is what an Action does.
type Kind int

// Action kinds.
const (
	// Start starts a new instance of the container.
	Start Kind = iota + 1
	// Stop begins the graceful stop: preStop hook when PreStop, then the
	// stop signal. SIGKILL follows at KillAt through a later Kill action.
	Stop
	// Kill sends SIGKILL now.
	Kill
)

func (k Kind) String() string {
	switch k {
	case Start:
		return "Start"
	case Stop:
		return "Stop"
	case Kill:
		return "Kill"
	default:
		return fmt.Sprintf("Kind(%d)", int(k))
	}
}

// Action is one step for the worker to take.
type Action struct {
	Kind      Kind
	Container model.ContainerRef
	// BackoffSteps (Start) is the value to record for the new instance.
	BackoffSteps int
	// PreStop (Stop) says whether to run the container's preStop hook.
	PreStop bool
	// KillAt (Stop) is when the worker will send SIGKILL if the container
	// still runs; a hook must not run past it.
	KillAt time.Time
	// Reason (Stop, Kill) is why, for the Killing event; zero on a Start.
	Reason StopReason
}

// StopReason says why a Stop or Kill action stops a container; the pod
// worker words its Killing event from it. String and MarshalText (for JSON
// logs, or a record that keeps it) give the names below, which are fixed:
// they are what the reasons were written as before they were typed.
type StopReason int

// Stop reasons start at one so that a Start's zero Reason is none of them.
const (
	// ReasonTerminating: the pod terminates and the container gets the
	// normal graceful stop (termination steps 4 and 5).
	ReasonTerminating StopReason = iota + 1
	// ReasonDeferDone: the defer containers completed, so the container is
	// stopped promptly (termination steps 4 and 5).
	ReasonDeferDone
	// ReasonGracePeriodExceeded: the deadline passed and whatever runs is
	// killed (termination steps 6 and 8).
	ReasonGracePeriodExceeded
	// ReasonProbeFailed: a liveness or startup probe failed: the container
	// is stopped, and killed at the stop's kill time (containerStops).
	ReasonProbeFailed
	// ReasonPostStartHookFailed: the container's postStart hook failed: it
	// is stopped, and killed at the stop's kill time (containerStops).
	ReasonPostStartHookFailed
	// ReasonRestartAllContainers: a restart of all containers (start rule
	// 7) stops every container that runs.
	ReasonRestartAllContainers
	// ReasonResize: a resize whose resizePolicy restarts the container
	// (KEP-1287): it is stopped, and killed at the stop's kill time
	// (containerStops).
	ReasonResize
)

var stopReasonNames = [...]string{
	ReasonTerminating:          "Terminating",
	ReasonDeferDone:            "DeferContainersCompleted",
	ReasonGracePeriodExceeded:  "GracePeriodExceeded",
	ReasonProbeFailed:          "ProbeFailed",
	ReasonPostStartHookFailed:  "FailedPostStartHook",
	ReasonRestartAllContainers: "RestartAllContainers",
	ReasonResize:               "Resize",
}

func (r StopReason) String() string {
	if r > 0 && int(r) < len(stopReasonNames) {
		return stopReasonNames[r]
	}
	return fmt.Sprintf("StopReason(%d)", int(r))
}

// MarshalText writes the reason's name, and nothing for the zero value (a
// Start's); an unknown reason is an error.
func (r StopReason) MarshalText() ([]byte, error) {
	switch {
	case r == 0:
		return []byte{}, nil
	case r < 0 || int(r) >= len(stopReasonNames):
		return nil, fmt.Errorf("stop reason %d: unknown", int(r))
	}
	return []byte(stopReasonNames[r]), nil
}

// UnmarshalText reads what MarshalText wrote.
func (r *StopReason) UnmarshalText(b []byte) error {
	for i, name := range stopReasonNames {
		if name == string(b) {
			*r = StopReason(i)
			return nil
		}
	}
	return fmt.Errorf("stop reason %q: unknown", b)
}

// Backoff is a container waiting for its crash-loop backoff to end.
type Backoff struct {
	Container model.ContainerRef
	Until     time.Time
}

// Plan is the outcome of one planning step.
type Plan struct {
	Actions []Action
	// Backoffs are the containers that will restart once their delay ends.
	Backoffs []Backoff
	// WakeAt is when the plan changes with time alone (a backoff ends, a
	// kill is due, the deadline passes); zero when only an event can change
	// it.
	WakeAt time.Time
	// Completed (syncing) says the pod is done: every regular container
	// terminated and none will restart, or an init container failed for
	// good. The worker begins termination.
	Completed bool
	// ActiveDeadlineExceeded (syncing) says the pod has been active for its
	// spec.activeDeadlineSeconds (see ActiveDeadline): the worker begins
	// its termination, with the pod's grace period, and the pod fails with
	// reason DeadlineExceeded. The plan has nothing else then.
	ActiveDeadlineExceeded bool
	// RestartAll (syncing) says a container exited with a code that one
	// of its RestartAllContainers rules matches: the worker keeps it as
	// Input.RestartAll and plans again. The plan has nothing else then.
	RestartAll *RestartAll
	// ResetContainers (syncing, during a RestartAll) says nothing of the
	// pod runs and the trigger's backoff has passed: the worker marks
	// every container that ran Observed.RestartedAll, gives the trigger
	// ResetBackoffSteps (the others none), clears the RestartAll and plans
	// again, and the init containers start over.
	ResetContainers   bool
	ResetBackoffSteps int
	// Done (terminating) says nothing runs and nothing will start: the pod
	// is terminated.
	Done bool
	// DeferIncomplete (terminating) names the defer containers that did
	// not complete, once they are given up: the deadline passed, or the
	// next retry of a failed one would come too late.
	DeferIncomplete []string
}

func (p *Plan) wake(t time.Time) {
	if p.WakeAt.IsZero() || t.Before(p.WakeAt) {
		p.WakeAt = t
	}
}

// KillTime is when a container being stopped gets SIGKILL, given bound,
// the kill time its stop was given (the deadline, a prompt kill time, a
// failed probe's): bound, but never sooner than MinStopGrace after its stop
// signal went out at signalledAt. This is the kubelet's minimum shutdown
// window (kubelet 1.37, pkg/kubelet/kuberuntime/kuberuntime_container.go,
// killContainer: after the preStop hook and the wait for its turn, the
// container is stopped with at least minimumGracePeriodInSeconds), so a
// container whose hook or turn used the grace period up still gets its
// signal and that time. A zero signalledAt means the signal has not gone
// out: the preStop hook still runs, and the worker sends the signal when it
// cuts the hook off at bound; should that signal never be reported, the
// container is killed MinStopGrace after bound. Pure; the pod worker asks it
// too, for the timeout of a runtime's graceful stop.
func (c Config) KillTime(signalledAt, bound time.Time) time.Time {
	if signalledAt.IsZero() {
		return bound.Add(c.MinStopGrace)
	}
	if floor := signalledAt.Add(c.MinStopGrace); floor.After(bound) {
		return floor
	}
	return bound
}

// killWhenDue plans the SIGKILL of a running container whose stop began,
// at its KillTime for bound, or wakes the plan then.
func (p *Plan) killWhenDue(in *Input, ref model.ContainerRef, o Observed, bound time.Time, reason StopReason) {
	if at := in.Config.KillTime(o.SignalledAt, bound); in.Now.Before(at) {
		p.wake(at)
		return
	}
	p.Actions = append(p.Actions, Action{Kind: Kill, Container: ref, Reason: reason})
}

// Next returns the next actions for a pod: those of the "Start" rules of
// docs/lifecycle.md while the pod syncs, those of its "Termination" steps
// once in.Termination is set (the stages are listed in the package doc). It
// is pure: the same input always gives the same plan, and in is not
// modified. The worker calls it after every event and at the plan's WakeAt.
func Next(in Input) Plan {
	refs := in.Pod.Containers()
	var p Plan
	if in.Termination == nil {
		p = planSync(in, refs)
	} else {
		p = planTerminating(in, refs)
	}
	p.configRetries(&in)
	return p
}

// obs is what was observed of the named container; a container never
// observed is Waiting.
func (in *Input) obs(name string) Observed {
	o, ok := in.Containers[name]
	if !ok || o.State == 0 {
		o.State = Waiting
	}
	return o.current()
}

// succeeded says the container's last instance exited 0.
func succeeded(o Observed) bool {
	return o.State == Exited && o.ExitCode == 0
}
