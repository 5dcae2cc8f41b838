package podworker

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner/plannertest"
)

// queries lists the Workers' queries that answer true for the pod.
func (s *scenario) queries() string {
	if s.w == nil {
		return "queries: the agent is down"
	}
	var yes []string
	for _, q := range []struct {
		name string
		f    func(types.UID) bool
	}{
		{"IsPodTerminationRequested", s.w.IsPodTerminationRequested},
		{"ShouldPodContainersBeTerminating", s.w.ShouldPodContainersBeTerminating},
		{"CouldHaveRunningContainers", s.w.CouldHaveRunningContainers},
		{"ShouldPodContentBeRemoved", s.w.ShouldPodContentBeRemoved},
		{"IsPodKnownTerminated", s.w.IsPodKnownTerminated},
	} {
		if q.f(scenarioUID) {
			yes = append(yes, q.name)
		}
	}
	if len(yes) == 0 {
		return "queries true: none"
	}
	return "queries true: " + strings.Join(yes, " ")
}

// checkpoint renders the pod's checkpoint as last saved.
func (s *scenario) checkpoint() ([]string, error) {
	s.cps.mu.Lock()
	failed := s.cps.failed
	s.cps.mu.Unlock()
	data := s.cps.get(scenarioUID)
	if data == nil {
		return []string{"checkpoint none"}, nil
	}
	cp, err := decodeCheckpoint(data)
	if err != nil {
		return nil, err
	}
	head := "checkpoint " + cp.Phase.String()
	if t := cp.Termination; t != nil {
		head += fmt.Sprintf(" reason=%s requested=%s deadline=%s", cp.TermReason, at(t.RequestedAt), at(t.Deadline))
		if t.RunDefer {
			head += " rundefer"
		}
	}
	if r := cp.RestartAll; r != nil {
		head += fmt.Sprintf(" restartAll(trigger=%s,code=%d,at=%s)", r.Trigger, r.ExitCode, at(r.At))
	}
	if failed > 0 {
		head += fmt.Sprintf(" (failed saves: %d)", failed)
	}
	out := []string{head}
	for _, ref := range s.pod.Containers() {
		r, ok := cp.Containers[ref.Name]
		if !ok {
			continue
		}
		o := r.Observed
		state, err := stateFromRecord(o.State)
		if err != nil {
			return nil, fmt.Errorf("checkpoint of %s: %w", ref.Name, err)
		}
		line := fmt.Sprintf("  %s %s", ref.Name, strings.ToLower(state.String()))
		if r.ID != "" {
			line += " id=" + r.ID
		}
		if o.Restarts > 0 {
			line += fmt.Sprintf(" restarts=%d", o.Restarts)
		}
		if p := r.Pending; p != nil {
			line += fmt.Sprintf(" pending(attempt=%d,steps=%d)", p.Attempt, p.BackoffSteps)
		}
		if !o.StopRequestedAt.IsZero() {
			line += " stopping=" + at(o.StopRequestedAt)
		}
		if !o.SignalledAt.IsZero() {
			line += " signalled=" + at(o.SignalledAt)
		}
		if o.Killed {
			line += " killed"
		}
		if o.ProbeKilled {
			line += " probeKilled"
		}
		if o.RestartedAll {
			line += fmt.Sprintf(" restartedAll steps=%d", o.BackoffSteps)
		}
		if o.ResizeRestart {
			line += " resizeRestart"
		}
		if r.Ready {
			line += " ready"
		}
		out = append(out, line)
	}
	return out, nil
}

// status renders what the state line leaves out of the published status:
// the QoS class, every condition with its reason and message, the
// containers whose ready flag is set (a completed init container's
// included) and deletionGracePeriodSeconds.
func (s *scenario) status() []string {
	pod, _, ok := s.podStatus()
	if !ok {
		return []string{"status: no worker"}
	}
	st := pod.Status
	head := "status qosClass=" + string(st.QOSClass)
	if st.ObservedGeneration != 0 {
		head += fmt.Sprintf(" observedGeneration=%d", st.ObservedGeneration)
	}
	out := []string{head}
	for _, c := range st.Conditions {
		line := fmt.Sprintf("  condition %s %s", c.Type, c.Status)
		if c.Reason != "" {
			line += " reason=" + c.Reason
		}
		if c.Message != "" {
			line += fmt.Sprintf(" %q", c.Message)
		}
		if c.ObservedGeneration != 0 {
			line += fmt.Sprintf(" gen=%d", c.ObservedGeneration)
		}
		out = append(out, line)
	}
	var ready []string
	for _, cs := range slices.Concat(st.InitContainerStatuses, st.ContainerStatuses) {
		if cs.Ready {
			ready = append(ready, cs.Name)
		}
	}
	if len(ready) == 0 {
		ready = []string{"none"}
	}
	out = append(out, "  ready: "+strings.Join(ready, " "))
	for _, cs := range slices.Concat(st.InitContainerStatuses, st.ContainerStatuses) {
		if cs.Resources != nil {
			out = append(out, fmt.Sprintf("  resources %s: limits cpu=%s memory=%s", cs.Name, cs.Resources.Limits.Cpu(), cs.Resources.Limits.Memory()))
		}
		if spec := (&model.Pod{Pod: pod}).Container(findRef(&model.Pod{Pod: pod}, cs.Name)); spec != nil && !equality.Semantic.DeepEqual(cs.AllocatedResources, spec.Resources.Requests) {
			out = append(out, fmt.Sprintf("  allocated %s: requests cpu=%s memory=%s", cs.Name, cs.AllocatedResources.Cpu(), cs.AllocatedResources.Memory()))
		}
	}
	if g := pod.DeletionGracePeriodSeconds; g != nil {
		out = append(out, fmt.Sprintf("  deletionGracePeriodSeconds=%d", *g))
	}
	return out
}

