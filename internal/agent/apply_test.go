package agent

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime/fake"
	"github.com/podward/podward/internal/store"
)

// hookStore is the real store, with a hook run once at the first write
// that matches: a test makes something happen between the steps of an
// apply, or of a replacement's creation, there. The hook runs before the
// write, with nothing of the store held.
type hookStore struct {
	*store.Store
	mu    sync.Mutex
	match func(write string) bool
	hook  func()
}

// arm sets hook for the next write that match accepts: "PutMeta KEY" with
// a non-empty value, or "PutPod NAMESPACE/NAME UID" (" deleted" appended
// when the pod carries a deletionTimestamp).
func (s *hookStore) arm(match func(write string) bool, hook func()) {
	s.mu.Lock()
	s.match, s.hook = match, hook
	s.mu.Unlock()
}

func (s *hookStore) fire(write string) {
	s.mu.Lock()
	hook := s.hook
	if hook == nil || !s.match(write) {
		hook = nil
	} else {
		s.match, s.hook = nil, nil
	}
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
}

func (s *hookStore) PutMeta(key, value string) error {
	if value != "" {
		s.fire("PutMeta " + key)
	}
	return s.Store.PutMeta(key, value)
}

func (s *hookStore) PutPod(p *model.Pod) error {
	write := fmt.Sprintf("PutPod %s %s", p.Key(), p.UID)
	if p.DeletionTimestamp != nil {
		write += " deleted"
	}
	s.fire(write)
	return s.Store.PutPod(p)
}

// applyAgent is an agent on the fake runtime and clock, with a real store
// behind a hookStore. Its containers named app ignore SIGTERM, so that a
// replaced pod terminates until the test makes app exit.
type applyAgent struct {
	t  *testing.T
	a  *Agent
	rt *fake.Runtime
	st *hookStore
}

func newApplyAgent(t *testing.T) *applyAgent {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(clk)
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hs := &hookStore{Store: st}
	a := New(ctx, Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler), Store: hs})
	t.Cleanup(func() { cancel(); a.Wait(); _ = st.Close() })
	rt.IgnoreStopSignal("app")
	return &applyAgent{t: t, a: a, rt: rt, st: hs}
}

// waitCalls waits until the runtime's calls, one a line, meet cond.
func (x *applyAgent) waitCalls(what string, cond func(calls string) bool) {
	x.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		ch := x.rt.Changed()
		if cond(strings.Join(x.rt.Calls(), "\n")) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			x.t.Fatalf("timed out waiting for %s; calls %q", what, x.rt.Calls())
		}
	}
}

// replacing applies pod web, then a changed spec of it (sleep 200), and
// returns the UID of the first pod, which is terminating then (its app
// was signalled and ignores it).
func (x *applyAgent) replacing() types.UID {
	t := x.t
	t.Helper()
	first, res, err := x.a.Apply(decode(t, webSpec("100")))
	if err != nil || res != Created {
		t.Fatalf("first apply: %v %v", res, err)
	}
	x.waitCalls("app started", func(c string) bool { return strings.Contains(c, "start app") })
	if _, res, err := x.a.Apply(decode(t, webSpec("200"))); err != nil || res != Replaced {
		t.Fatalf("apply of a changed spec: %v %v", res, err)
	}
	x.waitCalls("the old app signalled", func(c string) bool { return strings.Contains(c, "signal app terminated") })
	return first.UID
}

// webSpec is the manifest's pod web with its container sleeping for sleep.
func webSpec(sleep string) string { return strings.Replace(manifest, `"100"`, `"`+sleep+`"`, 1) }

