package plannertest

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
)

// T0 is the time every scenario counts from: "5s" in a file is T0 + 5 s.
var T0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// At is T0 + d.
func At(d time.Duration) time.Time { return T0.Add(d) }

// ParseTime reads a time as an offset from T0 in Go's duration syntax
// ("0", "1s", "59.5s", "1m").
func ParseTime(s string) (time.Time, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: %w", s, err)
	}
	return At(d), nil
}

// FormatTime writes t as its offset from T0 ("1m0s").
func FormatTime(t time.Time) string { return t.Sub(T0).String() }

// Time reads the time in key=value; a directive without key is an error.
func (d Directive) Time(key string) (time.Time, error) {
	v, ok := d.Get(key)
	if !ok {
		return time.Time{}, d.Errorf("%s= is missing", key)
	}
	t, err := ParseTime(v)
	if err != nil {
		return time.Time{}, d.Errorf("%s: %v", key, err)
	}
	return t, nil
}

// Duration reads the duration in key=value; a directive without key is an
// error.
func (d Directive) Duration(key string) (time.Duration, error) {
	v, ok := d.Get(key)
	if !ok {
		return 0, d.Errorf("%s= is missing", key)
	}
	dur, err := time.ParseDuration(v)
	if err != nil {
		return 0, d.Errorf("%s: %v", key, err)
	}
	return dur, nil
}

// Pod reads a pod description, the arguments of
//
//	pod [policy=Always|OnFailure|Never] [grace=SECONDS] [activeDeadline=SECONDS] ROLE:NAME[.OPTION...] ...
//
// activeDeadline is spec.activeDeadlineSeconds. ROLE is init, sidecar (an init container with restartPolicy Always),
// main or defer; the containers are declared in the order given. The pod is
// default/p; every container runs image busybox. The options (see
// containerOption) give a container hooks, a stop signal, probes or its own
// restart policy and rules: the planner reads only the last two, the pod
// worker's scenarios all of them.
func Pod(d Directive) (*model.Pod, error) {
	p := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}}
	always := v1.ContainerRestartPolicyAlways
	for _, a := range d.Args {
		switch {
		case a.HasVal && a.Key == "policy":
			p.Spec.RestartPolicy = v1.RestartPolicy(a.Val)
		case a.HasVal && a.Key == "grace":
			g, err := strconv.ParseInt(a.Val, 10, 64)
			if err != nil {
				return nil, d.Errorf("grace: %v", err)
			}
			p.Spec.TerminationGracePeriodSeconds = &g
		case a.HasVal && a.Key == "activeDeadline":
			ads, err := strconv.ParseInt(a.Val, 10, 64)
			if err != nil {
				return nil, d.Errorf("activeDeadline: %v", err)
			}
			p.Spec.ActiveDeadlineSeconds = &ads
		case !a.HasVal:
			role, rest, _ := strings.Cut(a.Key, ":")
			parts := splitCalls(rest)
			if parts[0] == "" {
				return nil, d.Errorf("container %q: want ROLE:NAME", a.Key)
			}
			c := v1.Container{Name: parts[0], Image: "busybox"}
			for _, opt := range parts[1:] {
				if err := containerOption(&c, opt); err != nil {
					return nil, d.Errorf("container %q: %v", a.Key, err)
				}
			}
			switch role {
			case "init":
				p.Spec.InitContainers = append(p.Spec.InitContainers, c)
			case "sidecar":
				c.RestartPolicy = &always
				p.Spec.InitContainers = append(p.Spec.InitContainers, c)
			case "main":
				p.Spec.Containers = append(p.Spec.Containers, c)
			case "defer":
				p.Defer = append(p.Defer, c)
			case "ephemeral":
				p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon(c)})
			default:
				return nil, d.Errorf("container %q: role %q is not init, sidecar, main, defer or ephemeral", a.Key, role)
			}
		default:
			return nil, d.Errorf("unknown argument %s=", a.Key)
		}
	}
	return p, nil
}

