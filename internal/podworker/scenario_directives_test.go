package podworker

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner/plannertest"
	"github.com/podward/podward/internal/prober"
)

// apply carries out a directive that is not a query; it reports whether
// the directive acts (and is to be followed by a settle) rather than only
// setting the machine up.
func (s *scenario) apply(d plannertest.Directive) (bool, error) {
	switch d.Cmd {
	case "ignore-term":
		name, err := s.containerArg(d)
		if err != nil {
			return false, err
		}
		s.rt.IgnoreStopSignal(name)
		return false, nil
	case "block-setup", "block-cleanup", "block-start", "block-hook":
		return false, s.block(d)
	case "fail-hook":
		return false, s.failHook(d)
	case "fail-resize":
		on, err := onOff(d)
		if err != nil {
			return false, err
		}
		var err2 error
		if on {
			err2 = errors.New("memory limit below usage")
		}
		s.rt.FailResize(err2)
		return false, nil
	case "fail-config":
		// fail-config NAME on|off: NAME's starts fail for its
		// configuration (`configmap "cfg" not found`), or no more.
		if len(d.Args) != 2 || d.Args[0].HasVal || d.Args[1].HasVal || (d.Args[1].Key != "on" && d.Args[1].Key != "off") {
			return false, d.Errorf("want fail-config NAME on|off")
		}
		s.mu.Lock()
		s.failConfig[d.Args[0].Key] = d.Args[1].Key == "on"
		s.mu.Unlock()
		return false, nil
	case "fail-checkpoints", "fail-list", "fail-setup":
		on, err := onOff(d)
		if err != nil {
			return false, err
		}
		if d.Cmd != "fail-checkpoints" {
			s.mu.Lock()
			if d.Cmd == "fail-list" {
				s.failList = on
			} else {
				s.failSetup = on
			}
			s.mu.Unlock()
		} else {
			s.cps.mu.Lock()
			s.cps.fail = on
			s.cps.mu.Unlock()
		}
		return false, nil
	case "stop-agent", "start-agent", "restart":
		return true, s.agent(d)
	case "allocatable":
		return false, s.setAllocatable(d)
	case "readiness-gate":
		// spec.readinessGates gets a gate of condition type TYPE; the
		// next update hands the pod over.
		if len(d.Args) != 1 || d.Args[0].HasVal {
			return false, d.Errorf("want readiness-gate TYPE")
		}
		next := &model.Pod{Pod: s.pod.Pod.DeepCopy(), Defer: s.pod.Defer}
		next.Spec.ReadinessGates = append(next.Spec.ReadinessGates, v1.PodReadinessGate{ConditionType: v1.PodConditionType(d.Args[0].Key)})
		s.pod = next
		return false, nil
	}
	return true, s.act(d)
}

// setAllocatable reads allocatable cpu=Q memory=Q: the node's allocatable
// resources, for Workers made afresh (before the pod's first update).
func (s *scenario) setAllocatable(d plannertest.Directive) error {
	if s.w != nil && s.w.get(scenarioUID) != nil {
		return d.Errorf("allocatable comes before the pod's first update")
	}
	list, err := resourceArgs(d, d.Args)
	if err != nil {
		return err
	}
	s.allocatable = list
	if s.w != nil {
		s.stopAgent(true)
	}
	s.startAgent()
	return nil
}

// resourceArgs reads cpu=Q and memory=Q arguments.
func resourceArgs(d plannertest.Directive, args []plannertest.Arg) (v1.ResourceList, error) {
	list := v1.ResourceList{}
	for _, a := range args {
		if !a.HasVal || (a.Key != "cpu" && a.Key != "memory") {
			return nil, d.Errorf("want cpu=Q or memory=Q, not %q", a.Key)
		}
		q, err := resource.ParseQuantity(a.Val)
		if err != nil {
			return nil, d.Errorf("%s: %v", a.Key, err)
		}
		list[v1.ResourceName(a.Key)] = q
	}
	return list, nil
}

// otherPod is another pod of the node, NAME, with one regular container
// of its name requesting what the directive says (other-pod NAME cpu=Q
// memory=Q): its UID is "other-NAME".
func otherPod(d plannertest.Directive) (*model.Pod, error) {
	if len(d.Args) < 1 || d.Args[0].HasVal {
		return nil, d.Errorf("want other-pod NAME [cpu=Q] [memory=Q]")
	}
	name := d.Args[0].Key
	req, err := resourceArgs(d, d.Args[1:])
	if err != nil {
		return nil, err
	}
	p := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("other-" + name)}}}
	p.Spec.Containers = []v1.Container{{Name: name, Image: "busybox", Resources: v1.ResourceRequirements{Requests: req}}}
	return p, nil
}

