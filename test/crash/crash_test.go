package crash

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/store"
	"github.com/podward/podward/test/internal/bintest"
)

// Container scripts. They record on {rec}; see env.script.

// serving is a long-running container: it records its start with its PID
// and, on SIGTERM, "stop NAME" before it exits 0.
func serving(name string) string {
	return "trap 'echo stop " + name + " >> {rec}; exit 0' TERM; " +
		"echo start " + name + " $BASHPID >> {rec}; " +
		"while true; do sleep 100 & wait; done"
}

// waitTrigger is a script step that waits for the trigger file name and
// consumes it, so that a second instance would wait again.
func waitTrigger(name string) string {
	return "until rm {trig}/" + name + " 2>/dev/null; do sleep 0.05; done"
}

// exitOnTrigger is a script step that waits for the trigger file name,
// then records "exit NAME": the step env.crashWhileItExits sets off.
func exitOnTrigger(name string) string {
	return waitTrigger(name) + "; echo exit " + name + " >> {rec}"
}

func ptr[T any](v T) *T { return &v }

// Scenario 1: the agent dies while an init container runs, and the init
// container completes while the agent is down.
func TestCrashDuringInitContainer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "init"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(10)),
			InitContainers: []v1.Container{e.container("setup",
				"echo start setup $BASHPID >> {rec}; "+exitOnTrigger("setup"))},
			Containers: []v1.Container{e.container("main", serving("main"))},
		},
	})
	setup := e.waitStart("setup")
	// Once the status shows it running, the agent has recorded the start.
	e.waitPod("init", "jsonpath={.status.initContainerStatuses[0].state.running}", recordTimeout)

	e.crashWhileItExits("setup", setup)
	e.assertNoRecord("start main ", "main started while its init container ran")

	e.restart()
	e.waitStart("main")
	e.waitPod("init", "condition=Ready", recordTimeout)
	p := e.getPod("init")
	if len(p.Status.InitContainerStatuses) != 1 {
		t.Fatalf("initContainerStatuses: %+v", p.Status.InitContainerStatuses)
	}
	st := p.Status.InitContainerStatuses[0]
	t.Logf("init container status after the restart: %+v", st)
	assertExitedOnce(t, st, 0)
	e.assertCounts(map[string]int{"start setup ": 1, "exit setup": 1, "start main ": 1})

	e.finish()
	e.assertCounts(map[string]int{"start setup ": 1, "start main ": 1, "stop main": 1})
}

// Scenario 2: a running container exits (code 3) while the agent is down;
// the restart policy applies after the restart.
func TestCrashWhileContainerExits(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		policy v1.RestartPolicy
		check  func(t *testing.T, e *env, firstID string, firstPID int)
	}{
		"restartPolicy Never fails the pod with the real exit code": {
			policy: v1.RestartPolicyNever,
			check: func(t *testing.T, e *env, firstID string, _ int) {
				e.waitPod("job", "jsonpath={.status.phase}=Failed", recordTimeout)
				st := containerStatus(t, e.getPod("job").Status.ContainerStatuses, "main")
				t.Logf("status after the restart: %+v", st)
				assertExitedOnce(t, st, 3)
				if st.ContainerID != firstID {
					t.Errorf("containerID %s, want the first instance's %s", st.ContainerID, firstID)
				}
				e.assertCounts(map[string]int{"start main ": 1, "exit main": 1})
			},
		},
		"restartPolicy Always restarts it once with the exit in lastState": {
			policy: v1.RestartPolicyAlways,
			check: func(t *testing.T, e *env, firstID string, firstPID int) {
				e.waitPod("job", "jsonpath={.status.containerStatuses[0].restartCount}=1", recordTimeout)
				lines := e.waitRecords("a second start of main", func(l []string) bool {
					return count(l, "start main ") >= 2
				}, recordTimeout)
				var pids []int
				for _, l := range lines {
					if strings.HasPrefix(l, "start main ") {
						pids = append(pids, recordPID(t, l))
					}
				}
				if pids[0] != firstPID || pids[1] == firstPID {
					t.Errorf("start PIDs %v: want the first instance's %d once, then another", pids, firstPID)
				}
				e.waitPod("job", "condition=Ready", recordTimeout)
				st := containerStatus(t, e.getPod("job").Status.ContainerStatuses, "main")
				t.Logf("status after the restart: %+v", st)
				if st.RestartCount != 1 {
					t.Errorf("restartCount %d, want 1", st.RestartCount)
				}
				switch {
				case st.LastTerminationState.Terminated == nil:
					t.Errorf("lastState %+v, want terminated", st.LastTerminationState)
				case st.LastTerminationState.Terminated.ExitCode != 3:
					t.Errorf("lastState exit code %d, want 3", st.LastTerminationState.Terminated.ExitCode)
				case st.LastTerminationState.Terminated.ContainerID != firstID:
					t.Errorf("lastState containerID %s, want the first instance's %s", st.LastTerminationState.Terminated.ContainerID, firstID)
				}
				if st.State.Running == nil {
					t.Errorf("state %+v, want running", st.State)
				}
				if st.ContainerID == firstID {
					t.Errorf("containerID is still the first instance's %s", firstID)
				}
				e.assertCounts(map[string]int{"start main ": 2, "exit main": 1})
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.apply(&v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "job"},
				Spec: v1.PodSpec{
					RestartPolicy:                 tc.policy,
					TerminationGracePeriodSeconds: ptr(int64(10)),
					Containers: []v1.Container{e.container("main",
						"trap 'echo stop main >> {rec}; exit 0' TERM; echo start main $BASHPID >> {rec}; "+
							exitOnTrigger("main")+"; exit 3")},
				},
			})
			pid := e.waitStart("main")
			e.waitPod("job", "condition=Ready", recordTimeout)
			firstID := containerStatus(t, e.getPod("job").Status.ContainerStatuses, "main").ContainerID

			e.crashWhileItExits("main", pid)
			e.restart()
			tc.check(t, e, firstID, pid)
			e.finish()
		})
	}
}

