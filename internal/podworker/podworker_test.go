package podworker

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// waitTimeout bounds every wait on a condition; tests never sleep.
const waitTimeout = 10 * time.Second

type harness struct {
	t   *testing.T
	clk *clocktesting.FakeClock
	rt  *fake.Runtime
	rec *events.Recorder
	w   *Workers

	mu      sync.Mutex
	changed chan struct{}
	// stopFirst ends the first Workers and their dispatcher.
	stopFirst func()
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, func(rt *fake.Runtime) runtime.Runtime { return rt })
}

// newHarnessWith gives the workers the runtime wrap makes of the fake one
// (e.g. one with images).
func newHarnessWith(t *testing.T, wrap func(*fake.Runtime) runtime.Runtime) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, clk: clocktesting.NewFakeClock(t0), changed: make(chan struct{})}
	h.rt = fake.New(h.clk)
	h.rec = events.NewRecorder(h.clk, 1000)
	cfg := planner.DefaultConfig()
	h.w = New(ctx, Config{Runtime: wrap(h.rt), Recorder: h.rec, Clock: notifyingClock{h.clk, h}, Planner: cfg, Logger: slog.New(slog.DiscardHandler), OnChange: func(types.UID) { h.ring() }})
	var dispatch sync.WaitGroup
	dispatch.Add(1)
	go func() { defer dispatch.Done(); dispatchEvents(ctx, h.w, h.rt.Events()) }()
	h.stopFirst = func() {
		cancel()
		dispatch.Wait()
	}
	w := h.w
	t.Cleanup(func() {
		cancel()
		w.Wait()
		dispatch.Wait()
	})
	return h
}

// notifyingClock wakes the harness whenever the worker sets a timer, so
// that a test can wait for "the worker now waits on the clock".
type notifyingClock struct {
	*clocktesting.FakeClock
	h *harness
}

func (c notifyingClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.h.ring()
	return t
}

func (h *harness) ring() {
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

func (h *harness) changedCh() <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.changed
}

// waitFor waits until cond holds, re-checking whenever the runtime or a
// worker reports a change.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(waitTimeout)
	for {
		a, b := h.rt.Changed(), h.changedCh()
		if cond() {
			return
		}
		select {
		case <-a:
		case <-b:
		case <-deadline:
			h.t.Fatalf("timed out waiting for %s; calls: %q", what, h.rt.Calls())
		}
	}
}

func (h *harness) waitCalls(want ...string) {
	h.t.Helper()
	h.waitFor(fmt.Sprintf("calls %q", want), func() bool { return slices.Equal(h.rt.Calls(), want) })
}

func (h *harness) waitCall(call string) {
	h.t.Helper()
	h.waitFor("call "+call, func() bool { return slices.Contains(h.rt.Calls(), call) })
}

func (h *harness) waitPhase(uid types.UID, p Phase) {
	h.t.Helper()
	h.waitFor("phase "+p.String(), func() bool { _, got, _ := h.w.PodStatus(uid); return got == p })
}

func (h *harness) waitEvent(uid types.UID, reason string) events.Event {
	h.t.Helper()
	var found events.Event
	h.waitFor("event "+reason, func() bool {
		for _, e := range h.rec.List(uid) {
			if e.Reason == reason {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// step advances the fake clock once the worker waits on a timer.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.waitFor("a timer", h.clk.HasWaiters)
	h.clk.Step(d)
}

func (h *harness) kill(p *model.Pod, grace *int64) {
	h.w.UpdatePod(UpdateOptions{Pod: p, Kill: &KillOptions{GracePeriodSeconds: grace, Reason: "Deleted"}})
}

// testPod builds a pod from "init:a", "sidecar:s", "main:m", "defer:d".
func testPod(uid string, policy v1.RestartPolicy, names ...string) *model.Pod {
	p := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "default", UID: types.UID(uid)}}}
	p.Spec.RestartPolicy = policy
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
	for _, n := range names {
		role, name, _ := strings.Cut(n, ":")
		c := v1.Container{Name: name, Image: "busybox", Command: []string{"true"}}
		switch role {
		case "init":
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		case "sidecar":
			c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"drain"}}}}
			p.Spec.InitContainers = append(p.Spec.InitContainers, c)
		case "main":
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"bye"}}}}
			p.Spec.Containers = append(p.Spec.Containers, c)
		case "defer":
			p.Defer = append(p.Defer, c)
		}
	}
	return p
}