// findRef is the ref of the container name of pod, a zero ref if none.
func findRef(pod *model.Pod, name string) model.ContainerRef {
	for _, ref := range pod.Containers() {
		if ref.Name == name {
			return ref
		}
	}
	return model.ContainerRef{}
}

// act carries out a directive that changes what the worker sees.
func (s *scenario) act(d plannertest.Directive) error {
	switch d.Cmd {
	case "update", "kill":
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		opts := UpdateOptions{Pod: s.pod}
		if d.Cmd == "kill" {
			k, err := killOptions(d)
			if err != nil {
				return err
			}
			opts.Kill = k
		}
		s.w.UpdatePod(opts)
	case "objects-changed":
		// ConfigMaps or Secrets changed. Until the inbox has the input
		// that carries such news, the worker is told as that input's
		// handling will: on its goroutine's behalf while it is blocked
		// (the settle), then woken. The ring orders the write before
		// the goroutine's reads.
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		s.w.mu.Lock()
		pw := s.w.pods[s.pod.UID]
		s.w.mu.Unlock()
		if pw == nil {
			return d.Errorf("no worker")
		}
		pw.retryConfigNow()
		pw.inbox.ring()
	case "activedeadline":
		// An update of the running pod that sets or lowers its
		// spec.activeDeadlineSeconds, as the agent hands it over: a new
		// pod with the new value.
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		if len(d.Args) != 1 || d.Args[0].Key != "seconds" || !d.Args[0].HasVal {
			return d.Errorf("want activedeadline seconds=N")
		}
		n, err := strconv.ParseInt(d.Args[0].Val, 10, 64)
		if err != nil {
			return d.Errorf("seconds: %v", err)
		}
		next := &model.Pod{Pod: s.pod.Pod.DeepCopy(), Defer: s.pod.Defer}
		next.Spec.ActiveDeadlineSeconds = &n
		s.pod = next
		s.w.UpdatePod(UpdateOptions{Pod: next})
	case "condition":
		// The pod's source has condition TYPE with STATUS: another
		// controller set it through the status subresource (a readiness
		// gate's), and the agent hands over the pod with it.
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		if len(d.Args) != 2 || d.Args[0].HasVal || d.Args[1].HasVal {
			return d.Errorf("want condition TYPE True|False|Unknown")
		}
		c := v1.PodCondition{Type: v1.PodConditionType(d.Args[0].Key), Status: v1.ConditionStatus(d.Args[1].Key), LastTransitionTime: metav1.NewTime(plannertest.T0)}
		next := &model.Pod{Pod: s.pod.Pod.DeepCopy(), Defer: s.pod.Defer}
		conds := slices.DeleteFunc(next.Status.Conditions, func(o v1.PodCondition) bool { return o.Type == c.Type })
		next.Status.Conditions = append(conds, c)
		s.pod = next
		s.w.UpdatePod(UpdateOptions{Pod: next})
	case "debug":
		// An ephemeral container added to the running pod, as
		// agent.AddEphemeralContainers hands it over: a new pod with the
		// grown list.
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		if len(d.Args) != 1 || d.Args[0].HasVal {
			return d.Errorf("want debug NAME")
		}
		next := &model.Pod{Pod: s.pod.Pod.DeepCopy(), Defer: s.pod.Defer}
		next.Spec.EphemeralContainers = append(next.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: d.Args[0].Key, Image: "busybox"},
		})
		s.pod = next
		s.w.UpdatePod(UpdateOptions{Pod: next})
	case "resize":
		// The resize subresource, as the agent hands it over: a new pod
		// whose container NAME has the new limits (and requests, the same).
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		if len(d.Args) < 2 || d.Args[0].HasVal {
			return d.Errorf("want resize NAME cpu=Q|memory=Q|restart=RESOURCE...")
		}
		next := &model.Pod{Pod: s.pod.Pod.DeepCopy(), Defer: s.pod.Defer}
		// The API server bumps metadata.generation on a change of the
		// spec; it is 1 from the pod's creation (a scenario's pod has
		// none until its first resize).
		next.Generation = max(next.Generation, 1) + 1
		c := next.Container(findRef(next, d.Args[0].Key))
		if c == nil {
			return d.Errorf("no container %q", d.Args[0].Key)
		}
		for _, a := range d.Args[1:] {
			switch a.Key {
			case "cpu", "memory":
				q, err := resource.ParseQuantity(a.Val)
				if err != nil {
					return d.Errorf("%s: %v", a.Key, err)
				}
				if c.Resources.Limits == nil {
					c.Resources.Limits, c.Resources.Requests = v1.ResourceList{}, v1.ResourceList{}
				}
				c.Resources.Limits[v1.ResourceName(a.Key)] = q
				c.Resources.Requests[v1.ResourceName(a.Key)] = q
			case "restart":
				c.ResizePolicy = append(c.ResizePolicy, v1.ContainerResizePolicy{ResourceName: v1.ResourceName(a.Val), RestartPolicy: v1.RestartContainer})
			default:
				return d.Errorf("unknown resize argument %q", a.Key)
			}
		}
		s.pod = next
		s.w.UpdatePod(UpdateOptions{Pod: next})
	case "other-pod":
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		p, err := otherPod(d)
		if err != nil {
			return err
		}
		s.others[p.Name] = p
		s.w.UpdatePod(UpdateOptions{Pod: p})
	case "kill-other":
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		if len(d.Args) != 1 || d.Args[0].HasVal || s.others[d.Args[0].Key] == nil {
			return d.Errorf("want kill-other NAME, a pod of other-pod")
		}
		s.w.UpdatePod(UpdateOptions{Pod: s.others[d.Args[0].Key], Kill: &KillOptions{Reason: TerminationDeleted}})
	case "exit", "exit-quietly":
		if len(d.Args) != 2 || d.Args[0].HasVal || d.Args[1].HasVal {
			return d.Errorf("want %s NAME CODE", d.Cmd)
		}
		name := d.Args[0].Key
		code, err := strconv.ParseInt(d.Args[1].Key, 10, 32)
		if err != nil {
			return d.Errorf("exit code: %v", err)
		}
		if !slices.Contains(s.rt.Running(scenarioUID), name) {
			return d.Errorf("%s is not running", name)
		}
		if d.Cmd == "exit" {
			s.rt.Exit(scenarioUID, name, int32(code))
		} else {
			s.rt.ExitQuietly(scenarioUID, name, int32(code))
		}
	case "advance":
		if len(d.Args) != 1 || d.Args[0].HasVal {
			return d.Errorf("want advance DURATION")
		}
		dur, err := time.ParseDuration(d.Args[0].Key)
		if err != nil {
			return d.Errorf("%v", err)
		}
		s.clk.Step(dur)
	case "unblock":
		s.unblock()
	case "reboot":
		s.rt.Reboot()
	case "rerun":
		// The agent's Rerun, from the checkpoint last saved: on these
		// Workers (a shutdown cancelled), or on new ones (after a reboot).
		data := s.cps.get(scenarioUID)
		if data == nil {
			return d.Errorf("no checkpoint to start the pod again from")
		}
		if s.w == nil {
			s.startAgent()
		}
		if err := s.w.Rerun(s.pod, data); err != nil {
			return d.Errorf("%v", err)
		}
	case "probe":
		if s.w == nil {
			return d.Errorf("the agent is down")
		}
		return s.probe(d)
	default:
		return d.Errorf("unknown directive")
	}
	return nil
}

