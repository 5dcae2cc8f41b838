package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
	"github.com/podward/podward/internal/store"
)

// fullStore is the real store whose writes fail with ENOSPC's message while
// full is set, as on a full state disk.
type fullStore struct {
	*store.Store
	full atomic.Bool
}

var errDiskFull = errors.New("write state.db: no space left on device")

func (s *fullStore) PutPod(p *model.Pod) error {
	if s.full.Load() {
		return errDiskFull
	}
	return s.Store.PutPod(p)
}

func (s *fullStore) PutCheckpoint(uid types.UID, data []byte) error {
	if s.full.Load() {
		return errDiskFull
	}
	return s.Store.PutCheckpoint(uid, data)
}

func (s *fullStore) DeletePod(uid types.UID) error {
	if s.full.Load() {
		return errDiskFull
	}
	return s.Store.DeletePod(uid)
}

func (s *fullStore) AppendEvents(evs []events.Event) error {
	if s.full.Load() {
		return errDiskFull
	}
	return s.Store.AppendEvents(evs)
}

// TestDeleteOnAFullDisk is issue 12's full state disk: a pod deleted while
// nothing can be saved is stopped all the same (its stop signal at once,
// SIGKILL at the deadline) and removed; the agent reports that its state
// is not saved (StateError, node events) until the disk has room again.
// Before, the delete failed with the store's error and no signal went out.
func TestDeleteOnAFullDisk(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(clk)
	rt.IgnoreStopSignal("app")
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	fs := &fullStore{Store: st}
	a := New(ctx, Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler), Store: fs})
	t.Cleanup(func() { cancel(); a.Wait(); _ = st.Close() })
	waitCalls := func(what string, cond func(calls string) bool) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for {
			ch := rt.Changed()
			if cond(strings.Join(rt.Calls(), "\n")) {
				return
			}
			select {
			case <-ch:
			case <-deadline:
				t.Fatalf("timed out waiting for %s; calls %q", what, rt.Calls())
			}
		}
	}

	pod, err := a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	waitCalls("app started", func(c string) bool { return strings.Contains(c, "start app") })
	if err := a.StateError(); err != nil {
		t.Fatalf("StateError before the disk is full: %v", err)
	}

	evw := a.Recorder().Watch()
	defer evw.Stop()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	watch := a.WatchPods(wctx, "default")
	done := a.Workers().Done(pod.UID)
	fs.full.Store(true)
	grace := int64(5)
	if err := a.Delete(pod.UID, &grace, StopDeleted); err != nil {
		t.Fatalf("delete on a full disk: %v", err)
	}
	waitCalls("app's stop signal", func(c string) bool { return strings.Contains(c, "signal app terminated") })
	if err := a.StateError(); !errors.Is(err, ErrStateNotSaved) || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("StateError on a full disk = %v, want ErrStateNotSaved with the store's error", err)
	}

	// The deadline: SIGKILL goes out without a checkpoint either. (The
	// worker, whatever timer it set, steps again at the new time.)
	clk.Step(time.Duration(grace) * time.Second)
	waitCalls("app's kill", func(c string) bool { return strings.Contains(c, "signal app killed") })
	if err := a.WaitTerminated(wctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	for ev := range watch {
		if ev.Type == "DELETED" && ev.Pod.UID == pod.UID {
			break
		}
	}
	if _, err := a.GetPod("default", "web"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("the deleted, terminated pod is still served: %v", err)
	}

	// Nothing of the removed pod is left to save once its worker is done.
	select {
	case <-done:
	case <-wctx.Done():
		t.Fatal("the pod's worker did not return")
	}
	for {
		e, err := evw.Next(wctx)
		if err != nil {
			t.Fatalf("no CheckpointSaved node event once the pod is gone: %v; StateError: %v", err, a.StateError())
		}
		if e.Kind == events.KindNode && e.Reason == string(events.CheckpointSaved) {
			break
		}
	}
	if err := a.StateError(); err != nil {
		t.Fatalf("StateError once the pod is gone: %v", err)
	}
	var reasons []string
	for _, e := range a.Recorder().All() {
		if e.Kind == events.KindNode || e.PodUID == pod.UID {
			reasons = append(reasons, e.Type+" "+e.Reason)
		}
	}
	for _, want := range []string{"Warning FailedCheckpoint", "Normal CheckpointSaved", "Normal Killing"} {
		if !slices.Contains(reasons, want) {
			t.Errorf("events %q lack %q", reasons, want)
		}
	}
}