// containerOption applies one option of a container in Pod:
//
//	.preStop(CMD,ARG...)    an exec preStop hook running CMD ARG...
//	.postStart(CMD,ARG...)  an exec postStart hook
//	.stopSignal(SIG)        lifecycle.stopSignal, e.g. SIGUSR1
//	.startupProbe .readinessProbe .livenessProbe
//	                        an exec probe running "check", every second,
//	                        failing after 3 failures; an argument, as in
//	                        .livenessProbe(5), is the probe's own
//	                        terminationGracePeriodSeconds
//	.restartPolicy(POLICY)  the container's own restartPolicy: Always,
//	                        OnFailure or Never
//	.restartRule(OP,CODE...)
//	                        appends a restartPolicyRules entry with action
//	                        Restart on exit codes OP (In or NotIn) CODE...
//	.restartAllRule(OP,CODE...)
//	                        the same with action RestartAllContainers
func containerOption(c *v1.Container, opt string) error {
	name, args, err := call(opt)
	if err != nil {
		return err
	}
	lifecycle := func() *v1.Lifecycle {
		if c.Lifecycle == nil {
			c.Lifecycle = &v1.Lifecycle{}
		}
		return c.Lifecycle
	}
	switch name {
	case "preStop", "postStart":
		if len(args) == 0 {
			return fmt.Errorf(".%s needs a command", name)
		}
		h := &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: args}}
		if name == "preStop" {
			lifecycle().PreStop = h
		} else {
			lifecycle().PostStart = h
		}
	case "stopSignal":
		if len(args) != 1 {
			return fmt.Errorf(".stopSignal takes 1 argument, not %d", len(args))
		}
		sig := v1.Signal(args[0])
		lifecycle().StopSignal = &sig
	case "startupProbe", "readinessProbe", "livenessProbe":
		if len(args) > 1 {
			return fmt.Errorf(".%s takes at most 1 argument, not %d", name, len(args))
		}
		pr := &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}},
			PeriodSeconds: 1, FailureThreshold: 3, SuccessThreshold: 1, TimeoutSeconds: 1}
		if len(args) == 1 {
			g, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil {
				return fmt.Errorf(".%s: %w", name, err)
			}
			pr.TerminationGracePeriodSeconds = &g
		}
		switch name {
		case "startupProbe":
			c.StartupProbe = pr
		case "readinessProbe":
			c.ReadinessProbe = pr
		default:
			c.LivenessProbe = pr
		}
	case "restartPolicy":
		if len(args) != 1 {
			return fmt.Errorf(".restartPolicy takes 1 argument, not %d", len(args))
		}
		policy := v1.ContainerRestartPolicy(args[0])
		c.RestartPolicy = &policy
	case "restartRule", "restartAllRule":
		if len(args) == 0 {
			return fmt.Errorf(".%s needs an operator", name)
		}
		on := &v1.ContainerRestartRuleOnExitCodes{Operator: v1.ContainerRestartRuleOnExitCodesOperator(args[0])}
		for _, a := range args[1:] {
			code, err := strconv.ParseInt(a, 10, 32)
			if err != nil {
				return fmt.Errorf(".%s: %w", name, err)
			}
			on.Values = append(on.Values, int32(code))
		}
		action := v1.ContainerRestartRuleActionRestart
		if name == "restartAllRule" {
			action = v1.ContainerRestartRuleActionRestartAllContainers
		}
		c.RestartPolicyRules = append(c.RestartPolicyRules, v1.ContainerRestartRule{Action: action, ExitCodes: on})
	default:
		return fmt.Errorf("unknown option .%s", name)
	}
	return nil
}

// Observe reads the arguments of
//
//	observe NAME=OBSERVATION ...
//
// into containers, replacing what was there for each NAME (see
// ParseObserved).
func Observe(d Directive, containers map[string]planner.Observed) error {
	for _, a := range d.Args {
		if !a.HasVal {
			return d.Errorf("%q: want NAME=OBSERVATION", a.Key)
		}
		o, err := ParseObserved(a.Val)
		if err != nil {
			return d.Errorf("%s: %v", a.Key, err)
		}
		containers[a.Key] = o
	}
	return nil
}