// agent stops the agent, starts it again and restores the pod from its
// checkpoint, or both.
func (s *scenario) agent(d plannertest.Directive) error {
	if d.Cmd != "start-agent" {
		if s.w == nil {
			return d.Errorf("the agent is down already")
		}
		s.stopAgent(false)
	}
	if d.Cmd == "stop-agent" {
		return nil
	}
	if s.w != nil {
		return d.Errorf("the agent runs already")
	}
	data := s.cps.get(scenarioUID)
	if data == nil {
		return d.Errorf("no checkpoint to restore from")
	}
	s.startAgent()
	if err := s.w.Restore(s.pod, data); err != nil {
		return d.Errorf("%v", err)
	}
	return nil
}

// block holds the pod's setup, its clean-up, the starts of a container or
// the hooks running a command, until unblock.
func (s *scenario) block(d plannertest.Directive) error {
	what := strings.TrimPrefix(d.Cmd, "block-")
	switch d.Cmd {
	case "block-start", "block-hook":
		if len(d.Args) != 1 || d.Args[0].HasVal {
			return d.Errorf("want %s NAME", d.Cmd)
		}
		what += " " + d.Args[0].Key
	default:
		if len(d.Args) != 0 {
			return d.Errorf("takes no arguments")
		}
	}
	s.mu.Lock()
	s.held[what] = true
	s.mu.Unlock()
	return nil
}

