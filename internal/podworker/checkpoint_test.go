package podworker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// memCheckpoints is a Checkpointer in memory; a save whose data contains
// failWhen fails, as a crash right before it would leave the checkpoint.
type memCheckpoints struct {
	mu       sync.Mutex
	data     map[types.UID][]byte
	failWhen string
	failed   int
}

func (m *memCheckpoints) SaveCheckpoint(uid types.UID, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failWhen != "" && strings.Contains(string(data), m.failWhen) {
		m.failed++
		return errors.New("disk full")
	}
	m.data[uid] = append([]byte(nil), data...)
	return nil
}

func (m *memCheckpoints) get(uid types.UID) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data[uid]
}

// restartable is a harness whose Workers can be stopped and replaced by new
// ones on the same runtime, clock and checkpoints: an agent restart.
type restartable struct {
	*harness
	cps    *memCheckpoints
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newRestartable(t *testing.T) *restartable {
	h := newHarness(t)
	r := &restartable{harness: h, cps: &memCheckpoints{data: map[types.UID][]byte{}}}
	r.w.cfg.Checkpointer = r.cps
	return r
}

// stop ends the current Workers the way an agent dies: their goroutines
// return, no container is touched.
func (r *restartable) stop() {
	if r.cancel != nil {
		r.cancel()
		r.wg.Wait()
	} else {
		r.stopFirst()
	}
	r.w.Wait()
}

// resume starts new Workers on the same runtime, clock and checkpoints, and
// restores pod from its checkpoint.
func (r *restartable) resume(t *testing.T, p *model.Pod) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	r.w = New(ctx, Config{Runtime: r.rt, Recorder: r.rec, Clock: notifyingClock{r.clk, r.harness}, Planner: planner.DefaultConfig(),
		Logger: slog.New(slog.DiscardHandler), Checkpointer: r.cps, OnChange: func(types.UID) { r.ring() }})
	r.wg.Add(1)
	go func() { defer r.wg.Done(); dispatchEvents(ctx, r.w, r.rt.Events()) }()
	t.Cleanup(func() { cancel(); r.w.Wait(); r.wg.Wait() })
	if err := r.w.Restore(p, r.cps.get(p.UID)); err != nil {
		t.Fatal(err)
	}
}

func (r *restartable) restartFrom(t *testing.T, p *model.Pod) {
	t.Helper()
	r.stop()
	r.resume(t, p)
}

func TestRestartAdoptsRunningContainers(t *testing.T) {
	r := newRestartable(t)
	p := testPod("r1", v1.RestartPolicyAlways, "sidecar:proxy", "init:setup", "main:app")
	r.w.UpdatePod(UpdateOptions{Pod: p})
	r.waitCall("start setup")
	r.rt.Exit(p.UID, "setup", 0)
	r.waitCall("start app")
	r.restartFrom(t, p)
	r.waitFor("recovered status", func() bool {
		pod, _, ok := r.w.PodStatus(p.UID)
		return ok && len(pod.Status.ContainerStatuses) == 1 && pod.Status.ContainerStatuses[0].State.Running != nil
	})
	for _, name := range []string{"proxy", "setup", "app"} {
		if n := count(r.rt.Calls(), "start "+name); n != 1 {
			t.Errorf("%s started %d times, want once", name, n)
		}
	}
	// The adopted instances are the worker's again: a kill stops them.
	r.kill(p, nil)
	r.waitPhase(p.UID, Terminated)
	if !slices.Contains(r.rt.Calls(), "signal app terminated") || !slices.Contains(r.rt.Calls(), "signal proxy terminated") {
		t.Fatalf("calls = %q", r.rt.Calls())
	}
}