// TestApplyWhileTheOldPodIsRemoved is an apply of a changed spec during
// churn: a first changed apply is replacing the pod (whose container
// ignores SIGTERM, so it terminates until the test lets it exit), and a
// second one, with yet another spec, hands its replacement over to the old
// pod — and right then, before the apply asks for the old pod's deletion,
// the old pod finishes terminating and is removed, its replacement (the
// second apply's pod) created. The apply worked: it answers Replaced
// ("configured"), not that the pod is not found; its spec runs, and no
// stored replacement is left behind.
func TestApplyWhileTheOldPodIsRemoved(t *testing.T) {
	x := newApplyAgent(t)
	a := x.a
	old := x.replacing()

	// At the second changed apply's write-ahead of its replacement, the
	// old pod ends and is removed, and the replacement starts.
	watchCtx, stopWatch := context.WithTimeout(context.Background(), 10*time.Second)
	defer stopWatch()
	watch := a.WatchPods(watchCtx, "default")
	x.st.arm(func(w string) bool { return w == "PutMeta "+replacementKey(old) }, func() {
		x.rt.Exit(old, "app", 0)
		removed, replaced := false, false
		for ev := range watch {
			removed = removed || (ev.Type == "DELETED" && ev.Pod.UID == old)
			replaced = replaced || (ev.Type == "ADDED" && ev.Pod.UID != old)
			if removed && replaced {
				return
			}
		}
		t.Errorf("the old pod was not removed and replaced within 10 s (removed %v, replaced %v)", removed, replaced)
	})
	p, res, err := a.Apply(decode(t, webSpec("300")))
	if err != nil || res != Replaced {
		t.Fatalf("apply of a changed spec while the old pod is removed: %v %v, want Replaced", res, err)
	}
	if p == nil || p.UID != old {
		t.Errorf("the apply answered with pod %v, want the old pod %s (as every replacing apply)", p, old)
	}

	x.waitCalls("the replacement started", func(c string) bool { return strings.Count(c, "start app") == 2 })
	got, err := a.GetPod("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if got.UID == old || got.Spec.Containers[0].Command[1] != "300" {
		t.Errorf("pod web now: UID %s (old %s), command %q; want a new pod with the last applied spec", got.UID, old, got.Spec.Containers[0].Command)
	}
	if pods := a.ListPods("default"); len(pods) != 1 {
		t.Errorf("%d pods, want 1", len(pods))
	}
	if raw, err := x.st.GetMeta(replacementKey(old)); err != nil || raw != "" {
		t.Errorf("the store still keeps a replacement of the removed pod (%v): %.80s", err, raw)
	}
}

// TestApplyWhileTheReplacementIsCreated is an apply during churn too: the
// old pod has just been removed, and its replacement is recorded but its
// worker not yet made (the agent is storing it). An apply of the
// replacement's spec then is unchanged, and a get finds the pod, Pending:
// neither answers that the pod is not found.
func TestApplyWhileTheReplacementIsCreated(t *testing.T) {
	x := newApplyAgent(t)
	a := x.a
	old := x.replacing()

	hooked := make(chan struct{})
	x.st.arm(func(w string) bool {
		return strings.HasPrefix(w, "PutPod default/web ") && !strings.Contains(w, string(old)) && !strings.HasSuffix(w, " deleted")
	}, func() {
		defer close(hooked)
		p, res, err := a.Apply(decode(t, webSpec("200")))
		if err != nil || res != Unchanged {
			t.Errorf("apply of the replacement's spec while it is created: %v %v, want Unchanged", res, err)
		} else if p.UID == old || p.Status.Phase != v1.PodPending {
			t.Errorf("the apply answered with pod %s in phase %q, want the replacement, Pending", p.UID, p.Status.Phase)
		}
		if p, err := a.GetPod("default", "web"); err != nil || p.UID == old || p.Status.Phase != v1.PodPending {
			t.Errorf("get of the replacement while it is created: %v, %v", p, err)
		}
	})
	x.rt.Exit(old, "app", 0)
	select {
	case <-hooked:
	case <-time.After(10 * time.Second):
		t.Fatal("the replacement was not created within 10 s")
	}
	x.waitCalls("the replacement started", func(c string) bool { return strings.Count(c, "start app") == 2 })
}

