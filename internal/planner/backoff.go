package planner

import (
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

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
	// MinStopGrace is the least time a container gets after its stop
	// signal before SIGKILL, whatever the deadline or a prompt or probe
	// kill time say (see KillTime). Kubernetes: 2 s, the kubelet's
	// minimumGracePeriodInSeconds. Tests with a real clock may lower it.
	MinStopGrace time.Duration
}

// DefaultConfig is Kubernetes' timing plus podward's termination settings.
func DefaultConfig() Config {
	return Config{
		BackoffBase:       10 * time.Second,
		BackoffMax:        5 * time.Minute,
		BackoffReset:      10 * time.Minute,
		PromptKill:        2 * time.Second,
		SidecarRestartMax: time.Second,
		MinStopGrace:      2 * time.Second,
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
// restart due at or after notAfter (when set) is not planned at all.
func (p *Plan) restart(in *Input, ref model.ContainerRef, o Observed, maxDelay time.Duration, notAfter time.Time) {
	at := in.Config.RetryAt(o, maxDelay)
	if !notAfter.IsZero() && !at.Before(notAfter) {
		return
	}
	if !in.Now.Before(at) {
		p.Actions = append(p.Actions, Action{Kind: Start, Container: ref, BackoffSteps: in.Config.steps(o) + 1})
		return
	}
	p.Backoffs = append(p.Backoffs, Backoff{Container: ref, Until: at})
	p.wake(at)
}

// restarts says whether the exited instance o of regular or init
// container c of pod is restarted, in the kubelet's order of precedence
// (pkg/api/v1/pod/util.go, ContainerShouldRestart): when the container sets
// its own restartPolicy, the first of its restartPolicyRules that matches the
// exit code decides (action Restart restarts it; RestartAllContainers
// restarts the whole pod instead, see restartAllContainers), then that
// restartPolicy; otherwise the pod's restartPolicy (ShouldRestart). An
// instance stopped because its liveness or startup probe failed restarts
// whenever the container is restartable at all, whatever its exit code
// (Restartable) — the kubelet kills it and starts it again in one step
// (pkg/kubelet/kuberuntime/kuberuntime_manager.go, computePodActions); so
// does one whose probe failed and that exited before its stop was planned
// (Observed.ProbeFailed).
func restarts(pod *model.Pod, c *v1.Container, o Observed) bool {
	if o.ProbeKilled || o.ProbeFailed != 0 {
		return Restartable(pod, c)
	}
	if c == nil || c.RestartPolicy == nil {
		return ShouldRestart(pod.RestartPolicy(), o.ExitCode)
	}
	if rule, ok := matchingRestartRule(c, o.ExitCode); ok {
		return rule.Action == v1.ContainerRestartRuleActionRestart
	}
	// A container's policy has the pod policy's values and meaning.
	return ShouldRestart(v1.RestartPolicy(*c.RestartPolicy), o.ExitCode)
}

// Restartable says whether regular container c of pod is restarted after a
// failed liveness or startup probe stopped it, as the kubelet decides it
// when it kills the container (kuberuntime_manager.go, computePodActions):
// by its own restartPolicy when it sets one (anything but Never), else by
// the pod's (anything but Never). Its restart rules are not read: the
// container was running, so there was no exit code for them to match. The
// Killing event says "will be restarted" exactly when this holds. c may be
// nil (the pod's policy decides).
func Restartable(pod *model.Pod, c *v1.Container) bool {
	if c == nil || c.RestartPolicy == nil {
		return pod.RestartPolicy() != v1.RestartPolicyNever
	}
	return *c.RestartPolicy != v1.ContainerRestartPolicyNever
}

// matchingRestartRule returns the first of c's restart rules that matches
// exitCode: In when the code is among the values, NotIn when it is not
// (pkg/api/v1/pod/util.go, findMatchingContainerRestartRule). A rule
// without exitCodes or with another operator never matches.
func matchingRestartRule(c *v1.Container, exitCode int32) (v1.ContainerRestartRule, bool) {
	for _, rule := range c.RestartPolicyRules {
		if rule.ExitCodes == nil {
			continue
		}
		in := slices.Contains(rule.ExitCodes.Values, exitCode)
		switch rule.ExitCodes.Operator {
		case v1.ContainerRestartRuleOnExitCodesOpIn:
			if in {
				return rule, true
			}
		case v1.ContainerRestartRuleOnExitCodesOpNotIn:
			if !in {
				return rule, true
			}
		}
	}
	return v1.ContainerRestartRule{}, false
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