// render writes what happened since the previous render — the runtime's
// calls, then the pod's events — and the state now.
func (s *scenario) render() []string {
	var out []string
	calls := s.rt.Calls()
	for _, c := range calls[s.calls:] {
		out = append(out, "call "+c)
	}
	s.calls = len(calls)
	evs := s.rec.List(scenarioUID)
	for _, e := range evs[min(s.events, len(evs)):] {
		out = append(out, fmt.Sprintf("event %s %s: %s", e.Type, e.Reason, e.Message))
	}
	s.events = len(evs)
	return append(out, s.state()...)
}

// state renders the pod as its worker last published it, and the
// containers the runtime runs.
func (s *scenario) state() []string {
	var out []string
	now := "at " + at(s.clk.Now())
	switch pod, phase, ok := s.podStatus(); {
	case s.w == nil:
		out = append(out, now+": the agent is down")
	case !ok:
		out = append(out, now+": no worker")
	default:
		out = append(out, s.podLine(now, pod, phase))
		st := pod.Status
		for _, cs := range slices.Concat(st.InitContainerStatuses, st.ContainerStatuses, (&model.Pod{Pod: pod}).DeferStatuses()) {
			out = append(out, "  "+containerLine(cs))
		}
		for _, cs := range st.EphemeralContainerStatuses {
			out = append(out, "  ephemeral "+containerLine(cs))
		}
	}
	running := s.rt.Running(scenarioUID)
	var names []string
	for _, ref := range s.pod.Containers() {
		if slices.Contains(running, ref.Name) {
			names = append(names, ref.Name)
		}
	}
	if len(names) == 0 {
		names = []string{"none"}
	}
	return append(out, "runtime running: "+strings.Join(names, " "))
}

func (s *scenario) podStatus() (*v1.Pod, Phase, bool) {
	if s.w == nil {
		return nil, 0, false
	}
	return s.w.PodStatus(scenarioUID)
}

// podLine is the first line of the state: the worker's phase, the pod's
// (with its reason and message when it has them), its Ready condition, its
// deletion and whether its goroutine returned.
func (s *scenario) podLine(now string, pod *v1.Pod, phase Phase) string {
	line := fmt.Sprintf("%s: %s, pod %s", now, phase, pod.Status.Phase)
	if r := pod.Status.Reason; r != "" {
		line += fmt.Sprintf(" (%s: %q)", r, pod.Status.Message)
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == v1.PodReady && c.Status == v1.ConditionTrue {
			line += ", ready"
		}
	}
	if ts := pod.DeletionTimestamp; ts != nil {
		line += ", deleted: deadline " + at(ts.Time)
		if g := pod.DeletionGracePeriodSeconds; g != nil {
			line += fmt.Sprintf(" (grace %ds)", *g)
		}
	}
	select {
	case <-s.w.Done(scenarioUID):
		line += ", worker returned"
	default:
	}
	return line
}

// containerLine renders one container's status: its state (running,
// exited(CODE,REASON) or waiting REASON), then started, ready, its restart
// count and how its previous instance ended.
func containerLine(cs v1.ContainerStatus) string {
	line := cs.Name + " "
	switch st := cs.State; {
	case st.Running != nil:
		line += "running"
		if cs.Started != nil && *cs.Started {
			line += " started"
		}
		if cs.Ready {
			line += " ready"
		}
	case st.Terminated != nil:
		line += terminated(st.Terminated)
	case st.Waiting != nil:
		line += "waiting " + st.Waiting.Reason
		if st.Waiting.Message != "" {
			line += fmt.Sprintf(" %q", st.Waiting.Message)
		}
	default:
		line += "(no state)"
	}
	if cs.RestartCount > 0 {
		line += fmt.Sprintf(" restarts=%d", cs.RestartCount)
	}
	if l := cs.LastTerminationState.Terminated; l != nil {
		line += " last=" + terminated(l)
	}
	return line
}

func terminated(t *v1.ContainerStateTerminated) string {
	s := fmt.Sprintf("exited(%d,%s)", t.ExitCode, t.Reason)
	if t.Message != "" {
		s += fmt.Sprintf(" %q", t.Message)
	}
	return s
}

// at writes a time as its offset from plannertest.T0.
func at(t time.Time) string { return plannertest.FormatTime(t) }