// An apply that only sets or lowers spec.activeDeadlineSeconds — the one
// change of a running pod's spec the API server lets an update make that
// the node acts on — updates the running pod, as kubectl apply does: same
// UID, the next generation, and the deadline counted from the pod's start
// with the new value (pkg/kubelet/active_deadline.go reads the spec at
// each sync). A raise is another pod, as before; so is any change of a
// static pod's manifest (ApplyStatic).
func TestApplyLowersActiveDeadlineInPlace(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(clk)
	a := New(ctx, Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { cancel(); a.Wait() })
	withDeadline := func(name string, seconds int64) *model.Pod {
		p := named(t, name)
		p.Spec.ActiveDeadlineSeconds = &seconds
		return p
	}

	if _, res, err := a.Apply(withDeadline("web", 600)); err != nil || res != Created {
		t.Fatalf("apply: %v %v", res, err)
	}
	waitRunning(t, a, "web")
	running, _ := a.GetPod("default", "web")
	clk.Step(10 * time.Second)

	// A static pod's manifest changed: another pod, as the kubelet's.
	if _, res, err := a.ApplyStatic(withDeadline("static", 600)); err != nil || res != Created {
		t.Fatalf("static apply: %v %v", res, err)
	}
	if _, res, err := a.ApplyStatic(withDeadline("static", 300)); err != nil || res != Replaced {
		t.Fatalf("static apply of a lower deadline: %v %v, want replaced", res, err)
	}

	updated, res, err := a.Apply(withDeadline("web", 5))
	if err != nil || res != Updated {
		t.Fatalf("apply of a lower deadline: %v %v, want updated", res, err)
	}
	if updated.UID != running.UID || updated.Generation != 2 || *updated.Spec.ActiveDeadlineSeconds != 5 {
		t.Fatalf("updated pod %s generation %d deadline %d, want %s, 2, 5", updated.UID, updated.Generation, *updated.Spec.ActiveDeadlineSeconds, running.UID)
	}
	// Active 10 s already: past the new deadline at once.
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	if err := a.WaitTerminated(wctx, running.UID); err != nil {
		t.Fatal(err)
	}
	p, _, _ := a.Get(running.UID)
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "DeadlineExceeded" || p.Status.Message != "Pod was active on the node longer than the specified deadline" {
		t.Fatalf("status %+v, want Failed, DeadlineExceeded", p.Status)
	}
	if *p.Spec.ActiveDeadlineSeconds != 5 || p.Status.ObservedGeneration != 2 {
		t.Fatalf("spec deadline %d, observed generation %d, want 5 and 2", *p.Spec.ActiveDeadlineSeconds, p.Status.ObservedGeneration)
	}
}

// The changes of activeDeadlineSeconds an update of a running pod may
// make (ValidatePodUpdate): set where there was none, or lowered; never
// raised nor unset, and with nothing else changed.
func TestDeadlineUpdate(t *testing.T) {
	pod := func(seconds *int64, image string) *model.Pod {
		p := named(t, "web")
		p.Spec.ActiveDeadlineSeconds = seconds
		p.Spec.Containers[0].Image = image
		return p
	}
	n := func(v int64) *int64 { return &v }
	for name, tc := range map[string]struct {
		old, next *model.Pod
		want      bool
	}{
		"set":                  {pod(nil, "busybox"), pod(n(30), "busybox"), true},
		"lowered":              {pod(n(600), "busybox"), pod(n(30), "busybox"), true},
		"same":                 {pod(n(30), "busybox"), pod(n(30), "busybox"), false},
		"raised":               {pod(n(30), "busybox"), pod(n(600), "busybox"), false},
		"unset":                {pod(n(30), "busybox"), pod(nil, "busybox"), false},
		"lowered, image too":   {pod(n(600), "busybox"), pod(n(30), "nginx"), false},
		"nothing but an image": {pod(nil, "busybox"), pod(nil, "nginx"), false},
	} {
		if got := deadlineUpdate(tc.old, tc.next); got != tc.want {
			t.Errorf("%s: deadlineUpdate = %v, want %v", name, got, tc.want)
		}
	}
}
