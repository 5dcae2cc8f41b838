package crash

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/store"
	"github.com/podward/podward/internal/wire"
	"github.com/podward/podward/test/internal/bintest"
)

// Node shutdown (issue 13): `podward shutdown` asks the agent for the
// shutdown logind would start. The agent terminates its pods by priority
// group, as the kubelet's shutdown manager does
// (pkg/kubelet/nodeshutdown/nodeshutdown_manager.go, killPods): the lowest
// group first, each pod with min(group budget, its own grace), the next
// group once the pods are terminated or the budget is spent. Each pod ends
// as a delete ends it: defer containers, mains, sidecars in reverse.

// shutdownTimeout bounds a `podward shutdown --wait`.
const shutdownTimeout = 60 * time.Second

// sidecar is a bash container that runs as a sidecar (an init container
// with restartPolicy Always).
func (e *env) sidecar(name, script string) v1.Container {
	c := e.container(name, script)
	always := v1.ContainerRestartPolicyAlways
	c.RestartPolicy = &always
	return c
}

// shutdownStatus is `podward shutdown --status -o json`.
func (e *env) shutdownStatus() wire.NodeShutdown {
	e.t.Helper()
	out := e.mustCLI("shutdown", "--status", "-o", "json")
	var st wire.NodeShutdown
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		e.t.Fatalf("decode the shutdown status: %v\n%s", err, out)
	}
	return st
}

// shutdownWait runs `podward shutdown --wait ARGS...` and returns the
// shutdown as it ended.
func (e *env) shutdownWait(args ...string) wire.NodeShutdown {
	e.t.Helper()
	out, err := e.cliWithin(shutdownTimeout+10*time.Second, append([]string{"shutdown", "--wait", "--timeout", shutdownTimeout.String(), "-o", "json"}, args...)...)
	if err != nil {
		e.t.Fatalf("podward shutdown --wait: %v", err)
	}
	var st wire.NodeShutdown
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		e.t.Fatalf("decode the shutdown: %v\n%s", err, out)
	}
	return st
}

// assertOrder checks that the records come in the order of prefixes (each
// the first record with that prefix).
func (e *env) assertOrder(prefixes ...string) {
	t := e.t
	t.Helper()
	lines := e.records()
	last := -1
	for i, p := range prefixes {
		at := indexOf(lines, p)
		switch {
		case at < 0:
			t.Errorf("no record %q; records:\n%s", p, strings.Join(lines, "\n"))
			return
		case at < last:
			t.Errorf("records out of order: want %q, then %q; records:\n%s", prefixes[i-1], p, strings.Join(lines, "\n"))
			return
		}
		last = at
	}
}

// assertShutdownMarks checks a pod the shutdown terminated as the kubelet
// marks it: phase Failed unless Succeeded, reason Terminated, its message,
// the DisruptionTarget condition; not deleted.
func assertShutdownMarks(t *testing.T, p *v1.Pod, phase v1.PodPhase) {
	t.Helper()
	if p.Status.Phase != phase || p.Status.Reason != "Terminated" || p.Status.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Errorf("pod %s: phase %s reason %q message %q; want %s, Terminated and the kubelet's message", p.Name, p.Status.Phase, p.Status.Reason, p.Status.Message, phase)
	}
	ok := false
	for _, c := range p.Status.Conditions {
		ok = ok || (c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == "TerminationByKubelet")
	}
	if !ok || p.DeletionTimestamp != nil {
		t.Errorf("pod %s: conditions %+v, deletionTimestamp %v; want DisruptionTarget and no deletion", p.Name, p.Status.Conditions, p.DeletionTimestamp)
	}
}

// criticalPod is the critical pod of the shutdown tests (priority class
// system-node-critical: the last group), each container of it recording
// itself: a sidecar NAME-s, a main NAME-app, a defer container NAME-d.
func (e *env) criticalPod(name string) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PodSpec{
			PriorityClassName: "system-node-critical",
			InitContainers:    []v1.Container{e.sidecar("s", serving(name+"-s"))},
			Containers:        []v1.Container{e.container("app", serving(name+"-app"))},
		},
	}
	withDefer(e.t, p, e.container("d", "echo defer "+name+"-d >> {rec}"))
	return p
}

func groupPods(g wire.NodeShutdownGroup) map[string]int64 {
	m := map[string]int64{}
	for _, p := range g.Pods {
		m[p.Name] = p.GracePeriodSeconds
	}
	return m
}

// Three pods in two priority groups, with defer containers and sidecars:
// each pod ends in its own order (defer, main, sidecars in reverse), the
// critical pod's group only once the first group's pods are terminated.
func TestShutdownInOrderByPriority(t *testing.T) {
	bintest.EachRuntime(t, testShutdownInOrderByPriority)
}