// Scenario 3: the agent dies and comes back while a container runs: it
// adopts the container instead of starting another, its log has what the
// container wrote meanwhile, and the adopted container's exit is seen.
func TestCrashAdoptsRunningContainer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.apply(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "adopt"},
		Spec: v1.PodSpec{
			RestartPolicy:                 v1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr(int64(10)),
			Containers: []v1.Container{e.container("main",
				"echo start main $BASHPID >> {rec}; echo before the crash; "+
					waitTrigger("main")+"; echo while the agent was down; echo wrote main >> {rec}; "+
					waitTrigger("main2")+"; echo after the restart; echo exit main >> {rec}; exit 5")},
		},
	})
	pid := e.waitStart("main")
	shim := shimOf(t, pid)
	e.waitPod("adopt", "condition=Ready", recordTimeout)
	before := containerStatus(t, e.getPod("adopt").Status.ContainerStatuses, "main")

	e.crash()
	e.trigger("main")
	e.waitRecord("wrote main")
	e.restart()

	e.waitPod("adopt", "condition=Ready", recordTimeout)
	after := containerStatus(t, e.getPod("adopt").Status.ContainerStatuses, "main")
	t.Logf("status before the crash: %+v; after the restart: %+v", before, after)
	if after.ContainerID != before.ContainerID {
		t.Errorf("containerID %s after the restart, want the adopted %s", after.ContainerID, before.ContainerID)
	}
	if after.RestartCount != 0 {
		t.Errorf("restartCount %d, want 0", after.RestartCount)
	}
	if after.State.Running == nil {
		t.Errorf("state %+v, want running", after.State)
	} else if !after.State.Running.StartedAt.Equal(&before.State.Running.StartedAt) {
		t.Errorf("startedAt %v, want the adopted instance's %v", after.State.Running.StartedAt, before.State.Running.StartedAt)
	}
	if !bintest.ProcessRuns(pid, e.dir) || !bintest.ProcessRuns(shim, e.dir) {
		t.Errorf("the adopted container (pid %d) or its shim (pid %d) no longer runs", pid, shim)
	}
	logs := e.mustCLI("logs", "adopt")
	for _, want := range []string{"before the crash", "while the agent was down"} {
		if !strings.Contains(logs, want+"\n") {
			t.Errorf("podward logs has no line %q:\n%s", want, logs)
		}
	}

	// The restarted agent watches the adopted container: its exit is
	// recorded with its real exit code.
	e.trigger("main2")
	e.waitPod("adopt", "jsonpath={.status.phase}=Failed", recordTimeout)
	st := containerStatus(t, e.getPod("adopt").Status.ContainerStatuses, "main")
	switch {
	case st.State.Terminated == nil:
		t.Errorf("state %+v, want terminated", st.State)
	case st.State.Terminated.ExitCode != 5 || st.ContainerID != before.ContainerID:
		t.Errorf("terminated %+v, want exit code 5 of %s", st.State.Terminated, before.ContainerID)
	}
	if logs := e.mustCLI("logs", "adopt"); !strings.Contains(logs, "after the restart\n") {
		t.Errorf("podward logs has no line %q:\n%s", "after the restart", logs)
	}
	e.assertCounts(map[string]int{"start main ": 1, "wrote main": 1, "exit main": 1})
	e.finish()
}