// failHook reads fail-hook CMD [code=N] [output=WORD]: the hooks running
// CMD exit with N (default 1) and print WORD.
func (s *scenario) failHook(d plannertest.Directive) error {
	if len(d.Args) == 0 || d.Args[0].HasVal {
		return d.Errorf("want fail-hook CMD [code=N] [output=WORD]")
	}
	f := hookResultSpec{code: 1}
	for _, a := range d.Args[1:] {
		switch {
		case a.Key == "code" && a.HasVal:
			n, err := strconv.Atoi(a.Val)
			if err != nil {
				return d.Errorf("code: %v", err)
			}
			f.code = n
		case a.Key == "output" && a.HasVal:
			f.output = a.Val
		default:
			return d.Errorf("unknown argument %q", a.Key)
		}
	}
	s.mu.Lock()
	s.failHooks[d.Args[0].Key] = f
	s.mu.Unlock()
	return nil
}

// probe hands the worker a probe result for a container's latest
// instance: probe NAME startup|readiness|liveness healthy|unhealthy
// [changed]. unhealthy is a failed attempt; changed says the verdict
// flipped (the failure or success threshold was reached).
func (s *scenario) probe(d plannertest.Directive) error {
	if s.prober == nil {
		return d.Errorf("the pod has no probes")
	}
	if len(d.Args) < 3 || len(d.Args) > 4 {
		return d.Errorf("want probe NAME KIND healthy|unhealthy|warned [changed]")
	}
	kinds := map[string]prober.Kind{"startup": prober.Startup, "readiness": prober.Readiness, "liveness": prober.Liveness}
	kind, ok := kinds[d.Args[1].Key]
	if !ok {
		return d.Errorf("kind %q is not startup, readiness or liveness", d.Args[1].Key)
	}
	warned := d.Args[2].Key == "warned"
	healthy := d.Args[2].Key == "healthy" || warned
	if !healthy && d.Args[2].Key != "unhealthy" {
		return d.Errorf("%q is not healthy, unhealthy or warned", d.Args[2].Key)
	}
	changed := len(d.Args) == 4 && d.Args[3].Key == "changed"
	if len(d.Args) == 4 && !changed {
		return d.Errorf("%q is not changed", d.Args[3].Key)
	}
	name := d.Args[0].Key
	r := prober.Result{PodUID: scenarioUID, Container: name, ID: s.prober.id(name), Kind: kind,
		Healthy: healthy, Changed: changed, Failed: !healthy, Output: "exit code 1"}
	if warned {
		r.Output, r.Warning = "", `Probe terminated redirects, Response body: <a href="http://0.0.0.0/">Found</a>.`
	}
	s.w.HandleProbe(r)
	return nil
}

// query carries out a directive that asks something; ok says whether d is
// one.
func (s *scenario) query(d plannertest.Directive) (out []string, ok bool, err error) {
	switch d.Cmd {
	case "queries":
		return []string{s.queries()}, true, nil
	case "forget":
		if s.w == nil {
			return nil, true, d.Errorf("the agent is down")
		}
		return []string{"Forget " + strconv.FormatBool(s.w.Forget(scenarioUID))}, true, nil
	case "checkpoint":
		out, err := s.checkpoint()
		return out, true, err
	case "status":
		if s.w == nil {
			return nil, true, d.Errorf("the agent is down")
		}
		return s.status(), true, nil
	}
	return nil, false, nil
}

// killOptions reads kill [grace=SECONDS] [reason=WORD]; the reason
// defaults to Deleted.
func killOptions(d plannertest.Directive) (*KillOptions, error) {
	k := &KillOptions{Reason: "Deleted"}
	for _, a := range d.Args {
		switch {
		case a.Key == "grace" && a.HasVal:
			g, err := strconv.ParseInt(a.Val, 10, 64)
			if err != nil {
				return nil, d.Errorf("grace: %v", err)
			}
			k.GracePeriodSeconds = &g
		case a.Key == "reason" && a.HasVal:
			setWord(&k.Reason, a.Val)
		default:
			return nil, d.Errorf("unknown argument %q", a.Key)
		}
	}
	return k, nil
}

// setWord sets a field of any string type from a script's word.
func setWord[S ~string](field *S, word string) { *field = S(word) }

// containerArg reads the one argument of a directive: a container of the
// pod.
func (s *scenario) containerArg(d plannertest.Directive) (string, error) {
	if len(d.Args) != 1 || d.Args[0].HasVal {
		return "", d.Errorf("want %s NAME", d.Cmd)
	}
	name := d.Args[0].Key
	for _, ref := range s.pod.Containers() {
		if ref.Name == name {
			return name, nil
		}
	}
	return "", d.Errorf("the pod has no container %q", name)
}

// onOff reads the one argument of a directive: on or off.
func onOff(d plannertest.Directive) (bool, error) {
	if len(d.Args) == 1 && !d.Args[0].HasVal {
		switch d.Args[0].Key {
		case "on":
			return true, nil
		case "off":
			return false, nil
		}
	}
	return false, d.Errorf("want %s on|off", d.Cmd)
}