func testShutdownInOrderByPriority(t *testing.T, rt bintest.Runtime) {
	e := newEnvArgs(t, rt, "--shutdown-grace-period", "20s", "--shutdown-grace-period-critical-pods", "10s")
	web := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(30)),
			InitContainers:                []v1.Container{e.sidecar("s1", serving("web-s1")), e.sidecar("s2", serving("web-s2"))},
			Containers:                    []v1.Container{e.container("app", serving("web-app"))},
		},
	}
	withDefer(t, web, e.container("d", "echo defer web-d >> {rec}; sleep 0.5; echo done web-d >> {rec}"))
	job := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "job"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(5)),
			Containers:                    []v1.Container{e.container("app", serving("job-app"))},
		},
	}
	withDefer(t, job, e.container("d", "echo defer job-d >> {rec}"))
	dns := e.criticalPod("dns")
	for _, p := range []*v1.Pod{web, job, dns} {
		e.apply(p)
	}
	for _, name := range []string{"web", "job", "dns"} {
		e.waitPod(name, "condition=Ready", recordTimeout)
	}

	st := e.shutdownWait()
	if st.State != wire.ShutdownTerminated || len(st.Groups) != 2 {
		t.Fatalf("shutdown %+v", st)
	}
	// min(budget, own grace): web 10 (of 30), job 5, dns 10 (of 30).
	if g := groupPods(st.Groups[0]); g["web"] != 10 || g["job"] != 5 || len(g) != 2 {
		t.Errorf("first group %+v", st.Groups[0])
	}
	if g := groupPods(st.Groups[1]); g["dns"] != 10 || len(g) != 1 || st.Groups[1].Priority != 2000000000 {
		t.Errorf("critical group %+v", st.Groups[1])
	}
	e.assertOrder("defer web-d", "done web-d", "stop web-app", "stop web-s2", "stop web-s1", "defer dns-d", "stop dns-app", "stop dns-s")
	e.assertOrder("defer job-d", "stop job-app", "defer dns-d")
	e.assertCounts(map[string]int{
		"defer web-d": 1, "stop web-app": 1, "stop web-s2": 1, "stop web-s1": 1, "defer job-d": 1, "stop job-app": 1,
		"defer dns-d": 1, "stop dns-app": 1, "stop dns-s": 1, "start web-app ": 1, "start dns-app ": 1,
	})
	for _, name := range []string{"web", "job", "dns"} {
		// serving exits 0 on SIGTERM: Succeeded stays Succeeded.
		assertShutdownMarks(t, e.getPod(name), v1.PodSucceeded)
	}
	// The node rejects new pods until the reboot, as the kubelet's
	// shutdown manager does at admission: Failed, reason NodeShutdown;
	// nothing of them runs.
	e.apply(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Spec: v1.PodSpec{Containers: []v1.Container{e.container("app", serving("late"))}}})
	if p := e.getPod("late"); p.Status.Phase != v1.PodFailed || p.Status.Reason != "NodeShutdown" || p.Status.Message != "Pod was rejected: Pod was rejected as the node is shutting down." {
		t.Errorf("a pod applied while the node shuts down: phase %s reason %q message %q; want Failed, NodeShutdown", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	e.assertCounts(map[string]int{"start late ": 0})
	e.finish()
}

// A group's budget shorter than a pod's grace period bounds the pod, and a
// pod that ignores SIGTERM does not hold the next group up past its
// budget.
func TestShutdownBudgetBoundsStubbornPod(t *testing.T) {
	bintest.EachRuntime(t, testShutdownBudgetBoundsStubbornPod)
}

func testShutdownBudgetBoundsStubbornPod(t *testing.T, rt bintest.Runtime) {
	e := newEnvArgs(t, rt, "--shutdown-grace-period", "5s", "--shutdown-grace-period-critical-pods", "2s")
	e.apply(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "stubborn"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(60)),
			Containers: []v1.Container{e.container("app",
				"trap '' TERM; echo start stubborn $BASHPID >> {rec}; while true; do sleep 0.1; done")},
		},
	})
	e.apply(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: v1.PodSpec{
			PriorityClassName: "system-cluster-critical",
			Containers:        []v1.Container{e.container("app", serving("dns"))},
		},
	})
	e.waitStart("stubborn")
	e.waitStart("dns")
	e.waitPod("stubborn", "condition=Ready", recordTimeout)
	e.waitPod("dns", "condition=Ready", recordTimeout)

	began := time.Now()
	st := e.shutdownWait()
	took := time.Since(began)
	g0, g1 := st.Groups[0], st.Groups[1]
	if g0.Budget != "3s" || groupPods(g0)["stubborn"] != 3 || g1.Budget != "2s" {
		t.Fatalf("groups %+v", st.Groups)
	}
	first := g0.EndedAt.Sub(*g0.StartedAt)
	if first < 3*time.Second-50*time.Millisecond || first > 3*time.Second+500*time.Millisecond {
		t.Errorf("the first group took %v; want its budget, 3s (not the pod's 60s)", first)
	}
	if gap := g1.StartedAt.Sub(*g0.EndedAt); gap < 0 || gap > 500*time.Millisecond {
		t.Errorf("the critical group started %v after the first ended", gap)
	}
	if deadline := g0.Pods[0].Deadline.Sub(*g0.StartedAt); deadline != 3*time.Second {
		t.Errorf("stubborn's deadline %v after its group's start, want 3s", deadline)
	}
	if took > 6*time.Second {
		t.Errorf("the shutdown took %v; want about 3 s", took)
	}
	// Its group's end does not wait for its exit to be seen (on the CRI
	// runtime, by the next relist).
	p := e.watchPod("stubborn", "phase Failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed }, recordTimeout)
	if cs := containerStatus(t, p.Status.ContainerStatuses, "app"); cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 137 {
		t.Errorf("stubborn app: %+v; want killed (137) at its deadline", cs.State)
	}
	assertShutdownMarks(t, p, v1.PodFailed)
	e.assertCounts(map[string]int{"stop dns": 1})
	e.finish()
}

