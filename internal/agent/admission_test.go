package agent

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime/fake"
)

// The kubelet's words for a pod beyond --max-pods (pkg/kubelet/lifecycle/
// predicate.go: OutOfpods and InsufficientResourceError; kubelet.go,
// rejectPod: the status message has "Pod was rejected: " in front).
const (
	outOfPodsMessage = "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
	outOfPodsStatus  = "Pod was rejected: " + outOfPodsMessage
)

func newAgentWithMaxPods(t *testing.T, maxPods int) (*Agent, *fake.Runtime) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(clk)
	a := New(ctx, Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler), MaxPods: maxPods})
	t.Cleanup(func() { cancel(); a.Wait() })
	return a, rt
}

// named is the test manifest's pod under another name.
func named(t *testing.T, name string) *model.Pod {
	t.Helper()
	return decode(t, strings.Replace(manifest, "name: web", "name: "+name, 1))
}

// mustCreate creates the test manifest's pod under another name.
func mustCreate(t *testing.T, a *Agent, name string) *model.Pod {
	t.Helper()
	p, err := a.Create(named(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// waitRunning waits until the pod's container runs.
func waitRunning(t *testing.T, a *Agent, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := a.WatchPods(ctx, "default")
	for {
		p, err := a.GetPod("default", name)
		if err == nil && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Running != nil {
			return
		}
		if _, ok := <-w; !ok {
			t.Fatalf("pod %s never ran", name)
		}
	}
}

func checkRejected(t *testing.T, p *v1.Pod) {
	t.Helper()
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "OutOfpods" || p.Status.Message != outOfPodsStatus {
		t.Fatalf("pod %s: phase %q reason %q message %q, want Failed, OutOfpods, %q", p.Name, p.Status.Phase, p.Status.Reason, p.Status.Message, outOfPodsStatus)
	}
}

// A pod created beyond MaxPods exists in the pod API, Failed with the
// kubelet's reason and message, and nothing of it runs; a delete removes it
// at once.
func TestCreateBeyondMaxPodsIsRejected(t *testing.T) {
	a, rt := newAgentWithMaxPods(t, 2)
	for _, name := range []string{"one", "two"} {
		if _, err := a.Create(named(t, name)); err != nil {
			t.Fatal(err)
		}
	}
	third, err := a.Create(named(t, "three"))
	if err != nil {
		t.Fatalf("create beyond max pods: %v, want the pod created Failed", err)
	}
	got, err := a.GetPod("default", "three")
	if err != nil {
		t.Fatal(err)
	}
	checkRejected(t, got)
	if a.Workers().Terminated(third.UID) != nil {
		t.Fatal("a rejected pod has a worker")
	}
	if err := a.WaitTerminated(context.Background(), third.UID); err != nil {
		t.Fatalf("wait for a rejected pod: %v", err)
	}
	evs := a.Recorder().List(third.UID)
	if i := slices.IndexFunc(evs, func(e events.Event) bool { return e.Reason == "OutOfpods" }); i < 0 || evs[i].Type != v1.EventTypeWarning || evs[i].Message != outOfPodsMessage {
		t.Fatalf("events %+v, want a warning OutOfpods %q", evs, outOfPodsMessage)
	}
	waitRunning(t, a, "one")
	waitRunning(t, a, "two")
	if n := rt.CountCalls("start app"); n != 2 {
		t.Fatalf("started app %d times, want twice (not for the rejected pod): %q", n, rt.Calls())
	}

	deleted, err := a.DeletePod("default", "three", nil)
	if err != nil {
		t.Fatal(err)
	}
	if deleted.DeletionTimestamp == nil || deleted.Status.Reason != "OutOfpods" {
		t.Fatalf("deleted rejected pod: %+v %+v", deleted.ObjectMeta, deleted.Status)
	}
	if _, err := a.GetPod("default", "three"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a deleted rejected pod is still served: %v", err)
	}
	// Still no room: the two pods run.
	again, err := a.Create(named(t, "three"))
	if err != nil {
		t.Fatal(err)
	}
	if p, _, _ := a.Get(again.UID); p.Status.Reason != "OutOfpods" {
		t.Fatalf("created again without room: %+v", p.Status)
	}
}

// Terminated pods do not count (the kubelet counts active pods), rejected
// ones neither; a pod that is still terminating does.
func TestMaxPodsCountsActivePods(t *testing.T) {
	a, rt := newAgentWithMaxPods(t, 2)
	job := decode(t, strings.Replace(manifest, "spec:\n", "spec:\n  restartPolicy: Never\n", 1))
	job.Name = "job"
	created, err := a.Create(job)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Create(named(t, "web")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, a, "job")
	if p := mustCreate(t, a, "full"); !isRejected(p) {
		t.Fatal("a third pod was admitted with two running")
	}
	rt.Exit(created.UID, "app", 0)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := a.WaitTerminated(ctx, created.UID); err != nil {
		t.Fatal(err)
	}
	if admitted := mustCreate(t, a, "after"); isRejected(admitted) {
		t.Fatalf("rejected with one pod terminated: %+v", admitted.Status)
	}
	waitRunning(t, a, "after")

	// A pod being deleted still holds its place until it has terminated.
	rt.IgnoreStopSignal("app")
	if _, err := a.DeletePod("default", "web", nil); err != nil {
		t.Fatal(err)
	}
	if p := mustCreate(t, a, "during"); !isRejected(p) {
		t.Fatal("admitted while a pod was still terminating")
	}
}

// Sync (cluster mode) returns the refusal; the source marks the pod.
func TestSyncBeyondMaxPods(t *testing.T) {
	a, _ := newAgentWithMaxPods(t, 2)
	for i, name := range []string{"one", "two", "three"} {
		pod := named(t, name)
		pod.UID = types.UID("api-uid-" + name)
		err := a.Sync(pod)
		if i < 2 {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		var rejected *RejectedError
		if !errors.As(err, &rejected) || !errors.Is(err, ErrRejected) || rejected.Reason != "OutOfpods" || rejected.Message != outOfPodsMessage {
			t.Fatalf("sync beyond max pods: %v, want OutOfpods %q", err, outOfPodsMessage)
		}
		if a.Known(pod.UID) {
			t.Fatal("a pod Sync refused is kept")
		}
	}
}

// A manifest cannot make a pod look rejected: the status it writes is
// dropped on create.
func TestCreateDropsWrittenStatus(t *testing.T) {
	a, _ := newAgentWithMaxPods(t, 2)
	pod := named(t, "liar")
	pod.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "OutOfpods", Message: "no"}
	if _, err := a.Create(pod); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, a, "liar")
}

// A rejected pod stays rejected after a restart, and never runs.
func TestRecoverKeepsRejectedPod(t *testing.T) {
	n := newNode(t)
	n.crash()
	n.maxPods = 2
	n.start()
	for _, name := range []string{"one", "two", "three"} {
		mustCreate(t, n.a, name)
	}
	waitRunning(t, n.a, "one")
	waitRunning(t, n.a, "two")
	n.crash()
	n.maxPods = 5
	n.start()
	got, err := n.a.GetPod("default", "three")
	if err != nil {
		t.Fatal(err)
	}
	checkRejected(t, got)
	n.waitPod("default", "one", func(err error, running bool) bool { return err == nil && running })
	n.waitPod("default", "two", func(err error, running bool) bool { return err == nil && running })
	if c := n.rt.CountCalls("start app"); c != 2 {
		t.Fatalf("started app %d times, want twice: %q", c, n.rt.Calls())
	}
	if _, err := n.a.DeletePod("default", "three", nil); err != nil {
		t.Fatal(err)
	}
	n.crash()
	n.start()
	if _, err := n.a.GetPod("default", "three"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a deleted rejected pod came back: %v", err)
	}
}

// A pod for another OS is rejected as the kubelet's predicate handler
// rejects it (pkg/kubelet/lifecycle/predicate.go): its kubernetes.io/os
// label first, then spec.os.name. It is created Failed with the kubelet's
// reason and message, before the runtime is asked whether it could run it
// (the e2e PodOSRejection pod runs the pause image, without a command);
// Sync returns the rejection. A pod for this OS goes on to the runtime's
// check.
func TestPodForAnotherOSIsRejected(t *testing.T) {
	for name, tc := range map[string]struct {
		labels  map[string]string
		os      v1.OSName
		reason  string
		message string
	}{
		"spec.os.name windows": {os: v1.Windows, reason: "PodOSNotSupported",
			message: "Failed to admit pod as the OS field doesn't match node OS"},
		"kubernetes.io/os label windows": {labels: map[string]string{"kubernetes.io/os": "windows"}, reason: "PodOSSelectorNodeLabelDoesNotMatch",
			message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		"label before the field": {labels: map[string]string{"kubernetes.io/os": "windows"}, os: v1.Windows, reason: "PodOSSelectorNodeLabelDoesNotMatch",
			message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"},
		"linux": {labels: map[string]string{"kubernetes.io/os": "linux"}, os: v1.Linux},
	} {
		t.Run(name, func(t *testing.T) {
			a, rt := newAgentWithMaxPods(t, 5)
			refusal := errors.New("spec.containers[0].command: Required value")
			rt.CheckErr = refusal
			pod := named(t, "os")
			pod.Labels = tc.labels
			if tc.os != "" {
				pod.Spec.OS = &v1.PodOS{Name: tc.os}
			}
			synced := pod.DeepCopy()
			created, err := a.Create(pod)
			if tc.reason == "" {
				if !errors.Is(err, refusal) {
					t.Fatalf("create: %v, want the runtime's refusal", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("create: %v, want the pod created Failed", err)
			}
			got, _, _ := a.Get(created.UID)
			if got.Status.Phase != v1.PodFailed || got.Status.Reason != tc.reason || got.Status.Message != "Pod was rejected: "+tc.message {
				t.Fatalf("status %+v, want Failed, %s, %q", got.Status, tc.reason, tc.message)
			}
			evs := a.Recorder().List(created.UID)
			if i := slices.IndexFunc(evs, func(e events.Event) bool { return e.Reason == tc.reason }); i < 0 || evs[i].Type != v1.EventTypeWarning || evs[i].Message != tc.message {
				t.Fatalf("events %+v, want a warning %s %q", evs, tc.reason, tc.message)
			}
			if slices.Contains(rt.Calls(), "prepare") {
				t.Fatalf("the rejected pod was prepared: %q", rt.Calls())
			}

			sp := &model.Pod{Pod: synced}
			sp.UID = "api-uid"
			var rejected *RejectedError
			if err := a.Sync(sp); !errors.As(err, &rejected) || string(rejected.Reason) != tc.reason || rejected.Message != tc.message {
				t.Fatalf("sync: %v, want %s %q", err, tc.reason, tc.message)
			}
		})
	}
}
