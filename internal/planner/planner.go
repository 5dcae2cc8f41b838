package planner

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

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
	// KillAt, set while the pod syncs, is when a container being stopped
	// because a probe failed gets SIGKILL.
	KillAt time.Time
}

// Termination is the fixed part of a pod's termination, decided once when
// it begins (see Begin) and only ever shortened afterwards.
type Termination struct {
	RequestedAt time.Time
	Deadline    time.Time
	// RunDefer says whether the defer containers run: the pod has some, a
	// regular container started before termination began and the grace
	// period was not zero.
	RunDefer bool
}

// Config holds the timings of the rules. Zero values are not meaningful; use
// DefaultConfig and override.
type Config struct {
	// BackoffBase is the crash-loop delay after the second quick exit; it
	// doubles with each further one up to BackoffMax. Kubernetes: 10 s.
	BackoffBase time.Duration
	// BackoffMax caps the delay. Kubernetes: 5 min.
	BackoffMax time.Duration
	// BackoffReset: an instance that ran at least this long resets the
	// backoff. Kubernetes: 10 min.
	BackoffReset time.Duration
	// PromptKill is how long a container may take to exit after its stop
	// signal once the defer containers have completed, before SIGKILL.
	PromptKill time.Duration
	// SidecarRestartMax caps the backoff of a sidecar restarted while the
	// pod terminates, since defer containers may depend on it.
	SidecarRestartMax time.Duration
}

// DefaultConfig is Kubernetes' timing plus podward's termination settings.
func DefaultConfig() Config {
	return Config{
		BackoffBase:       10 * time.Second,
		BackoffMax:        5 * time.Minute,
		BackoffReset:      10 * time.Minute,
		PromptKill:        2 * time.Second,
		SidecarRestartMax: time.Second,
	}
}

// Delay is the crash-loop backoff before a restart, given the backoff steps
// already taken: the first restart is immediate, then BackoffBase, doubling
// up to BackoffMax — what a user of the kubelet sees.
func (c Config) Delay(steps int) time.Duration {
	if steps <= 0 {
		return 0
	}
	d := c.BackoffBase
	for i := 1; i < steps && d < c.BackoffMax; i++ {
		d *= 2
	}
	if d > c.BackoffMax {
		d = c.BackoffMax
	}
	return d
}

// steps is the backoff steps that apply to the exited instance: an instance
// that ran for BackoffReset or longer starts the count again.
func (c Config) steps(o Observed) int {
	if !o.StartedAt.IsZero() && o.FinishedAt.Sub(o.StartedAt) >= c.BackoffReset {
		return 0
	}
	return o.BackoffSteps
}

// Input is everything Plan may look at. Plan does not modify it.
type Input struct {
	Pod *model.Pod
	// Containers is keyed by container name; a missing entry means Waiting.
	Containers map[string]Observed
	// Termination is nil while the pod syncs, set once it terminates.
	Termination *Termination
	Now         time.Time
	Config      Config
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
	// Reason (Stop, Kill) is why, for the Killing event.
	Reason string
}

// Kill and stop reasons.
const (
	ReasonTerminating         = "Terminating"
	ReasonDeferDone           = "DeferContainersCompleted"
	ReasonGracePeriodExceeded = "GracePeriodExceeded"
	ReasonProbeFailed         = "ProbeFailed"
)

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

// Next returns the next actions for a pod. It is pure: the same input
// always gives the same plan.
func Next(in Input) Plan {
	if in.Termination == nil {
		return planSync(in)
	}
	return planTerminating(in)
}

func (in Input) obs(name string) Observed {
	o, ok := in.Containers[name]
	if !ok || o.State == 0 {
		o.State = Waiting
	}
	return o
}

// RetryAt is when an exited container may start again under crash-loop
// backoff (maxDelay caps the delay when positive).
func (c Config) RetryAt(o Observed, maxDelay time.Duration) time.Time {
	delay := c.Delay(c.steps(o))
	if maxDelay > 0 && delay > maxDelay {
		delay = maxDelay
	}
	return o.FinishedAt.Add(delay)
}

// restart starts the exited container once its backoff has passed, and
// otherwise records the wait. maxDelay caps the delay when positive; a
// restart due at or after notAfter (when set) is not planned at all, and
// restart reports false.
func (p *Plan) restart(in Input, ref model.ContainerRef, o Observed, maxDelay time.Duration, notAfter time.Time) bool {
	at := in.Config.RetryAt(o, maxDelay)
	if !notAfter.IsZero() && !at.Before(notAfter) {
		return false
	}
	if !in.Now.Before(at) {
		p.Actions = append(p.Actions, Action{Kind: Start, Container: ref, BackoffSteps: in.Config.steps(o) + 1})
		return true
	}
	p.Backoffs = append(p.Backoffs, Backoff{Container: ref, Until: at})
	p.wake(at)
	return true
}