// Scenario 4: the agent dies during the defer containers; the running
// defer container completes while the agent is down.
func TestCrashDuringDeferContainers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "defers"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(30)),
			Containers:                    []v1.Container{e.container("main", serving("main"))},
		},
	}
	withDefer(t, pod,
		e.container("d1", "echo defer d1 $BASHPID >> {rec}"),
		e.container("d2", "echo defer d2 $BASHPID >> {rec}; "+exitOnTrigger("d2")),
	)
	e.apply(pod)
	e.waitStart("main")
	e.waitPod("defers", "condition=Ready", recordTimeout)

	deleted := time.Now()
	e.deleteAsync("defers")
	d2 := recordPID(t, e.waitRecord("defer d2 "))
	// Once the status shows it running, the agent has recorded the start.
	e.waitDeferRunning("defers", "d2")
	e.crashWhileItExits("d2", d2)
	e.assertNoRecord("stop main", "main was stopped before the defer containers completed")

	e.restart()
	restarted := time.Now()
	e.waitPod("defers", "delete", 20*time.Second)
	gone := time.Now()
	t.Logf("pod gone %v after the delete, %v after the restart (grace period 30s)",
		gone.Sub(deleted).Round(time.Millisecond), gone.Sub(restarted).Round(time.Millisecond))
	if d := gone.Sub(restarted); d > 10*time.Second {
		t.Errorf("the pod took %v after the restart to go; want it gone well before its 30s grace period", d)
	}
	e.assertNoProcesses("after the pod was deleted", e.agentPid())
	e.assertCounts(map[string]int{"defer d1 ": 1, "defer d2 ": 1, "exit d2": 1, "start main ": 1, "stop main": 1})
	lines := e.records()
	if !(indexOf(lines, "defer d1 ") < indexOf(lines, "defer d2 ") && indexOf(lines, "exit d2") < indexOf(lines, "stop main")) {
		t.Errorf("records out of order (want d1, d2, d2's exit, then main's stop):\n%s", strings.Join(lines, "\n"))
	}
	e.finish()
}

// Scenario 5: a termination in progress keeps its absolute deadline across
// an agent restart.
func TestCrashDuringTerminationKeepsDeadline(t *testing.T) {
	bintest.EachRuntime(t, testCrashDuringTerminationKeepsDeadline)
}

func testCrashDuringTerminationKeepsDeadline(t *testing.T, rt bintest.Runtime) {
	e := newEnvOn(t, rt)
	const grace = 6 * time.Second
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "deadline"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(grace / time.Second)),
			Containers:                    []v1.Container{e.container("main", serving("main"))},
		},
	}
	// A defer container that never finishes; it marks the time for the
	// crash (2 s after it started) and for the restart (2 s later).
	withDefer(t, pod, e.container("d",
		"echo defer d $BASHPID >> {rec}; sleep 2; echo tick d 1 >> {rec}; sleep 2; echo tick d 2 >> {rec}; "+
			"while true; do sleep 100 & wait; done"))
	e.apply(pod)
	e.waitStart("main")
	e.waitPod("deadline", "condition=Ready", recordTimeout)

	deleted := time.Now()
	e.deleteAsync("deadline")
	e.waitRecord("defer d ")
	e.waitRecord("tick d 1")
	e.crash()
	crashed := time.Since(deleted)
	e.waitRecord("tick d 2")
	e.restart()
	restarted := time.Since(deleted)
	e.waitPod("deadline", "delete", 20*time.Second)
	gone := time.Since(deleted)
	t.Logf("delete at 0; crash at %v; restart at %v; pod gone at %v (grace period %v)",
		crashed.Round(time.Millisecond), restarted.Round(time.Millisecond), gone.Round(time.Millisecond), grace)
	if gone < grace-time.Second || gone >= grace+3*time.Second {
		t.Errorf("pod gone %v after the delete; want about %v (the original deadline): at least %v and less than %v",
			gone.Round(time.Millisecond), grace, grace-time.Second, grace+3*time.Second)
	}
	e.assertNoProcesses("after the pod was deleted", e.agentPid())
	e.assertCounts(map[string]int{"defer d ": 1, "start main ": 1})
	e.finish()
}

