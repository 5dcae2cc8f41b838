package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const manifest = `
apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  containers:
  - name: app
    image: busybox
    command: ["sleep", "100"]
`

func decode(t testing.TB, doc string) *model.Pod {
	t.Helper()
	pods, err := model.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return pods[0]
}

func newAgent(t *testing.T) (*Agent, *fake.Runtime) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(clk)
	a := New(ctx, Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler)})
	t.Cleanup(func() { cancel(); a.Wait() })
	return a, rt
}

// waitChange waits until cond holds, looking again at every change that
// changed (the fake runtime's, the agent's) announces, or fails the test
// with what once ctx ends. The channel is taken before cond is looked at,
// so that a change between the two is not missed.
func waitChange(t *testing.T, ctx context.Context, what func() string, changed func() <-chan struct{}, cond func() bool) {
	t.Helper()
	for {
		ch := changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatal(what())
		}
	}
}

func TestCreateDeleteWait(t *testing.T) {
	a, rt := newAgent(t)
	pod, err := a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	if pod.UID == "" || pod.Namespace != "default" || pod.Spec.NodeName == "" {
		t.Fatalf("created pod lacks UID, namespace or node: %+v", pod.ObjectMeta)
	}
	if _, err := a.Create(decode(t, manifest)); !errors.Is(err, ErrAlreadyExists) {
		t.Fatalf("second create of the same name: err = %v, want ErrAlreadyExists", err)
	}
	if err := a.Delete(types.UID("nope"), nil, StopDeleted); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete of an unknown pod: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	waitChange(t, ctx, func() string { return "the container never started" }, rt.Changed, func() bool { return slices.Contains(rt.Calls(), "start app") })
	watch := a.WatchPods(ctx, "default")
	if err := a.Delete(pod.UID, nil, StopDeleted); err != nil {
		t.Fatal(err)
	}
	if err := a.WaitTerminated(ctx, pod.UID); err != nil {
		t.Fatal(err)
	}
	for ev := range watch {
		if ev.Type == "DELETED" && ev.Pod.UID == pod.UID {
			break
		}
	}
	if _, err := a.GetPod("default", "web"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a deleted, terminated pod is still served: %v", err)
	}
	if a.Workers().Terminated(pod.UID) != nil {
		t.Fatal("the worker of a removed pod is kept")
	}
	got, _, err := a.Get(pod.UID)
	if err != nil || got.DeletionTimestamp == nil {
		t.Fatalf("terminated pod: %v %+v", err, got)
	}
	if calls := strings.Join(rt.Calls(), ","); !strings.Contains(calls, "start app") || !strings.Contains(calls, "signal app terminated") {
		t.Fatalf("calls = %s", calls)
	}
	// Once terminated, the name is free again.
	if _, err := a.Create(decode(t, manifest)); err != nil {
		t.Fatalf("create after the first pod terminated: %v", err)
	}
	events := a.Recorder().List(pod.UID)
	if len(events) == 0 || events[0].Reason != "Scheduled" {
		t.Fatalf("first event = %+v, want Scheduled", events)
	}
}

func TestCreateRejectsInvalidAndUnsupported(t *testing.T) {
	a, rt := newAgent(t)
	bad := decode(t, strings.Replace(manifest, "image: busybox", "image: \"\"", 1))
	if _, err := a.Create(bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "spec.containers[0].image: Required value") {
		t.Fatalf("invalid pod: err = %v", err)
	}
	rt.CheckErr = fmt.Errorf("spec.containers[0].command: Required value: %w", runtime.ErrUnsupported)
	if _, err := a.Create(decode(t, manifest)); !errors.Is(err, ErrInvalid) || !errors.Is(err, runtime.ErrUnsupported) {
		t.Fatalf("unsupported pod: err = %v", err)
	}
	if len(rt.Calls()) != 0 {
		t.Fatalf("a rejected pod touched the runtime: %q", rt.Calls())
	}
}

// The typed errors carry what a client is told, without the sentinel's
// words in front.
func TestTypedErrors(t *testing.T) {
	a, rt := newAgent(t)
	var invalid *InvalidError
	err := a.Admit(decode(t, strings.Replace(manifest, "image: busybox", "image: \"\"", 1)))
	if !errors.As(err, &invalid) || invalid.Problems() != "spec.containers[0].image: Required value" || err.Error() != "invalid pod: "+invalid.Problems() {
		t.Fatalf("invalid pod: err = %v", err)
	}
	rt.CheckErr = errors.Join(errors.New("refused one"), errors.New("refused two"))
	err = a.Admit(decode(t, manifest))
	if !errors.As(err, &invalid) || invalid.Problems() != "refused one\nrefused two" {
		t.Fatalf("refused pod: err = %v", err)
	}

	var bad *BadRequestError
	err = BadRequestf("container %s is not valid for pod %s", "x", "web")
	if !errors.Is(err, ErrBadRequest) || !errors.As(err, &bad) || bad.Message != "container x is not valid for pod web" || err.Error() != "bad request: "+bad.Message {
		t.Fatalf("bad request: err = %v", err)
	}
}