func TestRestartRecordsExitWhileDown(t *testing.T) {
	r := newRestartable(t)
	p := testPod("r2", v1.RestartPolicyNever, "main:app")
	r.w.UpdatePod(UpdateOptions{Pod: p})
	r.waitCall("start app")
	r.stop()
	r.rt.ExitQuietly(p.UID, "app", 3)
	r.resume(t, p)
	r.waitPhase(p.UID, Terminated)
	pod, _, _ := r.w.PodStatus(p.UID)
	cs := pod.Status.ContainerStatuses[0]
	if pod.Status.Phase != v1.PodFailed || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 3 {
		t.Fatalf("phase %s, state %+v: want Failed with exit code 3", pod.Status.Phase, cs.State)
	}
	if n := count(r.rt.Calls(), "start app"); n != 1 {
		t.Fatalf("app started %d times with restartPolicy Never", n)
	}
}

func TestRestartKeepsDeadlineAndRunsDeferOnce(t *testing.T) {
	r := newRestartable(t)
	p := testPod("r3", v1.RestartPolicyAlways, "main:app", "defer:d1", "defer:d2")
	r.rt.IgnoreStopSignal("app")
	r.w.UpdatePod(UpdateOptions{Pod: p})
	r.waitCall("start app")
	r.kill(p, nil) // 60 s grace: deadline at t0+60s
	r.waitCall("start d1")
	r.rt.Exit(p.UID, "d1", 0)
	r.waitCall("start d2")
	r.stop()
	r.clk.Step(30 * time.Second) // the agent is down for 30 s
	r.resume(t, p)
	r.waitFor("deadline restored", func() bool {
		pod, _, _ := r.w.PodStatus(p.UID)
		return pod.DeletionTimestamp != nil && pod.DeletionTimestamp.Time.Equal(t0.Add(60*time.Second))
	})
	r.step(30 * time.Second) // the original deadline, not 60 s after the restart
	r.waitPhase(p.UID, Terminated)
	if got := r.clk.Now().Sub(t0); got != 60*time.Second {
		t.Errorf("killed at %s, want at the original deadline 60s", got)
	}
	if n := count(r.rt.Calls(), "start d1"); n != 1 {
		t.Errorf("d1 completed before the restart but started %d times", n)
	}
	if n := count(r.rt.Calls(), "start d2"); n != 1 {
		t.Errorf("d2 was running at the restart: adopted, not restarted; started %d times", n)
	}
	if !slices.Contains(r.rt.Calls(), "signal d2 killed") {
		t.Errorf("d2 not killed at the deadline: %q", r.rt.Calls())
	}
}

func TestRestartAfterUnrecordedStartAdoptsIt(t *testing.T) {
	r := newRestartable(t)
	p := testPod("r4", v1.RestartPolicyAlways, "init:setup", "main:app")
	r.w.UpdatePod(UpdateOptions{Pod: p})
	r.waitCall("start setup")
	// The checkpoint written after app's start is lost: the agent died
	// between the start and its record. Only the write-ahead (pending start)
	// survives.
	r.cps.mu.Lock()
	r.cps.failWhen = `"id":"app-`
	r.cps.mu.Unlock()
	r.rt.Exit(p.UID, "setup", 0)
	r.waitCall("start app")
	r.waitFor("the failed save", func() bool { r.cps.mu.Lock(); defer r.cps.mu.Unlock(); return r.cps.failed > 0 })
	r.stop()
	if cp := string(r.cps.get(p.UID)); !strings.Contains(cp, `"pending"`) {
		t.Fatalf("checkpoint has no pending start: %s", cp)
	}
	r.resume(t, p)
	r.waitFor("app adopted", func() bool {
		pod, _, _ := r.w.PodStatus(p.UID)
		return pod.Status.ContainerStatuses[0].State.Running != nil
	})
	if n := count(r.rt.Calls(), "start app"); n != 1 {
		t.Fatalf("app started %d times: %q", n, r.rt.Calls())
	}
}

