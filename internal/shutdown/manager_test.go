package shutdown

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const s = time.Second

// fakeAgent records what the manager asks of the agent; a test terminates
// pods with terminate.
type fakeAgent struct {
	ring func()

	mu           sync.Mutex
	pods         []*v1.Pod
	kills        []string // "name=grace", in call order
	terminated   map[types.UID]chan struct{}
	shuttingDown []bool // every SetShuttingDown, in call order
	events       []string
}

func (n *fakeAgent) ActivePods() []*v1.Pod {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.pods)
}

func (n *fakeAgent) KillForShutdown(uid types.UID, grace int64) error {
	n.mu.Lock()
	var name string
	for _, p := range n.pods {
		if p.UID == uid {
			name = p.Name
		}
	}
	n.kills = append(n.kills, fmt.Sprintf("%s=%d", name, grace))
	n.mu.Unlock()
	n.ring()
	if name == "" {
		return errors.New("no such pod")
	}
	return nil
}

func (n *fakeAgent) WaitTerminated(ctx context.Context, uid types.UID) error {
	n.mu.Lock()
	ch := n.terminated[uid]
	n.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (n *fakeAgent) SetShuttingDown(on bool) {
	n.mu.Lock()
	n.shuttingDown = append(n.shuttingDown, on)
	n.mu.Unlock()
	n.ring()
}

func (n *fakeAgent) ShutdownEvent(msg string) {
	n.mu.Lock()
	n.events = append(n.events, msg)
	n.mu.Unlock()
	n.ring()
}

func (n *fakeAgent) terminate(name string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for _, p := range n.pods {
		if p.Name == name {
			close(n.terminated[p.UID])
			return
		}
	}
	panic("no pod " + name)
}

func (n *fakeAgent) snapshot() (kills []string, shuttingDown []bool, events []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.kills), slices.Clone(n.shuttingDown), slices.Clone(n.events)
}

// fakeStore is the meta bucket.
type fakeStore struct {
	mu   sync.Mutex
	meta map[string]string
	fail error
}

func (st *fakeStore) GetMeta(key string) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.meta[key], nil
}

func (st *fakeStore) PutMeta(key, value string) error {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.fail != nil {
		return st.fail
	}
	st.meta[key] = value
	return nil
}

func (st *fakeStore) record(t *testing.T) *record {
	t.Helper()
	raw, _ := st.GetMeta(metaKey)
	if raw == "" {
		return nil
	}
	rec, err := decodeRecord(raw)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// world is a manager over a fake agent, a fake store and a fake clock.
type world struct {
	t     *testing.T
	m     *Manager
	agent *fakeAgent
	store *fakeStore
	clk   *clocktesting.FakeClock
	ring  chan struct{} // rung by the agent and OnChange
	t0    time.Time
	stop  func()
}

// twoGroups is the kubelet's --shutdown-grace-period 30s
// --shutdown-grace-period-critical-pods 10s.
var twoGroups = []Group{{0, 20 * s}, {SystemCriticalPriority, 10 * s}}

func newWorld(t *testing.T, groups []Group, pods ...*v1.Pod) *world {
	w := &world{t: t, store: &fakeStore{meta: map[string]string{}}, ring: make(chan struct{}, 1)}
	w.t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	w.clk = clocktesting.NewFakeClock(w.t0)
	ring := func() {
		select {
		case w.ring <- struct{}{}:
		default:
		}
	}
	w.agent = &fakeAgent{ring: ring, pods: pods, terminated: map[types.UID]chan struct{}{}}
	for _, p := range pods {
		w.agent.terminated[p.UID] = make(chan struct{})
	}
	w.m = New(Config{Groups: groups, Agent: w.agent, Store: w.store, Clock: w.clk, OnChange: ring})
	return w
}

// run starts the manager's goroutine; the test's cleanup stops it.
func (w *world) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.m.Run(ctx)
	}()
	w.stop = func() {
		cancel()
		<-done
	}
	w.t.Cleanup(w.stop)
}

