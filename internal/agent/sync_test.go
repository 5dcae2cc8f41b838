package agent

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime/fake"
)

// A pod from another source (the API server) keeps its UID and node; a
// second Sync of it starts nothing more.
func TestSyncKeepsIdentity(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(clk)
	a := New(ctx, Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler), NodeName: "n1", NodeIP: "10.1.2.3"})
	t.Cleanup(func() { cancel(); a.Wait() })

	pod := decode(t, manifest)
	pod.UID = types.UID("api-uid-1")
	pod.Spec.NodeName = "n1"
	created := metav1.NewTime(time.Date(2025, 5, 5, 0, 0, 0, 0, time.UTC))
	pod.CreationTimestamp = created
	if a.Known(pod.UID) {
		t.Fatal("known before Sync")
	}
	if err := a.Sync(pod); err != nil {
		t.Fatal(err)
	}
	if err := a.Sync(&model.Pod{Pod: pod.Pod.DeepCopy(), Defer: pod.Defer}); err != nil {
		t.Fatal(err)
	}
	if !a.Known(pod.UID) {
		t.Fatal("not known after Sync")
	}
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	var got *v1.Pod
	for ev := range a.WatchPods(wctx, "default") {
		if ev.Pod.UID == pod.UID && ev.Pod.Status.Phase == v1.PodRunning {
			got = ev.Pod
			break
		}
	}
	if got == nil {
		t.Fatal("the pod never ran")
	}
	if got.UID != "api-uid-1" || !got.CreationTimestamp.Equal(&created) || got.Spec.NodeName != "n1" {
		t.Fatalf("identity changed: %+v", got.ObjectMeta)
	}
	if got.Status.HostIP != "10.1.2.3" || got.Status.PodIP != "10.1.2.3" {
		t.Fatalf("hostIP %q podIP %q, want the node's address", got.Status.HostIP, got.Status.PodIP)
	}
	if n := rt.CountCalls("start app"); n != 1 {
		t.Fatalf("started app %d times, want once", n)
	}
}

func TestSyncRejectsWhatCannotRun(t *testing.T) {
	a, rt := newAgent(t)
	rt.CheckErr = errors.New("spec.containers[0].command: Required value")
	pod := decode(t, manifest)
	pod.UID = "api-uid-2"
	if err := a.Sync(pod); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err = %v, want ErrInvalid", err)
	}
	if a.Known(pod.UID) {
		t.Fatal("a rejected pod is kept")
	}
}

// LogEnded closes once the instance whose log is followed exits.
func TestLogEnded(t *testing.T) {
	a, rt := newAgent(t)
	pod, err := a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waitChange(t, ctx, func() string { return "the container never started" }, rt.Changed, func() bool { return len(rt.Running(pod.UID)) > 0 })
	// The status shows it running (the watch's first events are the
	// current state).
	for ev := range a.WatchPods(ctx, "default") {
		if ev.Pod.Name == "web" && containerRunning(ev.Pod, "app") {
			break
		}
	}
	path, err := a.LogPath("default", "web", "app", false)
	if err != nil {
		t.Fatal(err)
	}
	ended := a.LogEnded(ctx, "default", "web", "app", path)
	select {
	case <-ended:
		t.Fatal("ended while the container runs")
	default:
	}
	rt.Exit(pod.UID, "app", 0)
	select {
	case <-ended:
	case <-ctx.Done():
		t.Fatal("LogEnded not closed after the container exited")
	}
}