// ShouldRestart applies a restart policy to an exit code, as the kubelet
// does for regular containers.
func ShouldRestart(policy v1.RestartPolicy, exitCode int32) bool {
	switch policy {
	case v1.RestartPolicyNever:
		return false
	case v1.RestartPolicyOnFailure:
		return exitCode != 0
	default:
		return true
	}
}

func planSync(in Input) Plan {
	var p Plan
	pod := in.Pod
	// A container stopped because a probe failed is killed at its KillAt.
	for _, ref := range pod.Containers() {
		o := in.obs(ref.Name)
		if o.State != Running || o.KillAt.IsZero() || o.Killed {
			continue
		}
		if !in.Now.Before(o.KillAt) {
			p.Actions = append(p.Actions, Action{Kind: Kill, Container: ref, Reason: ReasonProbeFailed})
		} else {
			p.wake(o.KillAt)
		}
	}
	policy := pod.RestartPolicy()
	initsDone := true
	for _, ref := range pod.Containers() {
		if ref.Role != model.RoleInit && ref.Role != model.RoleSidecar {
			continue
		}
		o := in.obs(ref.Name)
		if ref.Role == model.RoleSidecar {
			switch o.State {
			case Waiting:
				p.Actions = append(p.Actions, Action{Kind: Start, Container: ref})
			case Exited:
				// A sidecar restarts whatever the pod's restartPolicy.
				p.restart(in, ref, o, 0, time.Time{})
			}
			if o.StartedOnce || (o.State == Running && o.Started) {
				continue
			}
			initsDone = false
			break
		}
		if o.State == Exited && o.ExitCode == 0 {
			continue
		}
		initsDone = false
		switch o.State {
		case Waiting:
			p.Actions = append(p.Actions, Action{Kind: Start, Container: ref})
		case Exited:
			if policy == v1.RestartPolicyNever {
				p.Completed = true
			} else {
				p.restart(in, ref, o, 0, time.Time{})
			}
		}
		break
	}
	if !initsDone {
		return p
	}
	allDone := true
	for _, ref := range pod.Containers() {
		o := in.obs(ref.Name)
		// Sidecars were all handled by the init pass, which reached the
		// end of the list.
		if ref.Role == model.RoleMain {
			switch o.State {
			case Waiting:
				allDone = false
				p.Actions = append(p.Actions, Action{Kind: Start, Container: ref})
			case Running:
				allDone = false
			case Exited:
				if ShouldRestart(policy, o.ExitCode) {
					allDone = false
					p.restart(in, ref, o, 0, time.Time{})
				}
			}
		}
	}
	p.Completed = allDone
	return p
}

func planTerminating(in Input) Plan {
	var p Plan
	t := in.Termination
	pod := in.Pod
	refs := pod.Containers()

	if !in.Now.Before(t.Deadline) {
		running := false
		for _, ref := range refs {
			o := in.obs(ref.Name)
			if o.State != Running {
				continue
			}
			running = true
			if !o.Killed {
				p.Actions = append(p.Actions, Action{Kind: Kill, Container: ref, Reason: ReasonGracePeriodExceeded})
			}
		}
		p.Done = !running
		if t.RunDefer {
			p.DeferIncomplete = incompleteDefers(in, refs)
		}
		return p
	}
	p.wake(t.Deadline)

	// Sidecars that die while regular or defer containers still run come
	// back quickly: defer containers may talk through them.
	restartSidecars := func() {
		for _, ref := range refs {
			if o := in.obs(ref.Name); ref.Role == model.RoleSidecar && o.State == Exited && o.StartedOnce {
				p.restart(in, ref, o, in.Config.SidecarRestartMax, t.Deadline)
			}
		}
	}

	// Step 3: defer containers, one after another, while everything else
	// keeps running. A failed one whose next retry would come too late is
	// given up: waiting for the deadline would only delay the stop.
	abandoned := false
	if t.RunDefer {
		for _, ref := range refs {
			if ref.Role != model.RoleDefer {
				continue
			}
			o := in.obs(ref.Name)
			if o.State == Exited && o.ExitCode == 0 {
				continue
			}
			if o.State == Exited && !p.restart(in, ref, o, 0, t.Deadline) {
				abandoned = true
				p.DeferIncomplete = incompleteDefers(in, refs)
				break
			}
			if o.State == Waiting {
				p.Actions = append(p.Actions, Action{Kind: Start, Container: ref})
			}
			restartSidecars()
			return p
		}
	}

	// Once the defer containers completed, they were the graceful shutdown:
	// the rest stops promptly. Without them, the grace period applies.
	prompt := t.RunDefer && !abandoned
	stop := func(ref model.ContainerRef, o Observed, preStop bool, reason string) {
		if o.StopRequestedAt.IsZero() {
			// KillAt bounds the preStop hook: the deadline.
			p.Actions = append(p.Actions, Action{Kind: Stop, Container: ref, PreStop: preStop, KillAt: t.Deadline, Reason: reason})
			return
		}
		if o.Killed {
			return
		}
		// A prompt stop gives the container PromptKill after its stop
		// signal; a preStop hook before the signal is bounded by the
		// deadline only.
		killAt := t.Deadline
		if prompt && !o.SignalledAt.IsZero() {
			killAt = earliest(o.SignalledAt.Add(in.Config.PromptKill), t.Deadline)
		}
		if !o.KillAt.IsZero() {
			// Stopped earlier for a failed probe: a kill time only ever
			// gets shorter.
			killAt = earliest(killAt, o.KillAt)
		}
		if !in.Now.Before(killAt) {
			p.Actions = append(p.Actions, Action{Kind: Kill, Container: ref, Reason: reason})
			return
		}
		p.wake(killAt)
	}
	reason := ReasonTerminating
	if prompt {
		reason = ReasonDeferDone
	}

	// Step 4: regular containers (and an init container caught running).
	// With defer containers their preStop hooks do not run: the defer
	// containers replace them.
	hasDefer := len(pod.Defer) > 0
	busy, mainRuns := false, false
	for _, ref := range refs {
		if ref.Role != model.RoleMain && ref.Role != model.RoleInit {
			continue
		}
		if o := in.obs(ref.Name); o.State == Running {
			busy = true
			mainRuns = mainRuns || ref.Role == model.RoleMain
			stop(ref, o, ref.Role == model.RoleMain && !hasDefer, reason)
		}
	}
	if busy {
		// Only regular (or defer) containers may depend on a sidecar:
		// while an init container is being stopped, nothing new starts.
		if mainRuns {
			restartSidecars()
		}
		return p
	}

	// Step 5: sidecars, one at a time, in reverse order of declaration.
	for i := len(refs) - 1; i >= 0; i-- {
		ref := refs[i]
		if ref.Role != model.RoleSidecar {
			continue
		}
		if o := in.obs(ref.Name); o.State == Running {
			stop(ref, o, true, reason)
			return p
		}
	}
	p.Done = true
	p.WakeAt = time.Time{}
	return p
}

