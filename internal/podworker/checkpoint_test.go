package podworker

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

func TestRestoreRejectsGarbage(t *testing.T) {
	h := newHarness(t)
	p := testPod("r5", v1.RestartPolicyAlways, "main:app")
	for name, data := range map[string]string{"not json": "{", "wrong version": `{"version":99,"phase":1}`, "bad phase": `{"version":1,"phase":7}`} {
		if err := h.w.Restore(p, []byte(data)); err == nil {
			t.Errorf("%s: Restore accepted %q", name, data)
		}
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
	if pw.phase != Terminating || !pw.startTime.Equal(at(1)) || !pw.setup.prepared || !pw.ending.deleted || pw.ending.reason != "Deleted" || !pw.ending.gpReported {
		t.Errorf("pod fields: phase %s start %s prepared %t deleted %t reason %q gpReported %t",
			pw.phase, pw.startTime, pw.setup.prepared, pw.ending.deleted, pw.ending.reason, pw.ending.gpReported)
	}
	if want := (planner.Termination{RequestedAt: at(10), Deadline: at(70), RunDefer: true}); pw.ending.term == nil || !reflect.DeepEqual(*pw.ending.term, want) {
		t.Errorf("termination = %+v, want %+v", pw.ending.term, want)
	}
	app := pw.ctrs.byName["app"]
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
	if d := pw.ctrs.byName["d"]; d.obs.State != planner.Exited || d.obs.ExitCode != 2 || d.exit.Reason != runtime.ReasonError || d.id != "" || d.pending != nil {
		t.Errorf("d = %+v %+v %q", d.obs, d.exit, d.id)
	}
	if w := pw.ctrs.byName["w"]; w.obs.State != planner.Waiting {
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

// heldCheckpoints is a DeferredCheckpointer whose deferred saves become
// durable only once the test releases them.
type heldCheckpoints struct {
	mu      sync.Mutex
	durable map[types.UID][]byte
	// waiting is closed when the worker waits for a deferred save;
	// release makes it durable.
	waiting, release chan struct{}
}

func (c *heldCheckpoints) SaveCheckpoint(uid types.UID, data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.durable[uid] = data
	return nil
}

func (c *heldCheckpoints) SaveCheckpointDeferred(uid types.UID, data []byte) func() error {
	return func() error {
		close(c.waiting)
		<-c.release
		return c.SaveCheckpoint(uid, data)
	}
}

func (c *heldCheckpoints) phase(uid types.UID) Phase {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, _ := CheckpointPhase(c.durable[uid])
	return p
}

var _ DeferredCheckpointer = (*heldCheckpoints)(nil)

// The last checkpoint of a terminated pod is saved deferred: the pod is
// known terminated (a delete removes it) before the save is durable. Its
// content, where the exits are recorded, is removed only once it is, so
// that a crash in between never loses an exit code.
func TestTerminatedPodIsCleanedUpOnceItsLastCheckpointIsDurable(t *testing.T) {
	cp := &heldCheckpoints{durable: map[types.UID][]byte{}, waiting: make(chan struct{}), release: make(chan struct{})}
	cleanedUp := make(chan Phase, 1)
	h := newHarnessConfig(t, func(rt *fake.Runtime) runtime.Runtime { return rt }, func(_ *harness, cfg *Config) { cfg.Checkpointer = cp })
	var released sync.Once
	release := func() { released.Do(func() { close(cp.release) }) }
	t.Cleanup(release) // before the harness's: its worker waits for it
	p := testPod("f1", v1.RestartPolicyNever, "main:app")
	h.rt.CleanupHook = func(context.Context) {
		select {
		case cleanedUp <- cp.phase(p.UID):
		default:
		}
	}
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	h.rt.Exit(p.UID, "app", 3)
	select {
	case <-h.w.Terminated(p.UID):
	case <-time.After(waitTimeout):
		t.Fatal("the pod did not terminate")
	}
	if got := cp.phase(p.UID); got == Terminated {
		t.Fatal("the last checkpoint was saved durably, not deferred")
	}
	select {
	case <-cp.waiting:
	case phase := <-cleanedUp:
		t.Fatalf("the pod's content was removed while its last checkpoint was not durable (durable phase %s)", phase)
	case <-time.After(waitTimeout):
		t.Fatal("the worker never waited for its last checkpoint")
	}
	release()
	select {
	case phase := <-cleanedUp:
		if phase != Terminated {
			t.Errorf("cleaned up with the durable checkpoint in phase %s, want Terminated", phase)
		}
	case <-time.After(waitTimeout):
		t.Fatal("no clean-up")
	}
}

// The node's allocation and each instance's resources (in-place resize)
// are read back from the checkpoint as written, the spec's resources
// aside, and written back the same; a checkpoint of an earlier agent,
// without them, leaves the spec's and writes none (the round trip above).
func TestCheckpointAllocationDecodes(t *testing.T) {
	pod := testPod("cp5", v1.RestartPolicyAlways, "main:app", "main:w")
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")},
		Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi")},
	}
	data := []byte(`{"version":1,"phase":1,"startTime":"0001-01-01T00:00:00Z","prepared":true,"containers":{` +
		`"app":{"id":"app-1","observed":{"State":2,"Started":true,"StartedOnce":true,"StartedAt":"2026-01-01T12:00:02Z","FinishedAt":"0001-01-01T00:00:00Z","ExitCode":0,"Restarts":0,"BackoffSteps":0,"StopRequestedAt":"0001-01-01T00:00:00Z","SignalledAt":"0001-01-01T00:00:00Z","Killed":false,"KillAt":"0001-01-01T00:00:00Z"},` +
		`"exit":{"ExitCode":0,"Reason":"","Message":"","FinishedAt":"0001-01-01T00:00:00Z"},"backoffAnnounced":"0001-01-01T00:00:00Z","actuated":{"requests":{"cpu":"250m"},"limits":{"memory":"64Mi"}}},` +
		`"w":{"observed":{"State":1,"Started":false,"StartedOnce":false,"StartedAt":"0001-01-01T00:00:00Z","FinishedAt":"0001-01-01T00:00:00Z","ExitCode":0,"Restarts":0,"BackoffSteps":0,"StopRequestedAt":"0001-01-01T00:00:00Z","SignalledAt":"0001-01-01T00:00:00Z","Killed":false,"KillAt":"0001-01-01T00:00:00Z"},` +
		`"exit":{"ExitCode":0,"Reason":"","Message":"","FinishedAt":"0001-01-01T00:00:00Z"},"backoffAnnounced":"0001-01-01T00:00:00Z"}},` +
		`"allocated":{"app":{"requests":{"cpu":"500m"},"limits":{"memory":"96Mi"}},"w":{}},"allocatedGeneration":3}`)
	pw := restoredWorker(t, pod, data)
	app := pw.alloc.pod.Container(pw.ctrs.byName["app"].ref)
	if cpu, mem := app.Resources.Requests[v1.ResourceCPU], app.Resources.Limits[v1.ResourceMemory]; cpu.String() != "500m" || mem.String() != "96Mi" {
		t.Errorf("allocated to app: requests %v limits %v, want cpu 500m, memory limit 96Mi", app.Resources.Requests, app.Resources.Limits)
	}
	if cpu := pw.pod.Spec.Containers[0].Resources.Requests[v1.ResourceCPU]; cpu.String() != "1" {
		t.Errorf("the spec was changed: app requests cpu %s", cpu.String())
	}
	if a := pw.ctrs.byName["app"].applied; a == nil || a.Requests.Cpu().String() != "250m" || a.Limits.Memory().String() != "64Mi" {
		t.Errorf("app's instance has %+v, want cpu request 250m, memory limit 64Mi", a)
	}
	if pw.alloc.gen != 3 || pw.claim.requested != (nodeRequest{milliCPU: 500}) {
		t.Errorf("allocated generation %d, node request %+v, want 3 and 500m", pw.alloc.gen, pw.claim.requested)
	}
	got, err := json.Marshal(pw.record())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("written back differently:\n got  %s\n want %s", got, data)
	}
	bad := bytes.Replace(data, []byte(`"500m"`), []byte(`"lots"`), 1)
	if err := newPodWorker(New(context.Background(), Config{Clock: clocktesting.NewFakeClock(t0), Planner: planner.DefaultConfig()}), pod).restore(bad); err == nil || !strings.Contains(err.Error(), "allocated.app.requests.cpu") {
		t.Errorf("restore of a bad quantity = %v", err)
	}
}

// The readiness verdict on a container's instance (added after the first
// agents) is read and written back; the first agents' checkpoints, which
// lack it, read as not ready (their round trip is
// TestCheckpointV1FromEarlierAgentsRoundTrips).
func TestCheckpointReadyDecodes(t *testing.T) {
	data := []byte(`{"version":1,"phase":1,"startTime":"0001-01-01T00:00:00Z","prepared":true,"containers":{"app":{"id":"app-1","observed":{"State":2,"Started":true,"StartedOnce":true,"StartedAt":"0001-01-01T00:00:00Z","FinishedAt":"0001-01-01T00:00:00Z","ExitCode":0,"Restarts":0,"BackoffSteps":0,"StopRequestedAt":"0001-01-01T00:00:00Z","SignalledAt":"0001-01-01T00:00:00Z","Killed":false,"KillAt":"0001-01-01T00:00:00Z"},"exit":{"ExitCode":0,"Reason":"","Message":"","FinishedAt":"0001-01-01T00:00:00Z"},"backoffAnnounced":"0001-01-01T00:00:00Z","ready":true}}}`)
	pw := restoredWorker(t, testPod("cp6", v1.RestartPolicyAlways, "main:app"), data)
	if !pw.ctrs.byName["app"].ready {
		t.Error("app is not ready after a restore from a checkpoint that says it is")
	}
	got, err := json.Marshal(pw.record())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Fatalf("written back differently:\n got  %s\n want %s", got, data)
	}
	old, err := os.ReadFile(filepath.Join("testdata", "checkpoint-v1-every-field.json"))
	if err != nil {
		t.Fatal(err)
	}
	if pw := restoredWorker(t, testPod("cp3", v1.RestartPolicyAlways, "main:app", "defer:d", "main:w"), old); pw.ctrs.byName["app"].ready {
		t.Error("app is ready after a restore from a checkpoint without the field")
	}
}
