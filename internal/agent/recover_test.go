package agent

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime/fake"
	"github.com/podward/podward/internal/store"
)

// node is an agent that can be crashed and started again on the same
// store, runtime and clock.
type node struct {
	t      *testing.T
	dir    string
	clk    *clocktesting.FakeClock
	rt     *fake.Runtime
	st     *store.Store
	a      *Agent
	cancel context.CancelFunc
	// config, when set, changes the agent's configuration at each start.
	config func(*Config)
	// maxPods is the MaxPods of the next start.
	maxPods int
	// restartShutdownPods is the agents' Config.RestartShutdownPods;
	// shuttingDown, when set, is told them before they recover.
	restartShutdownPods, shuttingDown bool
}

func newNode(t *testing.T) *node { return newNodeWith(t, nil) }

// newNodeWith is newNode whose agents' configuration config changes.
func newNodeWith(t *testing.T, config func(*Config)) *node {
	t.Helper()
	dir := t.TempDir()
	bootIDPath = filepath.Join(dir, "boot_id")
	t.Cleanup(func() { bootIDPath = "/proc/sys/kernel/random/boot_id" })
	n := &node{t: t, dir: dir, clk: clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), config: config}
	n.setBoot("boot-1")
	n.rt = fake.New(n.clk)
	n.start()
	t.Cleanup(n.crash)
	return n
}

func (n *node) setBoot(id string) {
	if err := os.WriteFile(bootIDPath, []byte(id+"\n"), 0o644); err != nil {
		n.t.Fatal(err)
	}
}

// start opens the store and starts an agent that recovers from it.
func (n *node) start() {
	n.t.Helper()
	st, err := store.Open(filepath.Join(n.dir, "state.db"), store.Options{})
	if err != nil {
		n.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.st, n.cancel = st, cancel
	cfg := Config{Runtime: n.rt, Clock: n.clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler), Store: st, MaxPods: n.maxPods, RestartShutdownPods: n.restartShutdownPods}
	if n.config != nil {
		n.config(&cfg)
	}
	n.a = New(ctx, cfg)
	if n.shuttingDown {
		n.a.SetShuttingDown(true)
	}
	if err := n.a.Recover(ctx); err != nil {
		n.t.Fatal(err)
	}
}

// crash stops the agent the way kill -9 would as far as the runtime is
// concerned: its goroutines end, no container is touched.
func (n *node) crash() {
	if n.cancel == nil {
		return
	}
	n.cancel()
	n.a.Wait()
	_ = n.st.Close()
	n.cancel = nil
}

func (n *node) waitCalls(what string, cond func([]string) bool) {
	n.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		ch := n.rt.Changed()
		if cond(n.rt.Calls()) {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			n.t.Fatalf("timed out waiting for %s; calls %q", what, n.rt.Calls())
		}
	}
}

func (n *node) waitPod(ns, name string, cond func(err error, running bool) bool) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := n.a.WatchPods(ctx, "")
	for {
		p, err := n.a.GetPod(ns, name)
		running := err == nil && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil
		if cond(err, running) {
			return
		}
		if _, ok := <-w; !ok {
			n.t.Fatalf("timed out waiting for pod %s/%s", ns, name)
		}
	}
}

func TestRecoverAdoptsRunningPod(t *testing.T) {
	n := newNode(t)
	pod, err := n.a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	n.waitCalls("start", func(c []string) bool { return slices.Contains(c, "start app") })
	n.crash()
	n.start()
	n.waitPod("default", "web", func(err error, running bool) bool { return err == nil && running })
	if got, _ := n.a.GetPod("default", "web"); got.UID != pod.UID {
		t.Fatalf("UID changed across the restart: %s, want %s", got.UID, pod.UID)
	}
	if c := n.rt.Calls(); strings.Count(strings.Join(c, "\n"), "start app") != 1 {
		t.Fatalf("app started twice: %q", c)
	}
	if evs := n.a.ListEvents("default", "web"); len(evs) == 0 || evs[0].Reason != "Scheduled" {
		t.Fatalf("events did not survive the restart: %+v", evs)
	}
	// A deletion after the restart stops the adopted container.
	if _, err := n.a.DeletePod("default", "web", nil); err != nil {
		t.Fatal(err)
	}
	n.waitPod("default", "web", func(err error, _ bool) bool { return errors.Is(err, ErrNotFound) })
	if !slices.Contains(n.rt.Calls(), "signal app terminated") {
		t.Fatalf("calls %q", n.rt.Calls())
	}
}