// incompleteDefers names the defer containers that have not exited 0.
func incompleteDefers(in Input, refs []model.ContainerRef) []string {
	var out []string
	for _, ref := range refs {
		if o := in.obs(ref.Name); ref.Role == model.RoleDefer && !(o.State == Exited && o.ExitCode == 0) {
			out = append(out, ref.Name)
		}
	}
	return out
}

func earliest(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// Begin fixes a termination that starts now with grace period grace: the
// absolute deadline, and whether the defer containers run (the pod has some,
// a regular container has started, and grace is not zero).
func Begin(pod *model.Pod, containers map[string]Observed, now time.Time, grace time.Duration) Termination {
	t := Termination{RequestedAt: now, Deadline: now.Add(grace)}
	if len(pod.Defer) == 0 || grace <= 0 {
		return t
	}
	for i := range pod.Spec.Containers {
		if o := containers[pod.Spec.Containers[i].Name]; o.State == Running || o.State == Exited {
			t.RunDefer = true
			break
		}
	}
	return t
}

// Shorten applies a later termination request: the deadline may move
// earlier, never later.
func (t *Termination) Shorten(now time.Time, grace time.Duration) bool {
	if d := now.Add(grace); d.Before(t.Deadline) {
		t.Deadline = d
		return true
	}
	return false
}

// Phase is the pod phase the containers imply. terminated says the pod
// worker has finished terminating the pod.
//
// The phase is decided by the regular containers only: sidecars never keep
// a pod alive, and defer containers run after the outcome is known.
func Phase(pod *model.Pod, containers map[string]Observed, terminated bool) v1.PodPhase {
	policy := pod.RestartPolicy()
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		if o := containers[c.Name]; !model.IsSidecar(c) && o.State == Exited && o.ExitCode != 0 && policy == v1.RestartPolicyNever {
			return v1.PodFailed
		}
	}
	started, allExited, allSucceeded, willRestart := false, true, true, false
	for i := range pod.Spec.Containers {
		o := containers[pod.Spec.Containers[i].Name]
		switch o.State {
		case Running:
			started = true
			allExited = false
		case Exited:
			started = true
			if o.ExitCode != 0 {
				allSucceeded = false
			}
			if ShouldRestart(policy, o.ExitCode) {
				willRestart = true
			}
		default:
			allExited = false
			allSucceeded = false
		}
	}
	switch {
	case terminated && allExited && allSucceeded:
		return v1.PodSucceeded
	case terminated:
		return v1.PodFailed
	case allExited && !willRestart && allSucceeded:
		return v1.PodSucceeded
	case allExited && !willRestart:
		return v1.PodFailed
	case started:
		return v1.PodRunning
	default:
		return v1.PodPending
	}
}