// ParseObserved reads one container's observation: a state, then any
// modifiers, each after a dot, with no spaces. Times are offsets from T0.
//
//	waiting                 never started
//	running(T)              running since T, started (postStart done)
//	exited(CODE,T)          exited with CODE at T, after running 1 s
//	.notStarted             not started now nor ever before (Started, StartedOnce false)
//	.started / .startedOnce sets Started / StartedOnce alone
//	.ranFrom(T)             the instance started at T
//	.steps(N) .restarts(N)  backoff steps taken, restart count
//	.stopping(T)            the stop sequence (preStop, then signal) began at T
//	.signalled(T)           the stop signal went out at T (the stop began then too, unless .stopping says otherwise)
//	.killed                 SIGKILL was sent
//	.killAt(T)              the kill time of a stop begun for a failed probe or postStart hook or a resize
//	.probeKilled            the instance was stopped because a probe failed (kept after it exited)
//	.probeFailed(KIND,T)    its liveness or startup probe (KIND) failed at T: a fact, no stop yet
//	.postStartFailed(T)     its postStart hook failed at T: a fact, no stop yet
//	.resizeNeedsRestart(T)  at T its allocated resources needed a restart to apply: a fact, no stop yet
//	.restartedAll           a restart of all containers reset the container
//	.resizeRestart          the instance was stopped for a resize that restarts it (kept after it exited)
//	.configError(T)         the last start failed at T for its configuration (CreateContainerConfigError)
//	.configErrorChanges(N)  the objects had changed N times when it failed (see the objects directive)
func ParseObserved(s string) (planner.Observed, error) {
	calls := splitCalls(s)
	var o planner.Observed
	name, args, err := call(calls[0])
	if err != nil {
		return o, err
	}
	switch {
	case name == "waiting" && len(args) == 0:
		o.State = planner.Waiting
	case name == "running" && len(args) == 1:
		t, err := ParseTime(args[0])
		if err != nil {
			return o, err
		}
		o = planner.Observed{State: planner.Running, Started: true, StartedOnce: true, StartedAt: t}
	case name == "exited" && len(args) == 2:
		code, err := strconv.ParseInt(args[0], 10, 32)
		if err != nil {
			return o, fmt.Errorf("exit code %q: %w", args[0], err)
		}
		t, err := ParseTime(args[1])
		if err != nil {
			return o, err
		}
		o = planner.Observed{State: planner.Exited, StartedOnce: true, StartedAt: t.Add(-time.Second), FinishedAt: t, ExitCode: int32(code)}
	default:
		return o, fmt.Errorf("%q: want waiting, running(T) or exited(CODE,T)", calls[0])
	}
	for _, c := range calls[1:] {
		if err := modify(&o, c); err != nil {
			return o, fmt.Errorf("%s: %w", s, err)
		}
	}
	return o, nil
}

// modify applies one modifier of ParseObserved: its arguments parsed
// (modifierArgs), then set on o (setObserved).
func modify(o *planner.Observed, c string) error {
	name, args, err := call(c)
	if err != nil {
		return err
	}
	t, n, err := modifierArgs(o, name, args)
	if err != nil {
		return err
	}
	return setObserved(o, name, t, n)
}

// modifierArgs checks the count of modifier name's args and parses them:
// a time, or a number (probeFailed also sets which probe failed).
func modifierArgs(o *planner.Observed, name string, args []string) (t time.Time, n int, err error) {
	want := 1
	switch name {
	case "notStarted", "started", "startedOnce", "killed", "probeKilled", "restartedAll", "resizeRestart":
		want = 0
	case "probeFailed":
		want = 2
	}
	if len(args) != want {
		return t, 0, fmt.Errorf(".%s takes %d argument(s), not %d", name, want, len(args))
	}
	switch name {
	case "probeFailed":
		if t, err = ParseTime(args[1]); err != nil {
			return t, 0, err
		}
		switch args[0] {
		case "liveness":
			o.ProbeFailed = planner.LivenessProbe
		case "startup":
			o.ProbeFailed = planner.StartupProbe
		default:
			return t, 0, fmt.Errorf(".probeFailed: probe %q: want liveness or startup", args[0])
		}
	case "ranFrom", "stopping", "signalled", "killAt", "configError", "postStartFailed", "resizeNeedsRestart":
		t, err = ParseTime(args[0])
	case "steps", "restarts", "configErrorChanges":
		if n, err = strconv.Atoi(args[0]); err != nil {
			err = fmt.Errorf(".%s: %w", name, err)
		}
	}
	return t, n, err
}

// setObserved sets on o what modifier name says, with its parsed time t or
// number n.
func setObserved(o *planner.Observed, name string, t time.Time, n int) error {
	switch name {
	case "notStarted":
		o.Started, o.StartedOnce = false, false
	case "started":
		o.Started = true
	case "startedOnce":
		o.StartedOnce = true
	case "killed":
		o.Killed = true
	case "probeKilled":
		o.ProbeKilled = true
	case "restartedAll":
		o.RestartedAll = true
	case "resizeRestart":
		o.ResizeRestart = true
	case "ranFrom":
		o.StartedAt = t
	case "stopping":
		o.StopRequestedAt = t
	case "signalled":
		o.SignalledAt = t
		if o.StopRequestedAt.IsZero() {
			o.StopRequestedAt = t
		}
	case "killAt":
		o.KillAt = t
	case "probeFailed":
		o.ProbeFailedAt = t
	case "postStartFailed":
		o.PostStartFailedAt = t
	case "resizeNeedsRestart":
		o.ResizeNeedsRestartAt = t
	case "steps":
		o.BackoffSteps = n
	case "restarts":
		o.Restarts = n
	case "configError":
		o.ConfigErrorAt = t
	case "configErrorChanges":
		o.ConfigErrorChanges = uint64(n)
	default:
		return fmt.Errorf("unknown modifier .%s", name)
	}
	return nil
}