// warningRuntime is the fake runtime with warnings the test sends.
type warningRuntime struct {
	*fake.Runtime
	warnings chan runtime.Warning
}

func (r *warningRuntime) Warnings() <-chan runtime.Warning { return r.warnings }

// TestRuntimeWarningsArePodEvents: what a runtime says went wrong with an
// instance (its log dropped output on a full disk) is a Warning event of
// the instance's pod, about its container.
func TestRuntimeWarningsArePodEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := &warningRuntime{Runtime: fake.New(clk), warnings: make(chan runtime.Warning)}
	a := New(ctx, Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { cancel(); a.Wait() })
	pod, err := a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	w := a.Recorder().Watch()
	defer w.Stop()
	rt.warnings <- runtime.Warning{PodUID: pod.UID, Container: "app", ID: "app-1", Reason: runtime.WarningLogDropped, Message: "1234 bytes of the container's stdout were dropped"}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	for {
		e, err := w.Next(wctx)
		if err != nil {
			t.Fatalf("no LogDropped event: %v", err)
		}
		if e.Reason != "LogDropped" {
			continue
		}
		if e.PodUID != pod.UID || e.Type != events.Warning || e.FieldPath != "spec.containers{app}" || e.Message != "1234 bytes of the container's stdout were dropped" {
			t.Fatalf("event %+v", e)
		}
		return
	}
}

// TestRepeatedLogDroppedIsOneEvent: a container whose output is dropped
// again and again (a full disk) has one LogDropped event, as the API
// serves it: its count, first and last time, one name throughout.
func TestRepeatedLogDroppedIsOneEvent(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakeClock(t0)
	rt := &warningRuntime{Runtime: fake.New(clk), warnings: make(chan runtime.Warning)}
	a := New(ctx, Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { cancel(); a.Wait() })
	pod, err := a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	w := a.Recorder().Watch()
	defer w.Stop()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	var names []string
	for i := range 3 {
		if i > 0 {
			clk.Step(time.Minute)
		}
		rt.warnings <- runtime.Warning{PodUID: pod.UID, Container: "app", ID: "app-1", Reason: runtime.WarningLogDropped, Message: fmt.Sprintf("%d bytes of the container's stdout were dropped", i+1)}
		for {
			e, err := w.Next(wctx)
			if err != nil {
				t.Fatalf("LogDropped event %d: %v", i, err)
			}
			if e.Reason == string(events.LogDropped) {
				names = append(names, ToV1(e, "node").Name)
				break
			}
		}
	}
	var dropped []v1.Event
	for _, e := range a.ListEvents("default", pod.Name) {
		if e.Reason == string(events.LogDropped) {
			dropped = append(dropped, e)
		}
	}
	if len(dropped) != 1 {
		t.Fatalf("%d LogDropped events, want 1: %+v", len(dropped), dropped)
	}
	e := dropped[0]
	if e.Count != 3 || !e.FirstTimestamp.Time.Equal(t0) || !e.LastTimestamp.Time.Equal(t0.Add(2*time.Minute)) ||
		e.Message != "3 bytes of the container's stdout were dropped" || e.InvolvedObject.FieldPath != "spec.containers{app}" {
		t.Errorf("the event %+v: want count 3 from %v to %v with the last message", e, t0, t0.Add(2*time.Minute))
	}
	if names[0] != e.Name || names[1] != e.Name || names[2] != e.Name {
		t.Errorf("names %q, want %q throughout", names, e.Name)
	}
}