// kill -9 of the agent in the middle of the shutdown: the next agent goes
// on with it — the same groups, starts and deadlines — runs nothing twice,
// and the critical group comes once the first one is over.
func TestShutdownCrashKeepsDeadlines(t *testing.T) {
	bintest.EachRuntime(t, testShutdownCrashKeepsDeadlines)
}

func testShutdownCrashKeepsDeadlines(t *testing.T, rt bintest.Runtime) {
	e := newEnvArgs(t, rt, "--shutdown-grace-period", "30s", "--shutdown-grace-period-critical-pods", "10s")
	web := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(60)),
			Containers:                    []v1.Container{e.container("app", serving("web-app"))},
		},
	}
	withDefer(t, web, e.container("d", "echo defer web-d $BASHPID >> {rec}; "+waitTrigger("d")+"; echo done web-d >> {rec}"))
	dns := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: v1.PodSpec{
			PriorityClassName: "system-node-critical",
			Containers:        []v1.Container{e.container("app", serving("dns-app"))},
		},
	}
	withDefer(t, dns, e.container("d", "echo defer dns-d >> {rec}"))
	e.apply(web)
	e.apply(dns)
	e.waitStart("web-app")
	e.waitStart("dns-app")
	e.waitPod("web", "condition=Ready", recordTimeout)
	e.waitPod("dns", "condition=Ready", recordTimeout)

	e.mustCLI("shutdown")
	e.waitRecord("defer web-d ")
	e.waitDeferRunning("web", "d")
	before := e.shutdownStatus()
	e.crash()
	e.restart()
	after := e.shutdownStatus()
	if before.State != wire.ShutdownTerminating || after.State != wire.ShutdownTerminating {
		t.Fatalf("state %q before the crash, %q after", before.State, after.State)
	}
	b0, a0 := before.Groups[0], after.Groups[0]
	if !b0.StartedAt.Equal(*a0.StartedAt) || !b0.Pods[0].Deadline.Equal(*a0.Pods[0].Deadline) || a0.Pods[0].GracePeriodSeconds != 20 {
		t.Errorf("the first group changed across the restart: %+v, then %+v", b0, a0)
	}
	if after.Groups[1].StartedAt != nil {
		t.Errorf("the critical group started before the first was over: %+v", after.Groups[1])
	}
	e.assertNoRecord("stop dns-app", "the critical pod stopped while the first group was terminating")

	e.trigger("d")
	st := e.shutdownWait()
	if st.State != wire.ShutdownTerminated || !st.Groups[0].StartedAt.Equal(*b0.StartedAt) || !st.Groups[0].Pods[0].Deadline.Equal(*b0.Pods[0].Deadline) {
		t.Errorf("shutdown after the restart %+v", st)
	}
	e.assertOrder("defer web-d", "done web-d", "stop web-app", "defer dns-d", "stop dns-app")
	e.assertCounts(map[string]int{"defer web-d": 1, "done web-d": 1, "start web-app ": 1, "stop web-app": 1, "defer dns-d": 1, "stop dns-app": 1})
	e.finish()
}

// After the reboot (a new boot ID; the test writes another into the store
// while the agent is down, as an earlier boot's), the pods the shutdown
// terminated start again, not Failed; their restart counts and events say
// what happened, and the node takes pods again.
func TestShutdownThenRebootStartsPodsAgain(t *testing.T) {
	bintest.EachRuntime(t, testShutdownThenRebootStartsPodsAgain)
}