// phaseStep is a script step that waits for the trigger file name, then
// for the wall clock's milliseconds to be in [lo, hi), and records
// "phase NAME". It lets a test aim an action at a fraction of a second.
func phaseStep(name string, lo, hi int) string {
	return fmt.Sprintf("%s; until f=${EPOCHREALTIME#*.}; (( 10#${f:0:3} >= %d && 10#${f:0:3} < %d )); do sleep 0.002; done; echo phase %s >> {rec}",
		waitTrigger(name), lo, hi, name)
}

// Scenario 5, exactly: the restarted agent must neither move the deadline
// later nor earlier. The deletion's deadline is stored with the pod as
// deletionTimestamp, which (as in Kubernetes) has whole seconds, so a
// restart that re-derives the grace period from it can end the pod up to a
// second early. The test aims the delete at .6 s past a second and the
// restart at just past a later second, where such rounding shows most (by
// about half a second), and checks when the never-ending defer container
// is killed against the delete's own clock.
func TestCrashRestartKeepsExactDeadline(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const grace = 4 * time.Second
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "exact"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(grace / time.Second)),
			Containers: []v1.Container{e.container("main",
				"trap 'echo stop main >> {rec}; exit 0' TERM; echo start main $BASHPID >> {rec}; "+
					phaseStep("delete", 600, 650)+"; "+phaseStep("restart", 0, 40)+"; "+
					"while true; do sleep 100 & wait; done")},
		},
	}
	withDefer(t, pod, e.container("d", "echo defer d $BASHPID >> {rec}; while true; do sleep 100 & wait; done"))
	e.apply(pod)
	e.waitStart("main")
	e.waitPod("exact", "condition=Ready", recordTimeout)

	e.trigger("delete")
	e.waitRecord("phase delete")
	before := time.Now()
	e.deleteAsync("exact")
	after := time.Now()
	d := recordPID(t, e.waitRecord("defer d "))
	e.waitDeferRunning("exact", "d")
	e.crash()
	e.trigger("restart")
	e.waitRecord("phase restart")
	e.restart()
	restarted := time.Now()

	// The deadline is between before+grace and after+grace.
	if left := waitGone([]int{d}, e.dir, 2*grace); len(left) > 0 {
		t.Fatalf("the defer container was not killed within %v of the restart", 2*grace)
	}
	killed := time.Now()
	t.Logf("delete at %s (.%03d past the second), took %v; restart %v after the delete (at .%03d); defer container killed %v after the delete (grace period %v)",
		before.Format(time.TimeOnly), before.Nanosecond()/1e6, after.Sub(before).Round(time.Millisecond),
		restarted.Sub(before).Round(time.Millisecond), restarted.Nanosecond()/1e6,
		killed.Sub(before).Round(time.Millisecond), grace)
	if early := before.Add(grace).Sub(killed); early > 0 {
		t.Errorf("the defer container was killed %v before the original deadline (delete + %v): the restart moved the deadline earlier",
			early.Round(time.Millisecond), grace)
	}
	if late := killed.Sub(after.Add(grace)); late > time.Second {
		t.Errorf("the defer container was killed %v after the original deadline", late.Round(time.Millisecond))
	}
	e.waitPod("exact", "delete", 20*time.Second)
	e.assertCounts(map[string]int{"defer d ": 1, "start main ": 1})
	e.finish()
}