func TestFullLifecycleOrder(t *testing.T) {
	h := newHarness(t)
	p := testPod("u1", v1.RestartPolicyAlways, "sidecar:proxy", "init:setup", "main:app", "main:web", "defer:d1", "defer:d2")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCalls("prepare", "start proxy", "start setup")
	h.rt.Exit(p.UID, "setup", 0)
	h.waitFor("regular containers", func() bool { return len(h.rt.Running(p.UID)) == 3 })
	if !h.w.CouldHaveRunningContainers(p.UID) || h.w.IsPodTerminationRequested(p.UID) {
		t.Fatal("a running pod must report running containers and no termination request")
	}

	h.kill(p, nil)
	h.waitCall("start d1")
	if !h.w.IsPodTerminationRequested(p.UID) || !h.w.ShouldPodContainersBeTerminating(p.UID) {
		t.Fatal("termination requested but the queries do not say so")
	}
	if got := h.rt.Running(p.UID); len(got) != 4 {
		t.Fatalf("while defer containers run, everything else keeps running; running: %v", got)
	}
	h.rt.Exit(p.UID, "d1", 0)
	h.waitCall("start d2")
	h.rt.Exit(p.UID, "d2", 0)
	h.waitPhase(p.UID, Terminated)

	want := []string{
		"prepare", "start proxy", "start setup", "exit setup 0", "start app", "start web",
		"start d1", "exit d1 0", "start d2", "exit d2 0",
		// No preStop for regular containers: the defer containers replace them.
		"signal app terminated", "exit app 143", "signal web terminated", "exit web 143",
		// The sidecar keeps its preStop hook.
		"exec proxy [drain]", "signal proxy terminated", "exit proxy 143",
	}
	h.waitFor("cleanup", func() bool { return slices.Contains(h.rt.Calls(), "cleanup") })
	got := h.rt.Calls()
	// The two regular containers stop concurrently; compare them as a set.
	if !sameOrderIgnoringPairs(got[:len(want)], want, [2]string{"app", "web"}) || got[len(want)] != "cleanup" {
		t.Fatalf("calls:\n got  %q\n want %q + cleanup", got, want)
	}
	if !h.w.IsPodKnownTerminated(p.UID) || h.w.CouldHaveRunningContainers(p.UID) || !h.w.ShouldPodContentBeRemoved(p.UID) {
		t.Fatal("terminated pod: queries disagree")
	}
	pod, _, _ := h.w.PodStatus(p.UID)
	if pod.Status.Phase != v1.PodFailed {
		t.Errorf("phase after SIGTERM of regular containers = %s, want Failed (as the kubelet)", pod.Status.Phase)
	}
	var defers []v1.ContainerStatus
	if err := json.Unmarshal([]byte(pod.Annotations[model.DeferContainerStatusesAnnotation]), &defers); err != nil || len(defers) != 2 {
		t.Fatalf("defer statuses annotation: %v %q", err, pod.Annotations[model.DeferContainerStatusesAnnotation])
	}
	if defers[1].State.Terminated == nil || defers[1].State.Terminated.Reason != "Completed" {
		t.Errorf("defer container d2 status = %+v", defers[1].State)
	}
}

