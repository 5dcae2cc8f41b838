package agent

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/runtime/fake"
	"github.com/podward/podward/internal/store"
)

// What removed pods leave behind (issue 12, item 3): their logs go once
// they were kept for Config.KeepTerminatedPodLogs, as the kubelet's
// container GC removes a deleted pod's log directory
// (pkg/kubelet/kuberuntime/kuberuntime_gc.go, evictPodLogsDirectories),
// and the store keeps nothing of them.

// TestRemovedPodsLeaveNothing: a pod replaced by an apply of a changed
// spec, and its replacement deleted, leave no logs, no stored pod,
// checkpoint, event or replacement record — also after a restart.
func TestRemovedPodsLeaveNothing(t *testing.T) {
	n := newNode(t)
	first, res, err := n.a.Apply(decode(t, manifest))
	if err != nil || res != Created {
		t.Fatalf("apply: %v %v", res, err)
	}
	n.waitCalls("start", func(c []string) bool { return slices.Contains(c, "start app") })
	if _, res, err := n.a.Apply(decode(t, webSpec("200"))); err != nil || res != Replaced {
		t.Fatalf("apply of a changed spec: %v %v", res, err)
	}
	n.waitCalls("replacement started", func(c []string) bool { return strings.Count(strings.Join(c, "\n"), "start app") == 2 })
	next, err := n.a.GetPod("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.a.DeletePod("default", "web", nil); err != nil {
		t.Fatal(err)
	}
	n.waitCalls("the logs of both pods removed", func(c []string) bool {
		return slices.Contains(c, "remove logs "+string(first.UID)) && slices.Contains(c, "remove logs "+string(next.UID))
	})
	assertNothingLeft(t, n)
	n.crash()
	n.start()
	assertNothingLeft(t, n)
}

// assertNothingLeft checks that the node keeps nothing of a pod: no logs in
// the runtime, and in the store only the boot ID.
func assertNothingLeft(t *testing.T, n *node) {
	t.Helper()
	if logs, _ := n.rt.PodLogs(); len(logs) != 0 {
		t.Errorf("the runtime keeps the logs of %v", logs)
	}
	if pods, err := n.st.ListPods(); err != nil || len(pods) != 0 {
		t.Errorf("the store keeps %d pods (%v)", len(pods), err)
	}
	if evs, err := n.st.ListAllEvents(); err != nil || len(evs) != 0 {
		t.Errorf("the store keeps %d events (%v)", len(evs), err)
	}
	if keys, err := n.st.MetaKeys(""); err != nil || !slices.Equal(keys, []string{"bootID"}) {
		t.Errorf("the store keeps the meta keys %q (%v), want only bootID", keys, err)
	}
}

// TestKeepTerminatedPodLogs: with KeepTerminatedPodLogs set, a removed
// pod's logs are kept that long; an agent that starts again removes those
// kept long enough at once, and the others when their time comes.
func TestKeepTerminatedPodLogs(t *testing.T) {
	n := newNodeWith(t, func(c *Config) { c.KeepTerminatedPodLogs = time.Hour })
	pod, err := n.a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	n.waitCalls("start", func(c []string) bool { return slices.Contains(c, "start app") })
	if _, err := n.a.DeletePod("default", "web", nil); err != nil {
		t.Fatal(err)
	}
	n.waitCalls("cleanup", func(c []string) bool { return slices.Contains(c, "cleanup") })
	n.waitPod("default", "web", func(err error, _ bool) bool { return errors.Is(err, ErrNotFound) })

	removed := func() bool { return slices.Contains(n.rt.Calls(), "remove logs "+string(pod.UID)) }
	n.crash()
	n.clk.Step(30 * time.Minute)
	n.start()
	if removed() {
		t.Fatal("the logs were removed 30 minutes after the pod, want them kept an hour")
	}
	n.crash()
	n.clk.Step(31 * time.Minute)
	n.start() // removes them before it returns
	if !removed() {
		t.Fatalf("the logs are kept 61 minutes after the pod, want them removed after an hour; calls %q", n.rt.Calls())
	}
}

// TestLogCollectorRemovesWhenDue: the collector removes each pod's logs at
// its time, in that order, and not before. It runs in a synctest bubble:
// the fake clock is stepped only once the collector is blocked, its timer
// armed, so that a step never comes between its look at the clock and its
// timer.
func TestLogCollectorRemovesWhenDue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		clk := clocktesting.NewFakeClock(t0)
		rt := fake.New(clk)
		c := newLogCollector(rt, time.Hour, clk, slog.New(slog.DiscardHandler))
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); c.run(ctx) }()
		defer func() { cancel(); <-done }()

		removed := func(uid types.UID) bool {
			synctest.Wait()
			return slices.Contains(rt.Calls(), "remove logs "+string(uid))
		}
		step := func(d time.Duration) {
			synctest.Wait()
			clk.Step(d)
		}
		c.removed("late")                           // due at t0+1h
		c.schedule("early", t0.Add(10*time.Minute)) // due before it
		step(10 * time.Minute)
		if !removed("early") {
			t.Fatalf("the logs of early were not removed when due; calls %q", rt.Calls())
		}
		step(49 * time.Minute)
		c.schedule("now", clk.Now())
		if !removed("now") {
			t.Fatalf("the logs of now were not removed at once; calls %q", rt.Calls())
		}
		if removed("late") {
			t.Fatalf("removed 59 minutes after the pod, want an hour; calls %q", rt.Calls())
		}
		step(time.Minute)
		if !removed("late") {
			t.Fatalf("the logs of late were not removed an hour after the pod; calls %q", rt.Calls())
		}
		if got := strings.Join(rt.Calls(), ","); got != "remove logs early,remove logs now,remove logs late" {
			t.Errorf("calls %s", got)
		}
	})
}

// TestRecoverDeletesStaleReplacements: replacement records of pods the
// store no longer has — blanked by an older podward, or whose clearing
// failed — are deleted at start; a pending one is kept.
func TestRecoverDeletesStaleReplacements(t *testing.T) {
	n := newNode(t)
	pod, err := n.a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	n.crash()
	st, err := store.Open(filepath.Join(n.dir, "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range map[string]string{
		replacementKey("gone-blank"): "",
		replacementKey("gone"):       `{"metadata":{"name":"x"}}`,
		replacementKey(pod.UID):      `{"metadata":{"name":"web"},"spec":{"containers":[{"name":"app","image":"busybox","command":["sleep","200"]}]}}`,
	} {
		if err := st.PutMeta(key, value); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.Close()
	n.start()
	keys, err := n.st.MetaKeys(replacementPrefix)
	if err != nil || !slices.Equal(keys, []string{replacementKey(pod.UID)}) {
		t.Fatalf("replacement records after the start %q (%v), want only the pending one of %s", keys, err, pod.UID)
	}
}