// Scenario 5, for the prompt kill: once the defer containers completed, a
// container that ignores its stop signal is killed --prompt-kill (2 s)
// after the signal. An agent that dies in between neither repeats the stop
// signal nor starts the 2 s again.
func TestCrashKeepsPromptKill(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const promptKill = 2 * time.Second // serve's default
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "prompt"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(30)),
			// It records SIGTERM, marks the restart's time a second
			// later, and goes on.
			Containers: []v1.Container{e.container("main",
				"trap 'echo stop main >> {rec}; sleep 1; echo tick main >> {rec}' TERM; "+
					"echo start main $BASHPID >> {rec}; while true; do sleep 100 & wait; done")},
		},
	}
	withDefer(t, pod, e.container("d", "echo defer d $BASHPID >> {rec}"))
	e.apply(pod)
	pid := e.waitStart("main")
	e.waitPod("prompt", "condition=Ready", recordTimeout)

	e.deleteAsync("prompt")
	e.waitRecord("stop main")
	stopped := time.Now()
	e.crash()
	e.waitRecord("tick main")
	e.restart()
	restarted := time.Since(stopped)
	if left := waitGone([]int{pid}, e.dir, 10*time.Second); len(left) > 0 {
		t.Fatalf("main was not killed within 10s of the restart")
	}
	killed := time.Since(stopped)
	t.Logf("stop signal at 0; restart at %v; main killed at %v (--prompt-kill %v)",
		restarted.Round(time.Millisecond), killed.Round(time.Millisecond), promptKill)
	if killed > promptKill+600*time.Millisecond {
		t.Errorf("main was killed %v after its stop signal; want about %v: the restart must not start the prompt kill again",
			killed.Round(time.Millisecond), promptKill)
	}
	e.waitPod("prompt", "delete", 20*time.Second)
	e.assertCounts(map[string]int{"start main ": 1, "defer d ": 1, "stop main": 1})
	e.finish()
}

// Scenario 6: the agent dies while the sidecars stop, one at a time, in
// reverse order.
func TestCrashDuringSidecarShutdown(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	always := v1.ContainerRestartPolicyAlways
	sidecar := func(name string) v1.Container {
		c := e.container(name,
			"trap 'echo stop "+name+" >> {rec}; "+exitOnTrigger(name)+"; exit 0' TERM; "+
				"echo start "+name+" $BASHPID >> {rec}; while true; do sleep 100 & wait; done")
		c.RestartPolicy = &always
		return c
	}
	e.apply(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecars"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(30)),
			InitContainers:                []v1.Container{sidecar("s1"), sidecar("s2")},
			Containers:                    []v1.Container{e.container("main", serving("main"))},
		},
	})
	e.waitStart("s1")
	s2 := e.waitStart("s2")
	e.waitStart("main")
	e.waitPod("sidecars", "condition=Ready", recordTimeout)

	deleted := time.Now()
	e.deleteAsync("sidecars")
	e.waitRecord("stop s2")
	e.crashWhileItExits("s2", s2)
	e.assertNoRecord("stop s1", "s1 got its stop signal before s2 exited")
	// s1 may exit as soon as it is told to.
	e.trigger("s1")

	e.restart()
	e.waitRecord("stop s1")
	e.waitPod("sidecars", "delete", 20*time.Second)
	t.Logf("pod gone %v after the delete", time.Since(deleted).Round(time.Millisecond))
	e.assertNoProcesses("after the pod was deleted", e.agentPid())
	e.assertCounts(map[string]int{"start s1 ": 1, "start s2 ": 1, "start main ": 1,
		"stop main": 1, "stop s2": 1, "stop s1": 1, "exit s2": 1, "exit s1": 1})
	var stops []string
	for _, l := range e.records() {
		if strings.HasPrefix(l, "stop ") {
			stops = append(stops, strings.TrimPrefix(l, "stop "))
		}
	}
	if strings.Join(stops, ",") != "main,s2,s1" {
		t.Errorf("stop order %v, want main, s2, s1", stops)
	}
	e.finish()
}

// Scenario 7: the store forgets a pod while the agent is down; the
// restarted agent kills the pod's containers, which it no longer knows.
func TestCrashOrphanedPodIsKilled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	always := v1.ContainerRestartPolicyAlways
	side := e.container("side", serving("side"))
	side.RestartPolicy = &always
	e.apply(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "orphan"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(10)),
			InitContainers:                []v1.Container{side},
			Containers:                    []v1.Container{e.container("main", serving("main"))},
		},
	})
	sidePID := e.waitStart("side")
	mainPID := e.waitStart("main")
	e.waitPod("orphan", "condition=Ready", recordTimeout)
	uid := e.getPod("orphan").UID
	pids := []int{sidePID, shimOf(t, sidePID), mainPID, shimOf(t, mainPID)}

	e.crash()
	forgetPod(t, filepath.Join(e.root, "state.db"), uid)
	for _, pid := range pids {
		if !bintest.ProcessRuns(pid, e.dir) {
			t.Fatalf("process %d ended while the agent was down", pid)
		}
	}

	e.restart()
	e.mustBeGone("the orphaned pod's containers and shims", pids, goneTimeout)
	if _, err := e.cli("get", "pod", "orphan"); err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Errorf("get pod orphan after the restart: %v; want NotFound", err)
	}
	e.assertNoProcesses("after the orphans were killed", e.agentPid())
	e.assertCounts(map[string]int{"start side ": 1, "start main ": 1})
	e.finish()
}