// sameOrderIgnoringPairs compares two call lists, allowing the calls that
// name the two paired containers to interleave in any order.
func sameOrderIgnoringPairs(got, want []string, pair [2]string) bool {
	if len(got) != len(want) {
		return false
	}
	norm := func(list []string) []string {
		out := make([]string, len(list))
		for i, s := range list {
			out[i] = strings.ReplaceAll(strings.ReplaceAll(s, " "+pair[0], " X"), " "+pair[1], " X")
		}
		return out
	}
	g, w := norm(got), norm(want)
	if !slices.Equal(g, w) {
		return false
	}
	a, b := slices.Clone(got), slices.Clone(want)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestKillDuringSetupStartsNothing(t *testing.T) {
	h := newHarness(t)
	entered := make(chan struct{})
	h.rt.PrepareHook = func(ctx context.Context) error {
		close(entered)
		<-ctx.Done() // a pull or mount that only a kill ends
		return ctx.Err()
	}
	p := testPod("u2", v1.RestartPolicyAlways, "sidecar:proxy", "main:app", "defer:d")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	select {
	case <-entered:
	case <-time.After(waitTimeout):
		t.Fatal("setup never began")
	}
	h.kill(p, nil)
	h.waitPhase(p.UID, Terminated)
	h.waitEvent(p.UID, "DeferSkipped")
	for _, c := range h.rt.Calls() {
		if strings.HasPrefix(c, "start") {
			t.Fatalf("a container started after the kill: %q", h.rt.Calls())
		}
	}
}

func TestKillDuringStartStartsNothing(t *testing.T) {
	h := newHarness(t)
	entered := make(chan struct{})
	h.rt.StartHook = func(ctx context.Context, ref model.ContainerRef) error {
		close(entered)
		<-ctx.Done() // an image pull that only a kill ends
		return ctx.Err()
	}
	p := testPod("u3", v1.RestartPolicyAlways, "init:setup", "main:app")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	<-entered
	h.kill(p, nil)
	h.waitPhase(p.UID, Terminated)
	h.waitCall("cleanup")
	if got := h.rt.Calls(); !slices.Equal(got, []string{"prepare", "cleanup"}) {
		t.Fatalf("calls = %q, want only prepare and cleanup", got)
	}
}

func TestKillBeforeFirstSyncStartsNothing(t *testing.T) {
	h := newHarness(t)
	p := testPod("u4", v1.RestartPolicyAlways, "main:app")
	// The pod's first update is already a kill: deleted before its worker
	// ever synced it.
	h.kill(p, ptr.To[int64](0))
	h.waitPhase(p.UID, Terminated)
	for _, c := range h.rt.Calls() {
		if strings.HasPrefix(c, "start") {
			t.Fatalf("started after a kill that came before the first sync: %q", h.rt.Calls())
		}
	}
}

func TestUpdatesCoalesceAndKillIsSticky(t *testing.T) {
	// A worker whose goroutine is not running: the updates pile up the way
	// they do while a real worker is busy.
	w := New(context.Background(), Config{Clock: clocktesting.NewFakeClock(t0), Planner: planner.DefaultConfig()})
	p1 := testPod("u5", v1.RestartPolicyAlways, "main:app")
	pw := newPodWorker(w, p1)
	p2 := testPod("u5", v1.RestartPolicyAlways, "main:app")
	p2.Labels = map[string]string{"v": "2"}
	pw.update(UpdateOptions{Pod: p1})
	pw.update(UpdateOptions{Pod: p1, Kill: &KillOptions{GracePeriodSeconds: ptr.To[int64](30)}})
	pw.update(UpdateOptions{Pod: p1, Kill: &KillOptions{GracePeriodSeconds: ptr.To[int64](10)}})
	pw.update(UpdateOptions{Pod: p1, Kill: &KillOptions{GracePeriodSeconds: ptr.To[int64](20)}})
	pw.update(UpdateOptions{Pod: p2})
	var pods []*model.Pod
	var kills []*KillOptions
	for _, in := range pw.inbox.drain() {
		switch in.kind {
		case inputPod:
			pods = append(pods, in.pod)
		case inputKill:
			kills = append(kills, in.kill)
		}
	}
	if len(pods) != 1 || pods[0] != p2 {
		t.Errorf("pending pods %v: the latest pod did not win", pods)
	}
	if !pw.inbox.killRecorded() || len(kills) != 1 {
		t.Fatalf("pending kills %v: a later update without a kill cleared the kill, or kills did not coalesce", kills)
	}
	if g := *kills[0].GracePeriodSeconds; g != 10 {
		t.Errorf("coalesced grace period = %d, want the shortest, 10", g)
	}
	if pw.setupCtx.Err() == nil {
		t.Error("the kill did not cancel the setup context")
	}
	if len(pw.inbox.notify) != 1 {
		t.Error("updates must leave exactly one wake-up pending")
	}
}

func TestShorterKillBringsDeadlineForwardLongerDoesNot(t *testing.T) {
	h := newHarness(t)
	p := testPod("u6", v1.RestartPolicyAlways, "main:app")
	h.rt.IgnoreStopSignal("app")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	h.kill(p, ptr.To[int64](30))
	h.waitCall("signal app terminated")
	h.kill(p, ptr.To[int64](300)) // must not lengthen
	h.kill(p, ptr.To[int64](5))
	h.waitFor("deadline at 5s", func() bool {
		pod, _, _ := h.w.PodStatus(p.UID)
		return pod.DeletionTimestamp != nil && pod.DeletionTimestamp.Time.Equal(t0.Add(5*time.Second))
	})
	h.step(5 * time.Second)
	h.waitCall("signal app killed")
	h.waitPhase(p.UID, Terminated)
	if now := h.clk.Now(); now.Sub(t0) != 5*time.Second {
		t.Fatalf("killed at %s, want at the shortened deadline 5s", now.Sub(t0))
	}
}

func TestDeadlineKillsEverythingAndNamesIncompleteDefers(t *testing.T) {
	h := newHarness(t)
	p := testPod("u7", v1.RestartPolicyAlways, "sidecar:proxy", "main:app", "defer:d1", "defer:d2")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	h.kill(p, nil)
	h.waitCall("start d1")
	h.step(60 * time.Second)
	h.waitPhase(p.UID, Terminated)
	e := h.waitEvent(p.UID, "GracePeriodExceeded")
	if !strings.Contains(e.Message, "did not complete: d1, d2") || e.Type != events.Warning {
		t.Errorf("GracePeriodExceeded event = %+v", e)
	}
	for _, e := range h.rec.List(p.UID) {
		if e.Reason == "DeferFailed" && strings.Contains(e.Message, "retried") {
			t.Errorf("a defer container killed at the deadline is announced as retried: %q", e.Message)
		}
	}
	for _, c := range []string{"signal proxy killed", "signal app killed", "signal d1 killed"} {
		if !slices.Contains(h.rt.Calls(), c) {
			t.Errorf("missing %q in %q", c, h.rt.Calls())
		}
	}
}

func TestGracePeriodZeroSkipsDefer(t *testing.T) {
	h := newHarness(t)
	p := testPod("u8", v1.RestartPolicyAlways, "main:app", "defer:d1")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	h.kill(p, ptr.To[int64](0))
	h.waitPhase(p.UID, Terminated)
	e := h.waitEvent(p.UID, "DeferSkipped")
	if !strings.Contains(e.Message, "grace period is 0") {
		t.Errorf("DeferSkipped message = %q", e.Message)
	}
	if slices.Contains(h.rt.Calls(), "start d1") || !slices.Contains(h.rt.Calls(), "signal app killed") {
		t.Fatalf("calls = %q", h.rt.Calls())
	}
}

func TestFailingDeferIsRetriedThenPodEndsPromptly(t *testing.T) {
	h := newHarness(t)
	p := testPod("u9", v1.RestartPolicyAlways, "main:app", "defer:d1")
	h.rt.IgnoreStopSignal("app") // a shell as PID 1
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	h.kill(p, nil)
	h.waitCall("start d1")
	h.rt.Exit(p.UID, "d1", 1)
	h.waitFor("immediate first retry", func() bool { return count(h.rt.Calls(), "start d1") == 2 })
	h.rt.Exit(p.UID, "d1", 1)
	h.waitEvent(p.UID, "BackOff")
	h.step(10 * time.Second)
	h.waitFor("second retry after 10s", func() bool { return count(h.rt.Calls(), "start d1") == 3 })
	h.rt.Exit(p.UID, "d1", 0)
	h.waitCall("signal app terminated")
	h.step(2 * time.Second) // the prompt kill, not the 60 s grace period
	h.waitPhase(p.UID, Terminated)
	if took := h.clk.Now().Sub(t0); took != 12*time.Second {
		t.Errorf("pod terminated after %s, want 12s (10s backoff + 2s prompt kill)", took)
	}
	if n := countEvents(h.rec.List(p.UID), "DeferFailed"); n != 2 {
		t.Errorf("DeferFailed events = %d, want 2", n)
	}
	pod, _, _ := h.w.PodStatus(p.UID)
	var defers []v1.ContainerStatus
	_ = json.Unmarshal([]byte(pod.Annotations[model.DeferContainerStatusesAnnotation]), &defers)
	if len(defers) != 1 || defers[0].RestartCount != 2 || defers[0].State.Terminated == nil || defers[0].State.Terminated.ExitCode != 0 {
		t.Errorf("defer status = %+v", defers)
	}
}

func TestCompletionRunsDeferThenStopsSidecar(t *testing.T) {
	h := newHarness(t)
	p := testPod("u10", v1.RestartPolicyNever, "sidecar:proxy", "main:job", "defer:upload")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start job")
	h.rt.Exit(p.UID, "job", 0)
	h.waitCall("start upload")
	if got := h.rt.Running(p.UID); !slices.Contains(got, "proxy") {
		t.Fatalf("the sidecar must still run while the defer container uploads; running %v", got)
	}
	h.rt.Exit(p.UID, "upload", 0)
	h.waitPhase(p.UID, Terminated)
	pod, _, _ := h.w.PodStatus(p.UID)
	if pod.Status.Phase != v1.PodSucceeded {
		t.Errorf("phase = %s, want Succeeded", pod.Status.Phase)
	}
	if !slices.Contains(h.rt.Calls(), "signal proxy terminated") {
		t.Errorf("sidecar not stopped: %q", h.rt.Calls())
	}
}

func TestCrashLoopStatus(t *testing.T) {
	h := newHarness(t)
	p := testPod("u11", v1.RestartPolicyAlways, "main:app")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	h.rt.Exit(p.UID, "app", 1)
	h.waitFor("restart", func() bool { return count(h.rt.Calls(), "start app") == 2 })
	h.rt.Exit(p.UID, "app", 2)
	h.waitEvent(p.UID, "BackOff")
	var cs v1.ContainerStatus
	h.waitFor("CrashLoopBackOff status", func() bool {
		pod, _, _ := h.w.PodStatus(p.UID)
		cs = pod.Status.ContainerStatuses[0]
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff"
	})
	if cs.RestartCount != 1 || cs.LastTerminationState.Terminated == nil || cs.LastTerminationState.Terminated.ExitCode != 2 {
		t.Errorf("status = %+v", cs)
	}
	if !strings.Contains(cs.State.Waiting.Message, "back-off 10s") {
		t.Errorf("waiting message = %q", cs.State.Waiting.Message)
	}
}

func TestQueriesForUnknownPod(t *testing.T) {
	h := newHarness(t)
	uid := types.UID("nope")
	if h.w.IsPodKnownTerminated(uid) || h.w.IsPodTerminationRequested(uid) || h.w.CouldHaveRunningContainers(uid) || !h.w.ShouldPodContentBeRemoved(uid) {
		t.Fatal("unknown pod: wrong answers")
	}
	p := testPod("u12", v1.RestartPolicyAlways, "main:app")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	if h.w.Forget(p.UID) {
		t.Fatal("Forget dropped a running pod")
	}
	h.kill(p, nil)
	h.waitPhase(p.UID, Terminated)
	if !h.w.Forget(p.UID) || h.w.CouldHaveRunningContainers(p.UID) {
		t.Fatal("Forget of a terminated pod")
	}
}

func count(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func countEvents(list []events.Event, reason string) int {
	n := 0
	for _, e := range list {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

func TestQueriesInEachPhase(t *testing.T) {
	h := newHarness(t)
	p := testPod("q1", v1.RestartPolicyAlways, "main:app", "defer:d")
	type answers struct{ requested, terminating, couldRun, removable, terminated bool }
	ask := func() answers {
		return answers{
			h.w.IsPodTerminationRequested(p.UID), h.w.ShouldPodContainersBeTerminating(p.UID),
			h.w.CouldHaveRunningContainers(p.UID), h.w.ShouldPodContentBeRemoved(p.UID), h.w.IsPodKnownTerminated(p.UID),
		}
	}
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	if got, want := ask(), (answers{couldRun: true}); got != want {
		t.Errorf("syncing: %+v, want %+v", got, want)
	}
	h.kill(p, nil)
	h.waitCall("start d")
	if got, want := ask(), (answers{requested: true, terminating: true, couldRun: true}); got != want {
		t.Errorf("terminating: %+v, want %+v", got, want)
	}
	h.rt.Exit(p.UID, "d", 0)
	h.waitPhase(p.UID, Terminated)
	if got, want := ask(), (answers{requested: true, terminating: true, removable: true, terminated: true}); got != want {
		t.Errorf("terminated: %+v, want %+v", got, want)
	}
}

func TestSlowCleanupDoesNotHoldUpTermination(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	h.rt.CleanupHook = func(ctx context.Context) {
		select { // removing a huge emptyDir
		case <-release:
		case <-ctx.Done():
		}
	}
	defer close(release)
	p := testPod("c1", v1.RestartPolicyAlways, "main:app")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	h.kill(p, nil)
	select {
	case <-h.w.Terminated(p.UID):
	case <-time.After(waitTimeout):
		t.Fatal("the pod is not reported terminated while its clean-up runs")
	}
	select {
	case <-h.w.Done(p.UID):
		t.Fatal("the worker finished before its clean-up did")
	default:
	}
}

func withPostStart(p *model.Pod, container string, cmd ...string) {
	for i := range p.Spec.InitContainers {
		if c := &p.Spec.InitContainers[i]; c.Name == container {
			if c.Lifecycle == nil {
				c.Lifecycle = &v1.Lifecycle{}
			}
			c.Lifecycle.PostStart = &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}}
		}
	}
	for i := range p.Spec.Containers {
		if c := &p.Spec.Containers[i]; c.Name == container {
			if c.Lifecycle == nil {
				c.Lifecycle = &v1.Lifecycle{}
			}
			c.Lifecycle.PostStart = &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: cmd}}
		}
	}
}