// waitFor waits until cond holds, checking it whenever the agent or the
// manager reports a change.
func (w *world) waitFor(what string, cond func() bool) {
	w.t.Helper()
	timer := time.NewTimer(5 * time.Second)
	defer timer.Stop()
	for !cond() {
		select {
		case <-w.ring:
		case <-timer.C:
			kills, sd, evs := w.agent.snapshot()
			w.t.Fatalf("timed out waiting for %s; kills %v, shutting down %v, events %v, status %+v", what, kills, sd, evs, w.m.Status())
		}
	}
}

func (w *world) waitKills(want ...string) {
	w.t.Helper()
	w.waitFor(fmt.Sprintf("kills %v", want), func() bool {
		kills, _, _ := w.agent.snapshot()
		return reflect.DeepEqual(kills, want)
	})
}

// waitGroupStarted waits until group i started: its pods are killed and
// the timer of its budget is set (the fake clock has a waiter: the
// group's timer is the manager's only one), so that a clock step reaches
// it.
func (w *world) waitGroupStarted(i int) {
	w.t.Helper()
	w.waitFor(fmt.Sprintf("group %d to start", i), func() bool {
		st := w.m.Status()
		return len(st.Groups) > i && st.Groups[i].StartedAt != nil && st.Groups[i].EndedAt == nil && w.clk.HasWaiters()
	})
}

func (w *world) begin(grace time.Duration) {
	w.t.Helper()
	if err := w.m.Begin(context.Background(), grace, ReasonAPI); err != nil {
		w.t.Fatalf("Begin: %v", err)
	}
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func pod(name string, grace int64, class string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec:       v1.PodSpec{TerminationGracePeriodSeconds: &grace, PriorityClassName: class},
	}
}

// The kubelet's order (nodeshutdown_manager.go, killPods): the groups one
// after another, lowest priority first; every pod of a group killed at
// once with min(budget, its own grace); the next group once the pods are
// terminated or the budget is spent, whichever comes first.
func TestGroupsInOrderWithinTheirBudgets(t *testing.T) {
	w := newWorld(t, twoGroups, pod("web", 30, ""), pod("job", 5, ""), pod("dns", 30, "system-cluster-critical"))
	w.run()
	w.begin(0)
	w.waitGroupStarted(0)
	w.waitKills("web=20", "job=5")
	if _, sd, evs := w.agent.snapshot(); !reflect.DeepEqual(sd, []bool{true}) || len(evs) != 1 || evs[0] != "Shutdown manager detected shutdown event (podward shutdown)" {
		t.Fatalf("shutting down %v, events %v", sd, evs)
	}
	st := w.m.Status()
	if st.State != Terminating || st.Groups[0].Pods[0].Deadline.Sub(w.t0) != 20*s || st.Groups[0].Pods[1].Deadline.Sub(w.t0) != 5*s {
		t.Fatalf("status %+v", st)
	}
	// The record is in the store before the kills: the same deadlines.
	if rec := w.store.record(t); rec == nil || rec.State != Terminating || !rec.Groups[0].Pods[0].Deadline.Equal(w.t0.Add(20*s)) {
		t.Fatalf("record %+v", rec)
	}

	// job ends; web ignores its stop signal. The critical group waits for
	// the end of the first group's budget, and not a moment longer.
	w.agent.terminate("job")
	w.clk.Step(19 * s)
	w.waitKills("web=20", "job=5")
	if isClosed(w.m.Done()) {
		t.Fatal("done after 19 s")
	}
	w.clk.Step(s)
	w.waitGroupStarted(1)
	w.waitKills("web=20", "job=5", "dns=10")
	done := w.m.Done()
	w.agent.terminate("dns")
	<-done // no waitFor: Done must not close before the status says so
	st = w.m.Status()
	if st.State != Terminated || st.EndedAt == nil || st.EndedAt.Sub(w.t0) != 20*s {
		t.Fatalf("status %+v", st)
	}
	if err := w.m.ShutdownStatus(); !errors.Is(err, ErrShuttingDown) || err.Error() != "node is shutting down" {
		t.Errorf("ShutdownStatus = %v", err)
	}
	if rec := w.store.record(t); rec.State != Terminated {
		t.Errorf("stored state %v", rec.State)
	}
}