func TestRestoreRejectsGarbage(t *testing.T) {
	h := newHarness(t)
	p := testPod("r5", v1.RestartPolicyAlways, "main:app")
	for name, data := range map[string]string{"not json": "{", "wrong version": `{"version":99,"phase":1}`, "bad phase": `{"version":1,"phase":7}`} {
		if err := h.w.Restore(p, []byte(data)); err == nil {
			t.Errorf("%s: Restore accepted %q", name, data)
		}
	}
}

func TestWriteAheadFailureHoldsTheStartBack(t *testing.T) {
	r := newRestartable(t)
	r.cps.mu.Lock()
	r.cps.failWhen = `"pending"`
	r.cps.mu.Unlock()
	p := testPod("r6", v1.RestartPolicyAlways, "main:app")
	r.w.UpdatePod(UpdateOptions{Pod: p})
	r.waitFor("a failed write-ahead", func() bool { r.cps.mu.Lock(); defer r.cps.mu.Unlock(); return r.cps.failed > 0 })
	if slices.Contains(r.rt.Calls(), "start app") {
		t.Fatal("a container started although its write-ahead record failed")
	}
	r.cps.mu.Lock()
	r.cps.failWhen = ""
	r.cps.mu.Unlock()
	r.step(time.Second) // the retry
	r.waitCall("start app")
}

func TestAgentStopDuringPreStopLeavesTheContainer(t *testing.T) {
	r := newRestartable(t)
	entered := make(chan struct{})
	r.rt.ExecHook = func(ctx context.Context, _ model.ContainerRef, _ []string) ([]byte, int, error) {
		close(entered)
		<-ctx.Done() // a long preStop hook, cut by the agent stopping
		return nil, 137, ctx.Err()
	}
	p := testPod("r7", v1.RestartPolicyAlways, "main:app")
	r.w.UpdatePod(UpdateOptions{Pod: p})
	r.waitCall("start app")
	r.kill(p, nil)
	<-entered
	r.stop()
	for _, c := range r.rt.Calls() {
		if strings.HasPrefix(c, "signal app") {
			t.Fatalf("stopping the agent signalled the container: %q", r.rt.Calls())
		}
	}
	if got := r.rt.Running(p.UID); len(got) != 1 {
		t.Fatalf("running after the agent stopped: %v", got)
	}
	// The next agent does not run the hook again: the stop goes on with
	// its signal.
	r.rt.ExecHook = nil
	r.resume(t, p)
	r.waitPhase(p.UID, Terminated)
	if n := count(r.rt.Calls(), "exec app [bye]"); n != 1 {
		t.Errorf("preStop ran %d times, want once", n)
	}
	if !slices.Contains(r.rt.Calls(), "signal app terminated") {
		t.Errorf("the stop signal never went out after the restart: %q", r.rt.Calls())
	}
}

func TestRestartKeepsPromptKillTimer(t *testing.T) {
	r := newRestartable(t)
	p := testPod("r8", v1.RestartPolicyAlways, "main:app", "defer:d")
	r.rt.IgnoreStopSignal("app")
	r.w.UpdatePod(UpdateOptions{Pod: p})
	r.waitCall("start app")
	r.kill(p, nil)
	r.waitCall("start d")
	r.rt.Exit(p.UID, "d", 0)
	r.waitCall("signal app terminated")
	r.waitFor("the signal recorded", func() bool {
		return strings.Contains(string(r.cps.get(p.UID)), `"SignalledAt":"2026`)
	})
	r.stop()
	r.clk.Step(time.Second)
	r.resume(t, p)
	r.step(time.Second) // 2 s after the signal: the prompt kill
	r.waitCall("signal app killed")
	if n := count(r.rt.Calls(), "signal app terminated"); n != 1 {
		t.Errorf("the stop signal went out %d times: %q", n, r.rt.Calls())
	}
}

