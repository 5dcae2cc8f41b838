package podworker

import (
	"context"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// refresher is the fake runtime with RefreshVolumes, which records
// "refresh volumes" and fails while err is set.
type refresher struct {
	*fake.Runtime
	mu  sync.Mutex
	err error
}

func (r *refresher) RefreshVolumes(ctx context.Context, pod *model.Pod) error {
	r.mu.Lock()
	err := r.err
	r.mu.Unlock()
	// Noted once its outcome is read: a test that sees the call and then
	// sets err changes the next call, never this one.
	r.Note("refresh volumes")
	return err
}

func (r *refresher) fail(err error) {
	r.mu.Lock()
	r.err = err
	r.mu.Unlock()
}

var missing = &runtime.VolumeError{Volume: "cfg", Err: objects.NotFound(objects.KindConfigMap, "app")}

func TestVolumesChangedRefreshesARunningPod(t *testing.T) {
	var ref *refresher
	h := newHarnessWith(t, func(rt *fake.Runtime) runtime.Runtime { ref = &refresher{Runtime: rt}; return ref })
	p := testPod("u1", v1.RestartPolicyAlways, "main:m")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start m")
	h.w.RefreshVolumes(p.UID)
	h.waitCalls("prepare", "start m", "refresh volumes")

	// A failure is a FailedMount with the kubelet's message, retried after
	// BackoffBase, then after twice that.
	ref.fail(missing)
	h.w.RefreshVolumes(p.UID)
	h.waitFor("two refreshes", func() bool { return h.rt.CountCalls("refresh volumes") == 2 })
	ev := h.waitEvent(p.UID, string(events.FailedMount))
	if ev.Type != events.Warning || ev.Message != `MountVolume.SetUp failed for volume "cfg" : configmap "app" not found` {
		t.Errorf("event %+v, want a Warning FailedMount with the kubelet's message", ev)
	}
	base := h.w.cfg.Planner.BackoffBase
	h.step(base)
	h.waitFor("the retry", func() bool { return h.rt.CountCalls("refresh volumes") == 3 })
	h.step(base)
	if n := h.rt.CountCalls("refresh volumes"); n != 3 {
		t.Fatalf("%d refreshes one base after the second failure, want the backoff doubled", n)
	}
	ref.fail(nil)
	h.step(base)
	h.waitFor("the doubled retry", func() bool { return h.rt.CountCalls("refresh volumes") == 4 })
	if got := h.rt.Running(p.UID); len(got) != 1 {
		t.Errorf("running %v: a failed refresh must not stop the pod", got)
	}
}

// TestFailedSetupWaitsForTheObject: a pod whose volume setup fails with a
// VolumeError starts nothing, reports FailedMount, and is set up at once
// when news of its objects comes, without waiting out its backoff.
func TestFailedSetupWaitsForTheObject(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	fail := error(missing)
	h.rt.PrepareHook = func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		return fail
	}
	p := testPod("u2", v1.RestartPolicyAlways, "main:m")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	ev := h.waitEvent(p.UID, string(events.FailedMount))
	if ev.Message != missing.Error() {
		t.Errorf("FailedMount %q, want %q", ev.Message, missing.Error())
	}
	h.waitFor("a timer", h.clk.HasWaiters)
	if calls := h.rt.Calls(); len(calls) != 0 {
		t.Fatalf("calls %q before the volumes were set up", calls)
	}
	status, _, _ := h.w.PodStatus(p.UID)
	if status.Status.Phase != v1.PodPending {
		t.Errorf("phase %s, want Pending", status.Status.Phase)
	}
	if cs := status.Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Waiting == nil || cs[0].State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("container statuses %+v, want m waiting in ContainerCreating", cs)
	}
	mu.Lock()
	fail = nil
	mu.Unlock()
	h.w.RefreshVolumes(p.UID)
	h.waitCalls("prepare", "start m")
}

func TestVolumesInputCoalesces(t *testing.T) {
	ib := newInbox()
	for range 3 {
		ib.push(input{kind: inputVolumes})
	}
	ib.push(input{kind: inputPod, pod: testPod("u3", v1.RestartPolicyNever, "main:m")})
	if in := ib.drain(); len(in) != 2 || in[0].kind != inputVolumes {
		t.Errorf("inputs %v, want one Volumes and the pod", in)
	}
	if got := inputVolumes.String(); got != "Volumes" {
		t.Errorf("String = %q", got)
	}
}

// TestObjectNewsRetriesAConfigError: the news that reaches a pod's volumes
// also starts at once a container waiting for an object of its env.
func TestObjectNewsRetriesAConfigError(t *testing.T) {
	h := newHarness(t)
	var mu sync.Mutex
	fail := true
	h.rt.StartHook = func(context.Context, model.ContainerRef) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return &runtime.ContainerConfigError{Message: `configmap "env" not found`}
		}
		return nil
	}
	p := testPod("u4", v1.RestartPolicyAlways, "main:m")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitEvent(p.UID, string(events.Failed))
	h.waitFor("a timer", h.clk.HasWaiters)
	mu.Lock()
	fail = false
	mu.Unlock()
	h.w.RefreshVolumes(p.UID)
	h.waitCall("start m")
}