func TestRecoverCarriesOutDeletionAskedBeforeCrash(t *testing.T) {
	n := newNode(t)
	if _, err := n.a.Create(decode(t, manifest)); err != nil {
		t.Fatal(err)
	}
	n.waitCalls("start", func(c []string) bool { return slices.Contains(c, "start app") })
	n.rt.IgnoreStopSignal("app")
	if _, err := n.a.DeletePod("default", "web", nil); err != nil {
		t.Fatal(err)
	}
	n.waitCalls("stop signal", func(c []string) bool { return slices.Contains(c, "signal app terminated") })
	n.crash()
	n.start()
	n.clk.Step(31 * time.Second) // past the 30 s deadline set before the crash
	n.waitPod("default", "web", func(err error, _ bool) bool { return errors.Is(err, ErrNotFound) })
	if !slices.Contains(n.rt.Calls(), "signal app killed") {
		t.Fatalf("the deadline was not kept: %q", n.rt.Calls())
	}
}

// orphan runs the test manifest's pod, crashes the agent and deletes the
// pod from the store while no agent runs, after exited(pod) (nil: its
// container still runs): the next start finds an orphan.
func (n *node) orphan(exited func(*model.Pod)) *model.Pod {
	n.t.Helper()
	pod, err := n.a.Create(decode(n.t, manifest))
	if err != nil {
		n.t.Fatal(err)
	}
	n.waitCalls("start", func(c []string) bool { return slices.Contains(c, "start app") })
	n.crash()
	if exited != nil {
		exited(pod)
	}
	st, err := store.Open(filepath.Join(n.dir, "state.db"), store.Options{})
	if err != nil {
		n.t.Fatal(err)
	}
	if err := st.DeletePod(pod.UID); err != nil {
		n.t.Fatal(err)
	}
	_ = st.Close()
	return pod
}

func TestRecoverKillsOrphans(t *testing.T) {
	n := newNode(t)
	n.orphan(nil)
	n.start()
	n.waitCalls("orphan killed and removed", func(c []string) bool {
		return slices.Contains(c, "signal app killed") && slices.Contains(c, "cleanup")
	})
	if ids, _ := n.rt.ListPods(); len(ids) != 0 {
		t.Fatalf("the runtime still has state of pods %v", ids)
	}
	if _, err := n.a.GetPod("default", "web"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("orphan served as a pod: %v", err)
	}
}