// The checkpoints in testdata were written by the agent before the
// checkpoint had its own on-disk types (it was then the worker's and the
// planner's in-memory structs, marshalled as they were): a restarted agent
// must read them as they are, and writes the same bytes back.
func TestCheckpointV1FromEarlierAgentsRoundTrips(t *testing.T) {
	for name, pod := range map[string]*model.Pod{
		"terminating": testPod("cp1", v1.RestartPolicyAlways, "sidecar:proxy", "init:setup", "main:app", "defer:d1", "defer:d2"),
		"terminated":  testPod("cp2", v1.RestartPolicyNever, "main:app", "defer:d"),
		"every-field": testPod("cp3", v1.RestartPolicyAlways, "main:app", "defer:d", "main:w"),
	} {
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", "checkpoint-v1-"+name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			pw := restoredWorker(t, pod, data)
			got, err := json.Marshal(pw.record())
			if err != nil {
				t.Fatal(err)
			}
			if want := bytes.TrimSpace(data); !bytes.Equal(got, want) {
				t.Fatalf("written back differently:\n got  %s\n want %s", got, want)
			}
		})
	}
}

// Every field of the checkpoint lands where it belongs in memory (a round
// trip alone would not see two fields swapped both ways).
func TestCheckpointV1FieldsDecode(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "checkpoint-v1-every-field.json"))
	if err != nil {
		t.Fatal(err)
	}
	pw := restoredWorker(t, testPod("cp3", v1.RestartPolicyAlways, "main:app", "defer:d", "main:w"), data)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	if pw.phase != Terminating || !pw.startTime.Equal(at(1)) || !pw.prepared || !pw.deleted || pw.termReason != "Deleted" || !pw.gpReported {
		t.Errorf("pod fields: phase %s start %s prepared %t deleted %t reason %q gpReported %t",
			pw.phase, pw.startTime, pw.prepared, pw.deleted, pw.termReason, pw.gpReported)
	}
	if want := (planner.Termination{RequestedAt: at(10), Deadline: at(70), RunDefer: true}); pw.term == nil || !reflect.DeepEqual(*pw.term, want) {
		t.Errorf("termination = %+v, want %+v", pw.term, want)
	}
	app := pw.byName["app"]
	wantObs := planner.Observed{State: planner.Running, Started: true, StartedOnce: true, StartedAt: at(2), FinishedAt: at(3),
		ExitCode: 137, Restarts: 4, BackoffSteps: 2, StopRequestedAt: at(11), SignalledAt: at(12), Killed: true, KillAt: at(40)}
	if !reflect.DeepEqual(app.obs, wantObs) {
		t.Errorf("app observed = %+v\nwant %+v", app.obs, wantObs)
	}
	if want := (runtime.ExitStatus{ExitCode: 137, Reason: runtime.ReasonStatusUnknown, Message: "lost", FinishedAt: at(3)}); !reflect.DeepEqual(app.exit, want) {
		t.Errorf("app exit = %+v, want %+v", app.exit, want)
	}
	if app.id != "app-7" || !app.backoffAnnounced.Equal(at(20)) || app.pending == nil || *app.pending != (pendingStart{attempt: 5, backoffSteps: 3}) {
		t.Errorf("app id %q backoffAnnounced %s pending %+v", app.id, app.backoffAnnounced, app.pending)
	}
	if l := app.last; l == nil || l.ExitCode != 1 || l.Signal != 9 || l.Reason != "Error" || l.Message != "boom" || l.ContainerID != "podward://app-6" ||
		!l.StartedAt.Time.Equal(at(1)) || !l.FinishedAt.Time.Equal(at(2)) {
		t.Errorf("app last = %+v", app.last)
	}
	if d := pw.byName["d"]; d.obs.State != planner.Exited || d.obs.ExitCode != 2 || d.exit.Reason != runtime.ReasonError || d.id != "" || d.pending != nil {
		t.Errorf("d = %+v %+v %q", d.obs, d.exit, d.id)
	}
	if w := pw.byName["w"]; w.obs.State != planner.Waiting {
		t.Errorf("w state = %s", w.obs.State)
	}
}