// forgetPod deletes a pod from the agent's store, as if the agent had
// removed it but not its containers. The agent must be down.
func forgetPod(t *testing.T, path string, uid types.UID) {
	t.Helper()
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("open the agent's store: %v", err)
	}
	defer st.Close()
	if _, err := st.GetPod(uid); err != nil {
		t.Fatalf("the store does not have the pod: %v", err)
	}
	if err := st.DeletePod(uid); err != nil {
		t.Fatalf("delete the pod from the store: %v", err)
	}
	if _, err := st.GetPod(uid); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the pod is still stored: %v", err)
	}
	t.Logf("deleted pod %s from the store", uid)
}

// Scenario 8: the agent dies while an exec runs in a container's context
// (a preStop hook, a liveness probe): the exec's main process dies with
// the agent, the restarted agent kills the rest of its process group (a
// child it left in the background), and a hook is not run a second time.
func TestCrashDuringExec(t *testing.T) {
	t.Parallel()
	// execScript records its run and its background child's PID, then
	// waits for the child, which sleeps far longer than the test; the
	// child's argv[0] carries the test's marker.
	execScript := func(name string) string {
		return "echo " + name + " $$ >> {rec}; (exec -a {trig}/" + name + "-child sleep 300) & " +
			"echo " + name + "-child $! >> {rec}; wait"
	}
	cases := map[string]struct {
		// with adds the exec to the container; set, when not nil, sets
		// it off once the container is ready.
		with func(e *env, c *v1.Container)
		set  func(e *env)
		// runs is how many times the exec runs in all, the restarted
		// agent's runs included.
		runs int
	}{
		"preStop hook": {
			with: func(e *env, c *v1.Container) {
				c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{
					Exec: &v1.ExecAction{Command: []string{e.rt.Bash, "-c", e.script(execScript("exec"))}},
				}}
			},
			set:  func(e *env) { e.deleteAsync("exec") },
			runs: 1,
		},
		"liveness probe": {
			with: func(e *env, c *v1.Container) {
				c.LivenessProbe = &v1.Probe{
					ProbeHandler:   v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{e.rt.Bash, "-c", e.script(execScript("exec"))}}},
					TimeoutSeconds: 600, PeriodSeconds: 600,
				}
			},
			// The restarted agent probes again, from the start.
			runs: 2,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			main := e.container("main", serving("main"))
			tc.with(e, &main)
			e.apply(&v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "exec"},
				Spec: v1.PodSpec{
					TerminationGracePeriodSeconds: ptr(int64(60)),
					Containers:                    []v1.Container{main},
				},
			})
			e.waitStart("main")
			if tc.set != nil {
				e.waitPod("exec", "condition=Ready", recordTimeout)
				tc.set(e)
			}
			leader := recordPID(t, e.waitRecord("exec "))
			child := recordPID(t, e.waitRecord("exec-child "))

			e.crash()
			e.mustBeGone("the exec's main process, once the agent died", []int{leader}, lingerTimeout)
			e.restart()
			e.mustBeGone("the exec's child, once the agent restarted", []int{child}, goneTimeout)

			if tc.set != nil {
				// The stop goes on with its signal, without the hook.
				e.waitRecord("stop main")
				e.waitPod("exec", "delete", 20*time.Second)
			} else {
				e.waitRecords("the restarted agent's probe", func(l []string) bool { return count(l, "exec-child ") == 2 }, recordTimeout)
			}
			e.assertCounts(map[string]int{"exec ": tc.runs, "start main ": 1})
			e.finish()
			e.assertCounts(map[string]int{"exec ": tc.runs, "start main ": 1})
		})
	}
}
