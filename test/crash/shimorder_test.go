package crash

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The pod's order without the agent (issue 13, item 5): with the agent
// gone, the shims of a pod stop its containers in its order when they are
// signalled from outside (an init system, `podward stop-pods`), within the
// pod's grace period.

// timedServing is serving with the time of the stop in its record:
// "stop NAME SECONDS" ($EPOCHREALTIME).
func timedServing(name string) string {
	return "trap 'echo stop " + name + " $EPOCHREALTIME >> {rec}; exit 0' TERM; " +
		"echo start " + name + " $BASHPID >> {rec}; " +
		"while true; do sleep 100 & wait; done"
}

// stubborn ignores SIGTERM (it records "ignored NAME") until SIGKILL.
func stubborn(name string) string {
	return "trap 'echo ignored " + name + " >> {rec}' TERM; " +
		"echo start " + name + " $BASHPID >> {rec}; " +
		"while true; do sleep 100 & wait; done"
}

// orderedPod is a pod of two sidecars and two mains, restartPolicy Never,
// so that once its containers stopped nothing starts again. main2's script
// is given.
func (e *env) orderedPod(name string, grace int64, main2 string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr(grace),
			InitContainers:                []v1.Container{e.sidecar("side1", timedServing("side1")), e.sidecar("side2", timedServing("side2"))},
			Containers:                    []v1.Container{e.container("main1", timedServing("main1")), e.container("main2", main2)},
		},
	}
}

// startOrdered applies the pod, waits until it is Ready and returns the
// main processes of its containers, in declaration order.
func (e *env) startOrdered(pod *v1.Pod) []int {
	e.t.Helper()
	e.apply(pod)
	var pids []int
	for _, name := range []string{"side1", "side2", "main1", "main2"} {
		pids = append(pids, e.waitStart(name))
	}
	e.waitPod(pod.Name, "condition=Ready", recordTimeout)
	return pids
}

// stopTime is the time in the record "stop NAME SECONDS".
func stopTime(t *testing.T, lines []string, name string) time.Time {
	t.Helper()
	i := indexOf(lines, "stop "+name+" ")
	if i < 0 {
		t.Fatalf("no stop record of %s: %q", name, lines)
	}
	f := strings.Fields(lines[i])
	sec, err := strconv.ParseFloat(f[len(f)-1], 64)
	if err != nil {
		t.Fatalf("record %q: %v", lines[i], err)
	}
	return time.Unix(0, int64(sec*1e9))
}

// assertStoppedInOrder checks the records: both mains stopped before the
// second sidecar, which stopped before the first.
func assertStoppedInOrder(t *testing.T, lines []string, mains ...string) {
	t.Helper()
	s1, s2 := indexOf(lines, "stop side1 "), indexOf(lines, "stop side2 ")
	for _, m := range mains {
		if i := indexOf(lines, "stop "+m+" "); i < 0 || i > s2 {
			t.Errorf("main %s did not stop before side2: %q", m, lines)
		}
	}
	if s2 < 0 || s1 < s2 {
		t.Errorf("the sidecars did not stop in reverse order: %q", lines)
	}
}

// assertRecordedOnce checks, on the restarted agent, that the pod's four
// containers ran once each and ended with the given exit codes.
func (e *env) assertRecordedOnce(pod string, codes map[string]int32) {
	t := e.t
	t.Helper()
	p := e.getPod(pod)
	for name, code := range codes {
		list := p.Status.ContainerStatuses
		if strings.HasPrefix(name, "side") {
			list = p.Status.InitContainerStatuses
		}
		st := containerStatus(t, list, name)
		assertExitedOnce(t, st, code)
	}
	e.assertCounts(map[string]int{"start side1 ": 1, "start side2 ": 1, "start main1 ": 1, "start main2 ": 1})
}

// The agent is killed; then every shim of the pod gets SIGTERM at once, the
// sidecars' first, as an init system sends it: the mains stop, then the
// second sidecar, then the first. The next agent finds their exits and
// starts nothing again.
func TestShimsKeepThePodsOrderWithoutTheAgent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pids := e.startOrdered(e.orderedPod("ordered", 30, timedServing("main2")))
	var shims []int
	for _, pid := range pids {
		shims = append(shims, shimOf(t, pid))
	}
	e.crash()
	for _, shim := range shims {
		if err := syscall.Kill(shim, syscall.SIGTERM); err != nil {
			t.Fatalf("SIGTERM to shim %d: %v", shim, err)
		}
	}
	e.mustBeGone("the pod's containers and shims, stopped without the agent", append(pids, shims...), goneTimeout)
	assertStoppedInOrder(t, e.records(), "main1", "main2")

	e.restart()
	e.waitPod("ordered", "jsonpath={.status.phase}=Succeeded", recordTimeout)
	e.assertRecordedOnce("ordered", map[string]int32{"side1": 0, "side2": 0, "main1": 0, "main2": 0})
	e.finish()
	e.assertCounts(map[string]int{"start side1 ": 1, "start side2 ": 1, "start main1 ": 1, "start main2 ": 1})
}

// `podward stop-pods`, with the agent killed, stops the pod in its order; a
// main that ignores SIGTERM holds the sidecars back until the pod's grace
// period is over, when it is killed (SIGKILL no sooner than 2 s after its
// SIGTERM) and the sidecars get their stop signal, both at once. stop-pods
// returns once all are gone; the next agent records the exits and starts
// nothing.
func TestStopPodsKillsAtThePodsGraceDeadline(t *testing.T) {
	t.Parallel()
	const grace = 3 * time.Second
	e := newEnv(t)
	pids := e.startOrdered(e.orderedPod("deadline", int64(grace/time.Second), stubborn("main2")))
	e.crash()
	began := time.Now()
	out, err := e.cliWithin(grace+30*time.Second, "stop-pods", "--root", e.root)
	took := time.Since(began)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("stop-pods after %v: %s", took.Round(time.Millisecond), strings.TrimSpace(out))
	if want := "stopped 4 container(s) of 1 pod(s)"; strings.TrimSpace(out) != want {
		t.Errorf("stop-pods printed %q, want %q", out, want)
	}
	e.mustBeGone("the pod's containers, once stop-pods returned", pids, lingerTimeout)
	lines := e.records()
	// At the deadline nothing waits for its turn any more: both sidecars
	// got their stop signal then, at once (docs/lifecycle.md, Termination,
	// step 6), so only the main's stop comes first for sure.
	for _, s := range []string{"side1", "side2"} {
		if i := indexOf(lines, "stop "+s+" "); i < 0 || i < indexOf(lines, "stop main1 ") {
			t.Errorf("%s did not stop after main1: %q", s, lines)
		}
	}
	if indexOf(lines, "ignored main2") < 0 {
		t.Errorf("main2 got no SIGTERM: %q", lines)
	}
	// The grace period counts from the first shim's signal, after began;
	// the clock of a file's time may be a tick behind.
	for _, s := range []string{"side1", "side2"} {
		if at := stopTime(t, lines, s); at.Before(began.Add(grace - 50*time.Millisecond)) {
			t.Errorf("%s stopped %v after stop-pods began, before the grace period %v was over", s, at.Sub(began), grace)
		}
	}
	if took > grace+10*time.Second {
		t.Errorf("stop-pods took %v, for a grace period of %v", took, grace)
	}

	e.restart()
	e.waitPod("deadline", "jsonpath={.status.phase}=Failed", recordTimeout)
	e.assertRecordedOnce("deadline", map[string]int32{"side1": 0, "side2": 0, "main1": 0, "main2": 128 + int32(syscall.SIGKILL)})
	e.finish()
}
