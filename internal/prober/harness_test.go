package prober

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
)

func TestMain(m *testing.M) {
	if os.Getenv(benchListenerEnv) != "" {
		runBenchListener()
	}
	goleak.VerifyTestMain(m)
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// waitTimeout bounds every wait of a test: reaching it is a failure.
const waitTimeout = 10 * time.Second

// execCall is one call of the fake Execer.
type execCall struct {
	pod       types.UID
	ref       model.ContainerRef
	cmd       []string
	cancelled error // for a blocking command: the cause its context ended with
}

// fakeExecer runs exec probes by the first word of their command: the exit
// code set for it (0 unless set), or — when it blocks — not until its
// context ends.
type fakeExecer struct {
	mu      sync.Mutex
	codes   map[string]int
	blocks  map[string]bool
	calls   []execCall
	started chan execCall // every call, when it starts
	ended   chan execCall // every blocking call, when it returns
}

func newFakeExecer() *fakeExecer {
	return &fakeExecer{
		codes:   map[string]int{},
		blocks:  map[string]bool{},
		started: make(chan execCall, 1000),
		ended:   make(chan execCall, 1000),
	}
}

var _ Execer = (*fakeExecer)(nil)

func (f *fakeExecer) Exec(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string) ([]byte, int, error) {
	c := execCall{pod: pod.UID, ref: ref, cmd: cmd}
	f.mu.Lock()
	f.calls = append(f.calls, c)
	code, block := f.codes[cmd[0]], f.blocks[cmd[0]]
	f.mu.Unlock()
	f.started <- c
	if block {
		<-ctx.Done()
		c.cancelled = context.Cause(ctx)
		f.ended <- c
		return nil, -1, ctx.Err()
	}
	if code != 0 {
		return []byte("failing " + cmd[0] + "\n"), code, nil
	}
	return nil, 0, nil
}

func (f *fakeExecer) set(cmd string, code int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.codes[cmd] = code
}

func (f *fakeExecer) block(cmd string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.blocks[cmd] = true
}

// count is how many times cmd ran.
func (f *fakeExecer) count(cmd string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.calls {
		if c.cmd[0] == cmd {
			n++
		}
	}
	return n
}

// harness runs a Manager on a fake clock with a fake Execer and collects
// its reports.
type harness struct {
	t       *testing.T
	clk     *clocktesting.FakeClock
	ex      *fakeExecer
	m       *Manager
	results chan Result
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		clk:     clocktesting.NewFakeClock(t0),
		ex:      newFakeExecer(),
		results: make(chan Result, 1000),
	}
	h.m = New(Config{
		Execer:  h.ex,
		Clock:   h.clk,
		Report:  func(r Result) { h.results <- r },
		Workers: 4,
	})
	h.m.notify = make(chan struct{}, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h
}

// schedulerIdle says the scheduler sleeps on its timer with nothing due at
// now; attempts may still run.
func (m *Manager) schedulerIdle(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.schedulerIdleLocked(now)
}

func (m *Manager) schedulerIdleLocked(now time.Time) bool {
	return m.timer != nil && m.sleeping && len(m.wake) == 0 && len(m.timer.C()) == 0 &&
		m.head == len(m.backlog) && (len(m.heap) == 0 || m.heap[0].at.After(now.Add(coalesce)))
}

// settled says the scheduler is idle and no attempt runs: nothing happens
// until the clock moves.
func (m *Manager) settled(now time.Time) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inflight == 0 && m.schedulerIdleLocked(now)
}

// waitFor waits until cond holds, woken by the manager's notifications.
func (h *harness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	for !cond() {
		select {
		case <-h.m.notify:
		case <-deadline.C:
			h.t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (h *harness) settle() {
	h.t.Helper()
	h.waitFor("the manager to settle", func() bool { return h.m.settled(h.clk.Now()) })
}

// step settles, moves the clock and settles again.
func (h *harness) step(d time.Duration) {
	h.t.Helper()
	h.settle()
	h.clk.Step(d)
	h.settle()
}

// drain returns the reports so far.
func (h *harness) drain() []Result {
	var out []Result
	for {
		select {
		case r := <-h.results:
			out = append(out, r)
		default:
			return out
		}
	}
}

// expect checks the reports since the last drain, ignoring Output (and
// PodUID, ID when left empty in want).
func (h *harness) expect(want ...Result) []Result {
	h.t.Helper()
	got := h.drain()
	if len(got) != len(want) {
		h.t.Fatalf("reports = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if w.PodUID == "" {
			g.PodUID = ""
		}
		if w.ID == "" {
			g.ID = ""
		}
		g.Output = ""
		w.Output = ""
		if g != w {
			h.t.Errorf("report %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	return got
}

// --- pods -------------------------------------------------------------------

func execProbe(cmd string, opts ...func(*v1.Probe)) *v1.Probe {
	p := &v1.Probe{
		ProbeHandler:     v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{cmd}}},
		TimeoutSeconds:   1,
		PeriodSeconds:    1,
		SuccessThreshold: 1,
		FailureThreshold: 3,
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func period(s int32) func(*v1.Probe)       { return func(p *v1.Probe) { p.PeriodSeconds = s } }
func delay(s int32) func(*v1.Probe)        { return func(p *v1.Probe) { p.InitialDelaySeconds = s } }
func timeout(s int32) func(*v1.Probe)      { return func(p *v1.Probe) { p.TimeoutSeconds = s } }
func failureAfter(n int32) func(*v1.Probe) { return func(p *v1.Probe) { p.FailureThreshold = n } }
func successAfter(n int32) func(*v1.Probe) { return func(p *v1.Probe) { p.SuccessThreshold = n } }

// newPod is a pod with the given regular containers.
func newPod(uid string, containers ...v1.Container) *model.Pod {
	return &model.Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "pod-" + uid, UID: types.UID(uid)},
		Spec:       v1.PodSpec{Containers: containers},
	}}
}

// ref names regular container i of pod.
func ref(pod *model.Pod, i int) model.ContainerRef {
	return model.ContainerRef{Name: pod.Spec.Containers[i].Name, Role: model.RoleMain, Index: i}
}