func TestSidecarPostStartGatesTheNextInitContainer(t *testing.T) {
	h := newHarness(t)
	release := make(chan struct{})
	h.rt.ExecHook = func(ctx context.Context, ref model.ContainerRef, cmd []string) ([]byte, int, error) {
		if ref.Name == "proxy" && cmd[0] == "warm-up" {
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		return nil, 0, nil
	}
	p := testPod("ps1", v1.RestartPolicyAlways, "sidecar:proxy", "init:setup", "main:app")
	withPostStart(p, "proxy", "warm-up")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("exec proxy [warm-up]")
	pod, _, _ := h.w.PodStatus(p.UID)
	if st := pod.Status.InitContainerStatuses[0]; st.Started == nil || *st.Started || st.Ready {
		t.Fatalf("a sidecar whose postStart runs is started=%v ready=%v", st.Started, st.Ready)
	}
	if slices.Contains(h.rt.Calls(), "start setup") {
		t.Fatalf("the next init container started before the sidecar's postStart finished: %q", h.rt.Calls())
	}
	close(release)
	h.waitCall("start setup")
}

func TestPostStartFailureKillsTheContainer(t *testing.T) {
	h := newHarness(t)
	h.rt.ExecHook = func(ctx context.Context, ref model.ContainerRef, cmd []string) ([]byte, int, error) {
		if cmd[0] == "register" {
			return []byte("registry unreachable"), 1, nil
		}
		return nil, 0, nil
	}
	p := testPod("ps2", v1.RestartPolicyNever, "main:app")
	withPostStart(p, "app", "register")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	e := h.waitEvent(p.UID, "FailedPostStartHook")
	if !strings.Contains(e.Message, "registry unreachable") {
		t.Errorf("event message %q does not carry the hook's output", e.Message)
	}
	h.waitCall("signal app killed")
	h.waitPhase(p.UID, Terminated)
	pod, _, _ := h.w.PodStatus(p.UID)
	if pod.Status.Phase != v1.PodFailed || count(h.rt.Calls(), "start app") != 1 {
		t.Fatalf("phase %s, calls %q: want Failed with no restart (restartPolicy Never)", pod.Status.Phase, h.rt.Calls())
	}
}

func TestStopSignalIsHonoured(t *testing.T) {
	h := newHarness(t)
	p := testPod("ss1", v1.RestartPolicyAlways, "main:app")
	p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{StopSignal: ptr.To(v1.SIGUSR1)}
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	h.kill(p, nil)
	h.waitCall("signal app user defined signal 1")
	h.waitPhase(p.UID, Terminated)
	if slices.Contains(h.rt.Calls(), "signal app terminated") {
		t.Fatalf("SIGTERM sent despite lifecycle.stopSignal SIGUSR1: %q", h.rt.Calls())
	}
}

// dispatchEvents feeds a fake runtime's events to the workers until ctx ends, as
// the agent's dispatcher does.
func dispatchEvents(ctx context.Context, w *Workers, events <-chan runtime.Event) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			w.HandleEvent(ev)
		}
	}
}