func TestRestoreRejectsUnknownContainerState(t *testing.T) {
	data := []byte(`{"version":1,"phase":1,"containers":{"app":{"observed":{"State":7}}}}`)
	w := New(context.Background(), Config{Clock: clocktesting.NewFakeClock(t0), Planner: planner.DefaultConfig()})
	pw := newPodWorker(w, testPod("cp4", v1.RestartPolicyAlways, "main:app"))
	if err := pw.restore(data); err == nil || !strings.Contains(err.Error(), `container "app": observed.State: state 7 is not valid`) {
		t.Fatalf("restore = %v", err)
	}
}

// restoredWorker is a worker (its goroutine not started) restored from
// data.
func restoredWorker(t *testing.T, pod *model.Pod, data []byte) *podWorker {
	t.Helper()
	w := New(context.Background(), Config{Clock: clocktesting.NewFakeClock(t0), Planner: planner.DefaultConfig()})
	pw := newPodWorker(w, pod)
	if err := pw.restore(data); err != nil {
		t.Fatal(err)
	}
	return pw
}

// listFailer is the fake runtime whose container listing fails while fail
// is set, like a runtime that is not up yet when the agent restarts.
type listFailer struct {
	*fake.Runtime
	ring  func() // wakes the test's waits
	mu    sync.Mutex
	fail  bool
	calls int
}

func (l *listFailer) ListContainers(ctx context.Context, uid types.UID) ([]runtime.ContainerStatus, error) {
	l.mu.Lock()
	fail := l.fail
	l.calls++
	l.mu.Unlock()
	l.ring()
	if fail {
		return nil, errors.New("runtime not ready")
	}
	return l.Runtime.ListContainers(ctx, uid)
}

// A kill that comes while a restored worker cannot yet reconcile with the
// runtime waits in the inbox for the next try: once the runtime answers,
// the pod terminates.
func TestKillDuringFailedRecoveryIsKept(t *testing.T) {
	r := newRestartable(t)
	p := testPod("r9", v1.RestartPolicyAlways, "main:app")
	r.w.UpdatePod(UpdateOptions{Pod: p})
	r.waitCall("start app")
	r.stop()
	lf := &listFailer{Runtime: r.rt, ring: r.ring, fail: true}
	ctx, cancel := context.WithCancel(context.Background())
	w := New(ctx, Config{Runtime: lf, Recorder: r.rec, Clock: notifyingClock{r.clk, r.harness}, Planner: planner.DefaultConfig(),
		Logger: slog.New(slog.DiscardHandler), Checkpointer: r.cps, OnChange: func(types.UID) { r.ring() }})
	var dispatch sync.WaitGroup
	dispatch.Add(1)
	go func() { defer dispatch.Done(); dispatchEvents(ctx, w, r.rt.Events()) }()
	t.Cleanup(func() { cancel(); w.Wait(); dispatch.Wait() })
	r.w = w
	if err := w.Restore(p, r.cps.get(p.UID)); err != nil {
		t.Fatal(err)
	}
	listed := func(n int) func() bool {
		return func() bool { lf.mu.Lock(); defer lf.mu.Unlock(); return lf.calls >= n }
	}
	// The first step fails, and so does the one Restore's wake-up brings;
	// the fake clock stands still, so only news wakes the worker again.
	r.waitFor("two failed recoveries", listed(2))
	r.kill(p, nil)
	if !w.IsPodTerminationRequested(p.UID) {
		t.Fatal("the kill is not recorded")
	}
	r.waitFor("the failed recovery the kill woke", listed(3))
	lf.mu.Lock()
	lf.fail = false
	lf.mu.Unlock()
	r.clk.Step(planner.DefaultConfig().BackoffBase)
	r.waitCall("signal app terminated")
	r.waitPhase(p.UID, Terminated)
}