func testShutdownThenRebootStartsPodsAgain(t *testing.T, rt bintest.Runtime) {
	e := newEnvArgs(t, rt, "--shutdown-grace-period", "6s", "--shutdown-grace-period-critical-pods", "2s")
	web := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(30)),
			Containers: []v1.Container{e.container("app",
				// Fails on SIGTERM: the pod ends Failed.
				"trap 'echo stop web-app >> {rec}; exit 3' TERM; echo start web-app $BASHPID >> {rec}; while true; do sleep 100 & wait; done")},
		},
	}
	withDefer(t, web, e.container("d", "echo defer web-d >> {rec}"))
	e.apply(web)
	e.waitStart("web-app")
	e.waitPod("web", "condition=Ready", recordTimeout)

	if st := e.shutdownWait(); st.State != wire.ShutdownTerminated {
		t.Fatalf("shutdown %+v", st)
	}
	assertShutdownMarks(t, e.getPod("web"), v1.PodFailed)
	e.stop()
	setEarlierBoot(t, filepath.Join(e.root, "state.db"))
	e.start()

	e.waitRecords("web-app started again", func(lines []string) bool { return count(lines, "start web-app ") == 2 }, recordTimeout)
	e.waitPod("web", "condition=Ready", recordTimeout)
	p := e.getPod("web")
	cs := containerStatus(t, p.Status.ContainerStatuses, "app")
	if p.Status.Phase != v1.PodRunning || p.Status.Reason != "" || cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 3 {
		t.Errorf("after the reboot: phase %s reason %q, app %+v; want Running, restartCount 1, lastState exit 3", p.Status.Phase, p.Status.Reason, cs)
	}
	events := e.mustCLI("events", "--for", "pod/web")
	for _, want := range []string{"Terminating the pod: the node is shutting down (grace period 4s)", "Starting the pod again: the node rebooted after its shutdown"} {
		if !strings.Contains(events, want) {
			t.Errorf("no event %q:\n%s", want, events)
		}
	}
	if nodeEvents := e.mustCLI("events"); !strings.Contains(nodeEvents, "Rebooted") || !strings.Contains(nodeEvents, "Shutdown manager detected shutdown event") {
		t.Errorf("node events:\n%s", nodeEvents)
	}
	if st := e.shutdownStatus(); st.State != 0 {
		t.Errorf("after the reboot the shutdown is still %+v", st)
	}
	e.assertCounts(map[string]int{"defer web-d": 1, "stop web-app": 1})
	e.finish()
}

// A cancelled shutdown terminates no further group, and the pods it
// stopped start again (standalone mode), one restart more.
func TestShutdownCancelled(t *testing.T) {
	t.Parallel()
	e := newEnvArgs(t, bintest.Process(), "--shutdown-grace-period", "30s", "--shutdown-grace-period-critical-pods", "10s")
	web := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       v1.PodSpec{Containers: []v1.Container{e.container("app", serving("web-app"))}},
	}
	// The defer container holds the first group until the test lets it go.
	withDefer(t, web, e.container("d", "echo defer web-d >> {rec}; "+waitTrigger("d")))
	e.apply(web)
	e.apply(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "dns"},
		Spec: v1.PodSpec{
			PriorityClassName: "system-node-critical",
			Containers:        []v1.Container{e.container("app", serving("dns-app"))},
		},
	})
	e.waitStart("web-app")
	e.waitStart("dns-app")
	e.waitPod("web", "condition=Ready", recordTimeout)
	e.mustCLI("shutdown")
	e.waitRecord("defer web-d")
	if out := e.mustCLI("shutdown", "--cancel"); !strings.HasPrefix(out, "node shutdown Cancelled") {
		t.Errorf("podward shutdown --cancel: %q", out)
	}
	e.trigger("d")
	e.waitRecords("web-app started again", func(lines []string) bool { return count(lines, "start web-app ") == 2 }, recordTimeout)
	e.waitPod("web", "condition=Ready", recordTimeout)
	if cs := containerStatus(t, e.getPod("web").Status.ContainerStatuses, "app"); cs.RestartCount != 1 {
		t.Errorf("web app after the cancelled shutdown: %+v", cs)
	}
	if st := e.shutdownStatus(); st.State != wire.ShutdownCancelled || st.Groups[1].StartedAt != nil {
		t.Errorf("shutdown %+v", st)
	}
	e.assertCounts(map[string]int{"stop web-app": 1, "stop dns-app": 0, "start dns-app ": 1})
	e.trigger("d") // for the defer container of finish's delete
	e.finish()
}

// setEarlierBoot makes the agent's store say that it last ran in another
// boot of the machine, as after a reboot. The agent must be down.
func setEarlierBoot(t *testing.T, path string) {
	t.Helper()
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("open the agent's store: %v", err)
	}
	defer st.Close()
	// The agent's key for the boot it last ran in (internal/agent).
	if err := st.PutMeta("bootID", "an-earlier-boot"); err != nil {
		t.Fatal(err)
	}
}