func TestNextGroupAsSoonAsThePodsAreTerminated(t *testing.T) {
	w := newWorld(t, twoGroups, pod("web", 30, ""), pod("dns", 30, "system-node-critical"))
	w.run()
	w.begin(0)
	w.waitKills("web=20")
	w.agent.terminate("web")
	w.waitKills("web=20", "dns=10")
	w.waitGroupStarted(1)
	st := w.m.Status()
	if st.Groups[1].StartedAt == nil || !st.Groups[1].StartedAt.Equal(w.t0) {
		t.Errorf("critical group started at %v, want %v (no clock step)", st.Groups[1].StartedAt, w.t0)
	}
}

// A shutdown already begun is not begun again; without configured groups
// a grace makes one group of every pod; a grace shorter than the budgets
// shrinks them.
func TestBeginIdempotentAndGrace(t *testing.T) {
	t.Run("not configured", func(t *testing.T) {
		w := newWorld(t, nil, pod("web", 30, ""), pod("dns", 30, "system-node-critical"))
		w.run()
		if err := w.m.Begin(context.Background(), 0, ReasonLogind); !errors.Is(err, ErrNotConfigured) {
			t.Fatalf("Begin: %v, want ErrNotConfigured", err)
		}
		if err := w.m.ShutdownStatus(); err != nil || w.m.Done() != nil {
			t.Fatalf("after a refused Begin: ShutdownStatus %v, Done %v", err, w.m.Done())
		}
		w.begin(8 * s)
		w.waitKills("web=8", "dns=8")
		w.begin(0)
		w.begin(2 * s)
		w.waitKills("web=8", "dns=8")
	})
	t.Run("scaled", func(t *testing.T) {
		w := newWorld(t, twoGroups, pod("web", 30, ""), pod("dns", 30, "system-node-critical"))
		w.run()
		w.begin(6 * s)
		w.waitKills("web=4")
		w.waitGroupStarted(0)
		w.clk.Step(4 * s)
		w.waitKills("web=4", "dns=2")
	})
	t.Run("no pods", func(t *testing.T) {
		w := newWorld(t, twoGroups)
		w.run()
		w.begin(0)
		w.waitFor("done", func() bool { return w.m.Done() != nil && isClosed(w.m.Done()) })
	})
}

