package agent

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// signallingRuntime is the fake runtime whose RefreshVolumes tells
// refreshed.
type signallingRuntime struct {
	*fake.Runtime
	refreshed chan struct{}
}

func (r signallingRuntime) RefreshVolumes(context.Context, *model.Pod) error {
	r.refreshed <- struct{}{}
	return nil
}

// BenchmarkObjectChangedToRefresh is how long news of a changed ConfigMap
// takes from the agent (ObjectChanged, as the standalone store and the
// node's watch call it) to the runtime's rewrite of the volumes of the pod
// that mounts it, through the pod's worker: the part of the update latency
// that is podward's own, beside the runtime's write (BenchmarkRefreshVolumes
// in internal/runtime/process).
func BenchmarkObjectChangedToRefresh(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	rt := signallingRuntime{Runtime: fake.New(clock.RealClock{}), refreshed: make(chan struct{}, 1)}
	objs := &objectstest.Objects{}
	a := New(ctx, Config{Runtime: rt, Clock: clock.RealClock{}, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler),
		Objects: runtime.Objects{Getter: objs, Tokens: objs}})
	defer func() { cancel(); a.Wait() }()
	pods, err := model.Decode([]byte(podReferencing("bench", "{name: v, configMap: {name: shared}}")))
	if err != nil {
		b.Fatal(err)
	}
	p, err := a.Create(pods[0])
	if err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !slices.Contains(rt.Running(p.UID), "app") {
		select {
		case <-rt.Changed():
		case <-time.After(time.Until(deadline)):
			b.Fatal("the pod did not start within 10s")
		}
	}
	change := objects.Change{Ref: objects.Ref{Kind: objects.KindConfigMap, Namespace: "default", Name: "shared"}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		a.ObjectChanged(change)
		select {
		case <-rt.refreshed:
		case <-time.After(10 * time.Second):
			b.Fatal("no refresh within 10s of the change")
		}
	}
}
