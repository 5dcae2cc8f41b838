package podworker

import (
	"context"
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

// The worker's behaviour — the lifecycle order, kills and their races,
// defer containers, restarts, hooks, probes, agent restarts — is scripted
// in testdata/*.txt (scenario_test.go). The Go tests are for what a script
// does not express: the inbox's coalescing from the inside, the checkpoint's
// on-disk format, Restore's refusals, images (images_test.go), a runtime
// that stops containers itself; and goroutine leaks, for all of them.
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
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessWith(t, func(rt *fake.Runtime) runtime.Runtime { return rt })
}

// newHarnessWith gives the workers the runtime wrap makes of the fake one
// (e.g. one with images).
func newHarnessWith(t *testing.T, wrap func(*fake.Runtime) runtime.Runtime) *harness {
	t.Helper()
	return newHarnessConfig(t, wrap, nil)
}

// newHarnessConfig is newHarnessWith whose Config set changes first (e.g.
// to give the workers metrics).
func newHarnessConfig(t *testing.T, wrap func(*fake.Runtime) runtime.Runtime, set func(*harness, *Config)) *harness {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{t: t, clk: clocktesting.NewFakeClock(t0), changed: make(chan struct{})}
	h.rt = fake.New(h.clk)
	h.rec = events.NewRecorder(h.clk, 1000)
	cfg := Config{Runtime: wrap(h.rt), Recorder: h.rec, Clock: notifyingClock{h.clk, h}, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler), OnChange: func(types.UID) { h.ring() }}
	if set != nil {
		set(h, &cfg)
	}
	h.w = New(ctx, cfg)
	var dispatch sync.WaitGroup
	dispatch.Add(1)
	go func() { defer dispatch.Done(); dispatchEvents(ctx, h.w, h.rt.Events()) }()
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
	if pw.setup.ctx.Err() == nil {
		t.Error("the kill did not cancel the setup context")
	}
	if len(pw.inbox.notify) != 1 {
		t.Error("updates must leave exactly one wake-up pending")
	}
}

// A delete that coalesces with a node shutdown's kill (a busy worker gets
// both at once) still deletes the pod; a shutdown's kill does not turn a
// delete into none.
func TestDeleteOutranksShutdownKill(t *testing.T) {
	shutdown := &KillOptions{GracePeriodSeconds: ptr.To[int64](10), Reason: TerminationNodeShutdown}
	deleted := &KillOptions{GracePeriodSeconds: ptr.To[int64](20), Reason: TerminationDeleted}
	for _, order := range [][2]*KillOptions{{shutdown, deleted}, {deleted, shutdown}} {
		k := mergeKill(mergeKill(nil, order[0]), order[1])
		if k.Reason != TerminationDeleted || *k.GracePeriodSeconds != 10 {
			t.Errorf("%s then %s: reason %s, grace %d; want Deleted, 10", order[0].Reason, order[1].Reason, k.Reason, *k.GracePeriodSeconds)
		}
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

// The conditions others set (a readiness gate's) are published as the
// source gave them, their times included: the node neither owns nor dates
// them. Its own condition of a type it shares (DisruptionTarget) is not
// among them until it generates one.
func TestOthersConditionsKeepTheirTimes(t *testing.T) {
	h := newHarness(t)
	p := testPod("gated", v1.RestartPolicyAlways, "main:app")
	p.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "example.com/gate"}}
	set := metav1.NewTime(t0.Add(-time.Hour))
	p.Status.Conditions = []v1.PodCondition{
		{Type: "example.com/gate", Status: v1.ConditionTrue, Reason: "Set", LastTransitionTime: set},
		{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "Other"},
	}
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitFor("Ready", func() bool {
		pod, _, _ := h.w.PodStatus(p.UID)
		return pod != nil && slices.ContainsFunc(pod.Status.Conditions, func(c v1.PodCondition) bool {
			return c.Type == v1.PodReady && c.Status == v1.ConditionTrue
		})
	})
	pod, _, _ := h.w.PodStatus(p.UID)
	if c := pod.Status.Conditions[0]; c.Type != "example.com/gate" || c.Reason != "Set" || !c.LastTransitionTime.Equal(&set) {
		t.Fatalf("first condition %+v, want the gate's as given", c)
	}
	if c := pod.Status.Conditions[1]; c.Type != v1.DisruptionTarget || c.Reason != "Other" {
		t.Fatalf("second condition %+v, want the source's DisruptionTarget", c)
	}
}