// An orphan whose containers all exited (its removal was cut short after
// they had) is dropped by the start itself, before the agent serves: its
// state and its logs are gone when Recover returns, so that an agent
// stopped right after it started leaves nothing of it; nothing is killed
// in the background.
func TestRecoverDropsAnExitedOrphanBeforeServing(t *testing.T) {
	var logs syncBuffer
	n := newNodeWith(t, func(cfg *Config) { cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	pod := n.orphan(func(p *model.Pod) { n.rt.ExitQuietly(p.UID, "app", 0) })
	n.start()
	calls := n.rt.Calls()
	if !slices.Contains(calls, "cleanup") || !slices.Contains(calls, "remove logs "+string(pod.UID)) {
		t.Fatalf("when Recover returned, the exited orphan was not dropped; calls %q", calls)
	}
	if ids, _ := n.rt.ListPods(); len(ids) != 0 {
		t.Fatalf("the runtime still has state of pods %v", ids)
	}
	if l, _ := n.rt.PodLogs(); len(l) != 0 {
		t.Fatalf("the runtime still has logs of pods %v", l)
	}
	n.crash() // every goroutine of the agent has ended
	if strings.Contains(logs.String(), "killing the containers") || slices.Contains(n.rt.Calls(), "signal app killed") {
		t.Fatalf("an orphan with nothing running was killed in the background; log:\n%s", logs.String())
	}
}

// syncBuffer is a bytes.Buffer that the agent's goroutines may log to
// while a test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestRecoverAfterRebootStartsPodsAgain(t *testing.T) {
	n := newNode(t)
	pod, err := n.a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	n.waitCalls("start", func(c []string) bool { return slices.Contains(c, "start app") })
	n.crash()
	n.rt.Reboot()
	n.setBoot("boot-2")
	n.start()
	n.waitCalls("started again", func(c []string) bool { return strings.Count(strings.Join(c, "\n"), "start app") == 2 })
	n.waitPod("default", "web", func(err error, running bool) bool { return err == nil && running })
	got, _ := n.a.GetPod("default", "web")
	if got.UID != pod.UID || got.Status.Phase == "Failed" {
		t.Fatalf("after reboot: uid %s phase %s", got.UID, got.Status.Phase)
	}
}

func TestRecoverKeepsAppliedPodAndPendingReplacement(t *testing.T) {
	n := newNode(t)
	if _, res, err := n.a.Apply(decode(t, manifest)); err != nil || res != Created {
		t.Fatalf("apply: %v %v", res, err)
	}
	n.waitCalls("start", func(c []string) bool { return slices.Contains(c, "start app") })
	n.crash()
	n.start()
	n.waitPod("default", "web", func(err error, running bool) bool { return err == nil && running })
	if strings.Count(strings.Join(n.rt.Calls(), "\n"), "start app") != 1 {
		t.Fatalf("an applied pod was not adopted after the restart: %q", n.rt.Calls())
	}

	// A replacement in progress survives a crash too.
	n.rt.IgnoreStopSignal("app")
	changed := decode(t, strings.Replace(manifest, `"100"`, `"200"`, 1))
	if _, res, err := n.a.Apply(changed); err != nil || res != Replaced {
		t.Fatalf("apply of a changed spec: %v %v", res, err)
	}
	n.waitCalls("stop signal", func(c []string) bool { return slices.Contains(c, "signal app terminated") })
	n.crash()
	n.start()
	n.clk.Step(31 * time.Second) // the old pod's grace period runs out
	n.waitCalls("replacement started", func(c []string) bool { return strings.Count(strings.Join(c, "\n"), "start app") == 2 })
	n.waitPod("default", "web", func(err error, running bool) bool { return err == nil && running })
	got, _ := n.a.GetPod("default", "web")
	if got.Spec.Containers[0].Command[1] != "200" {
		t.Fatalf("the pod running after the replacement has command %q", got.Spec.Containers[0].Command)
	}
}

// A forced delete (grace period 0, Kubernetes' gracePeriodSeconds=0) takes
// the pod out of the pod API at once — not listed, DELETED for watchers,
// its name free — while its worker still stops its containers with the
// kubelet's minimum (stop signal, SIGKILL 2 s later), also across an agent
// restart: the deletion is stored with grace period 0.
func TestForcedDeleteLeavesTheAPIAtOnce(t *testing.T) {
	n := newNode(t)
	old, err := n.a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	n.waitCalls("start", func(c []string) bool { return slices.Contains(c, "start app") })
	n.rt.IgnoreStopSignal("app")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	watch := n.a.WatchPods(ctx, "default")
	defer func() {
		cancel()
		for range watch { // until its goroutine is gone
		}
	}()
	if ev := <-watch; ev.Type != "ADDED" || ev.Pod.UID != old.UID {
		t.Fatalf("first watch event %s %s", ev.Type, ev.Pod.UID)
	}
	zero := int64(0)
	if _, err := n.a.DeletePod("default", "web", &zero); err != nil {
		t.Fatal(err)
	}
	if _, err := n.a.GetPod("default", "web"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a force-deleted pod is still served: %v", err)
	}
	if pods := n.a.ListPods(""); len(pods) != 0 {
		t.Fatalf("a force-deleted pod is still listed: %d pods", len(pods))
	}
	for ev := range watch {
		if ev.Pod.UID == old.UID && ev.Type == "DELETED" {
			break
		}
	}
	cancel() // the agent's goroutine of the watch ends before its restart below
	for range watch {
	}
	if !n.a.Known(old.UID) {
		t.Fatal("the agent forgot a force-deleted pod whose container still runs")
	}
	n.waitCalls("stop signal", func(c []string) bool { return slices.Contains(c, "signal app terminated") })
	if slices.Contains(n.rt.Calls(), "signal app killed") {
		t.Fatalf("killed before its 2 s: %q", n.rt.Calls())
	}
	// The name is free at once.
	next, err := n.a.Create(decode(t, strings.Replace(manifest, `"100"`, `"200"`, 1)))
	if err != nil {
		t.Fatalf("create under the name of a force-deleted pod: %v", err)
	}

	// An agent restart keeps it out of the API, and keeps stopping it.
	n.crash()
	n.start()
	if got, err := n.a.GetPod("default", "web"); err != nil || got.UID != next.UID {
		t.Fatalf("after the restart web is %v (err %v), want the new pod %s", got, err, next.UID)
	}
	if pods := n.a.ListPods(""); len(pods) != 1 {
		t.Fatalf("after the restart %d pods are listed, want the new one only", len(pods))
	}
	n.clk.Step(2 * time.Second)
	n.waitCalls("kill 2 s after the signal", func(c []string) bool { return slices.Contains(c, "signal app killed") })
	deadline := time.After(10 * time.Second)
	for {
		// Every change of the agent's pods closes a.changed, the reaping
		// of the force-deleted one too.
		n.a.mu.Lock()
		changed, known := n.a.changed, n.a.knownLocked(old.UID)
		n.a.mu.Unlock()
		if !known {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatal("the force-deleted pod was not reaped once terminated")
		}
	}
	stored, err := n.st.ListPods()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range stored {
		if p.UID == old.UID {
			t.Fatal("the force-deleted pod stays in the store after it terminated")
		}
	}
}