// splitCalls splits "a(1,2.5s).b.c(3)" at the dots outside parentheses.
func splitCalls(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case '.':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// call splits "name(a,b)" into its name and arguments; "name" has none.
func call(s string) (string, []string, error) {
	name, rest, ok := strings.Cut(s, "(")
	if !ok {
		return s, nil, nil
	}
	inner, ok := strings.CutSuffix(rest, ")")
	if !ok || inner == "" {
		return "", nil, fmt.Errorf("%q: want name(ARG,...)", s)
	}
	return name, strings.Split(inner, ","), nil
}

// Terminate reads the arguments of
//
//	terminate requested=T deadline=T [rundefer]
func Terminate(d Directive) (*planner.Termination, error) {
	req, err := d.Time("requested")
	if err != nil {
		return nil, err
	}
	deadline, err := d.Time("deadline")
	if err != nil {
		return nil, err
	}
	for _, a := range d.Args {
		if a.Key != "requested" && a.Key != "deadline" && a.Key != "rundefer" {
			return nil, d.Errorf("unknown argument %q", a.Key)
		}
	}
	return &planner.Termination{RequestedAt: req, Deadline: deadline, RunDefer: d.Has("rundefer")}, nil
}

// RestartAll reads the arguments of
//
//	restartall trigger=NAME code=N at=T
func RestartAll(d Directive) (*planner.RestartAll, error) {
	at, err := d.Time("at")
	if err != nil {
		return nil, err
	}
	trigger, ok := d.Get("trigger")
	if !ok || trigger == "" {
		return nil, d.Errorf("want trigger=NAME")
	}
	codeText, _ := d.Get("code")
	code, err := strconv.ParseInt(codeText, 10, 32)
	if err != nil {
		return nil, d.Errorf("code: %v", err)
	}
	for _, a := range d.Args {
		if a.Key != "trigger" && a.Key != "code" && a.Key != "at" {
			return nil, d.Errorf("unknown argument %q", a.Key)
		}
	}
	return &planner.RestartAll{Trigger: trigger, ExitCode: int32(code), At: at}, nil
}

// Configure applies the arguments of
//
//	config [backoffBase=D] [backoffMax=D] [backoffReset=D] [promptKill=D] [sidecarRestartMax=D] [minStopGrace=D]
//
// to c; what a directive does not name keeps its value.
func Configure(d Directive, c *planner.Config) error {
	fields := map[string]*time.Duration{
		"backoffBase":       &c.BackoffBase,
		"backoffMax":        &c.BackoffMax,
		"backoffReset":      &c.BackoffReset,
		"promptKill":        &c.PromptKill,
		"sidecarRestartMax": &c.SidecarRestartMax,
		"minStopGrace":      &c.MinStopGrace,
	}
	for _, a := range d.Args {
		f, ok := fields[a.Key]
		if !ok || !a.HasVal {
			return d.Errorf("unknown argument %q", a.Key)
		}
		v, err := d.Duration(a.Key)
		if err != nil {
			return err
		}
		*f = v
	}
	return nil
}

// Scenario is the planner input a file's blocks build up, directive by
// directive (see Apply).
type Scenario struct {
	Pod         *model.Pod
	Containers  map[string]planner.Observed
	Termination *planner.Termination
	// StartTime is the pod's status.startTime; zero until a starttime
	// directive sets it.
	StartTime time.Time
	// RestartAll is the restart of all containers in progress; nil until
	// a restartall directive sets it.
	RestartAll *planner.RestartAll
	// ObjectChanges is the planner's Input.ObjectChanges (objects
	// changes=N).
	ObjectChanges uint64
	Config        planner.Config
}

// Apply carries out one of the input directives — pod (which starts a new
// scenario: no observations, no termination, no start time, the default
// config), observe, terminate, starttime (starttime at=T), restartall,
// config, objects (objects changes=N: Input.ObjectChanges) and
// activedeadline (activedeadline seconds=N: the pod's
// spec.activeDeadlineSeconds becomes N, everything else kept, as an update
// of the running pod sets or lowers it) — and reports whether d was one of
// them.
func (s *Scenario) Apply(d Directive) (bool, error) {
	var err error
	switch d.Cmd {
	case "pod":
		var p *model.Pod
		if p, err = Pod(d); err == nil {
			*s = Scenario{Pod: p, Containers: map[string]planner.Observed{}, Config: planner.DefaultConfig()}
		}
	case "observe", "terminate", "starttime", "restartall", "config", "activedeadline", "objects":
		if s.Pod == nil {
			return true, d.Errorf("no pod yet")
		}
		switch d.Cmd {
		case "activedeadline":
			err = s.setActiveDeadline(d)
		case "observe":
			err = Observe(d, s.Containers)
		case "terminate":
			s.Termination, err = Terminate(d)
		case "starttime":
			s.StartTime, err = d.Time("at")
		case "objects":
			err = s.setObjectChanges(d)
		case "restartall":
			s.RestartAll, err = RestartAll(d)
		case "config":
			err = Configure(d, &s.Config)
		}
	default:
		return false, nil
	}
	return true, err
}

// setObjectChanges reads objects changes=N: the objects pods read have
// changed N times (Input.ObjectChanges).
func (s *Scenario) setObjectChanges(d Directive) error {
	if len(d.Args) != 1 || d.Args[0].Key != "changes" || !d.Args[0].HasVal {
		return d.Errorf("want objects changes=N")
	}
	n, err := strconv.ParseUint(d.Args[0].Val, 10, 64)
	if err != nil {
		return d.Errorf("changes: %v", err)
	}
	s.ObjectChanges = n
	return nil
}

// setActiveDeadline reads activedeadline seconds=N: a new pod, the
// scenario's with spec.activeDeadlineSeconds N.
func (s *Scenario) setActiveDeadline(d Directive) error {
	if len(d.Args) != 1 || d.Args[0].Key != "seconds" || !d.Args[0].HasVal {
		return d.Errorf("want activedeadline seconds=N")
	}
	n, err := strconv.ParseInt(d.Args[0].Val, 10, 64)
	if err != nil {
		return d.Errorf("seconds: %v", err)
	}
	p := &model.Pod{Pod: s.Pod.Pod.DeepCopy(), Defer: s.Pod.Defer}
	p.Spec.ActiveDeadlineSeconds = &n
	s.Pod = p
	return nil
}

// Input is the planner input of the scenario at now.
func (s *Scenario) Input(now time.Time) planner.Input {
	return planner.Input{Pod: s.Pod, Containers: s.Containers, Termination: s.Termination, StartTime: s.StartTime, RestartAll: s.RestartAll, ObjectChanges: s.ObjectChanges, Now: now, Config: s.Config}
}

// RenderPlan writes a plan one line per item: the actions in order, the
// backoffs, then WakeAt, Completed, ActiveDeadlineExceeded, RestartAll,
// ResetContainers, Done and DeferIncomplete when set;
// "(empty plan)" when it has none of them. Times are offsets from T0.
func RenderPlan(p planner.Plan) string {
	var out []string
	for _, a := range p.Actions {
		s := a.Kind.String() + " " + a.Container.Name
		switch a.Kind {
		case planner.Start:
			s += fmt.Sprintf(" steps=%d", a.BackoffSteps)
		case planner.Stop:
			s += fmt.Sprintf(" preStop=%t killAt=%s reason=%s", a.PreStop, FormatTime(a.KillAt), a.Reason)
		case planner.Kill:
			s += fmt.Sprintf(" reason=%s", a.Reason)
		}
		out = append(out, s)
	}
	for _, b := range p.Backoffs {
		out = append(out, fmt.Sprintf("Backoff %s until=%s", b.Container.Name, FormatTime(b.Until)))
	}
	if !p.WakeAt.IsZero() {
		out = append(out, "WakeAt "+FormatTime(p.WakeAt))
	}
	if p.Completed {
		out = append(out, "Completed")
	}
	if p.ActiveDeadlineExceeded {
		out = append(out, "ActiveDeadlineExceeded")
	}
	if r := p.RestartAll; r != nil {
		out = append(out, fmt.Sprintf("RestartAll trigger=%s code=%d at=%s", r.Trigger, r.ExitCode, FormatTime(r.At)))
	}
	if p.ResetContainers {
		out = append(out, fmt.Sprintf("ResetContainers steps=%d", p.ResetBackoffSteps))
	}
	if p.Done {
		out = append(out, "Done")
	}
	if len(p.DeferIncomplete) > 0 {
		out = append(out, "DeferIncomplete "+strings.Join(p.DeferIncomplete, ","))
	}
	if len(out) == 0 {
		return "(empty plan)"
	}
	return strings.Join(out, "\n")
}

// RenderTermination writes a termination on one line.
func RenderTermination(t planner.Termination) string {
	return fmt.Sprintf("Termination requested=%s deadline=%s rundefer=%t", FormatTime(t.RequestedAt), FormatTime(t.Deadline), t.RunDefer)
}