// A cancelled shutdown kills no further group, lets pods in again (the
// node's SetShuttingDown(false)), ends Done, and is recorded; a later Begin
// is a new shutdown.
func TestCancel(t *testing.T) {
	w := newWorld(t, twoGroups, pod("web", 30, ""), pod("dns", 30, "system-node-critical"))
	w.run()
	if err := w.m.Cancel(context.Background()); err != nil {
		t.Fatalf("Cancel with no shutdown: %v", err)
	}
	w.begin(0)
	w.waitGroupStarted(0)
	first := w.m.Done()
	if err := w.m.Cancel(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !isClosed(first) || w.m.ShutdownStatus() != nil || w.m.Status().State != Cancelled {
		t.Fatalf("after Cancel: done %v, ShutdownStatus %v, status %+v", isClosed(first), w.m.ShutdownStatus(), w.m.Status())
	}
	if rec := w.store.record(t); rec.State != Cancelled {
		t.Fatalf("stored state %v", rec.State)
	}
	w.clk.Step(time.Minute)
	_, sd, evs := w.agent.snapshot()
	if !reflect.DeepEqual(sd, []bool{true, false}) || evs[len(evs)-1] != "Shutdown manager detected shutdown cancellation" {
		t.Fatalf("shutting down %v, events %v", sd, evs)
	}
	w.begin(0)
	if w.m.Done() == first || isClosed(w.m.Done()) {
		t.Fatal("a new shutdown has the old Done")
	}
	w.waitKills("web=20", "web=20")
}

// An agent killed during the first group: the next one finds the
// shutdown in the store, refuses pods before it recovers them, kills the
// group's pods again with the time left to their deadlines (a kill only
// shortens: those that had it keep theirs) and ends the group when its
// original budget is spent.
func TestResumeAfterRestart(t *testing.T) {
	pods := []*v1.Pod{pod("web", 30, ""), pod("job", 5, ""), pod("dns", 30, "system-node-critical")}
	w := newWorld(t, twoGroups, pods...)
	w.run()
	w.begin(0)
	w.waitKills("web=20", "job=5")
	w.waitGroupStarted(0)
	w.clk.Step(7 * s)
	w.stop() // the agent dies; the record stays
	if rec := w.store.record(t); rec.State != Terminating || !rec.Groups[0].EndedAt.IsZero() {
		t.Fatalf("the agent's stop changed the record: %+v", rec)
	}

	w2 := newWorld(t, twoGroups, pods...)
	w2.store = w.store
	w2.clk.SetTime(w.clk.Now().Add(500 * time.Millisecond))
	w2.m.cfg.Store, w2.m.cfg.Clock = w.store, w2.clk
	if err := w2.m.Load(false); err != nil {
		t.Fatal(err)
	}
	if _, sd, _ := w2.agent.snapshot(); !reflect.DeepEqual(sd, []bool{true}) {
		t.Fatalf("Load: shutting down %v, want [true] before the pods are recovered", sd)
	}
	w2.run()
	w2.waitGroupStarted(0)
	w2.waitKills("web=13", "job=0") // 12.5 s left, rounded up; job's deadline passed
	if st := w2.m.Status(); !st.Groups[0].StartedAt.Equal(w.t0) || !st.Groups[0].Pods[0].Deadline.Equal(w.t0.Add(20*s)) {
		t.Fatalf("resumed status %+v", st)
	}
	w2.clk.Step(12 * s)
	w2.waitKills("web=13", "job=0")
	w2.clk.Step(500 * time.Millisecond)
	w2.waitKills("web=13", "job=0", "dns=10")
	if _, _, evs := w2.agent.snapshot(); len(evs) != 0 {
		t.Errorf("the resumed shutdown recorded events again: %v", evs)
	}
}

// After a reboot the shutdown of the previous boot is over: dropped, and
// the node does not shut down.
func TestLoadAfterReboot(t *testing.T) {
	w := newWorld(t, twoGroups, pod("web", 30, ""))
	w.run()
	w.begin(0)
	w.waitGroupStarted(0)
	w.stop()

	w2 := newWorld(t, twoGroups, pod("web", 30, ""))
	w2.m.cfg.Store = w.store
	if err := w2.m.Load(true); err != nil {
		t.Fatal(err)
	}
	w2.run()
	if rec := w.store.record(t); rec != nil {
		t.Errorf("record after the reboot: %+v", rec)
	}
	if _, sd, _ := w2.agent.snapshot(); len(sd) != 0 || w2.m.ShutdownStatus() != nil || w2.m.Status().State != 0 {
		t.Errorf("after the reboot: shutting down %v, status %+v", sd, w2.m.Status())
	}
}

// A Begin that cannot be recorded starts nothing and lets pods in again.
func TestBeginNotRecorded(t *testing.T) {
	w := newWorld(t, twoGroups, pod("web", 30, ""))
	w.store.fail = errors.New("disk full")
	w.run()
	if err := w.m.Begin(context.Background(), 0, ReasonLogind); err == nil {
		t.Fatal("Begin succeeded without its record")
	}
	if kills, sd, _ := w.agent.snapshot(); len(kills) != 0 || !reflect.DeepEqual(sd, []bool{true, false}) {
		t.Fatalf("kills %v, shutting down %v", kills, sd)
	}
}

// Begin and Cancel on a stopped manager say so instead of waiting.
func TestStopped(t *testing.T) {
	w := newWorld(t, twoGroups)
	w.run()
	w.stop()
	if err := w.m.Begin(context.Background(), 0, ReasonAPI); !errors.Is(err, ErrStopped) {
		t.Errorf("Begin: %v", err)
	}
	if err := w.m.Begin(context.Background(), -s, ReasonAPI); err == nil {
		t.Error("Begin with a negative grace")
	}
}
