package runtime_test

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// KillRunning SIGKILLs the pod's running instances only, and names them:
// not an exited one, nor another pod's.
func TestKillRunning(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	rt := fake.New(clocktesting.NewFakeClock(time.Now()))
	go func() {
		for range rt.Events() {
		}
	}()
	pod := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p1"}}}
	other := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "p2"}}}
	start := func(p *model.Pod, name string) string {
		c, err := rt.StartContainer(ctx, p, model.ContainerRef{Role: model.RoleMain, Name: name}, 0)
		if err != nil {
			t.Fatal(err)
		}
		return c.ID
	}
	app, done, elsewhere := start(pod, "app"), start(pod, "done"), start(other, "app")
	rt.Exit("p1", "done", 0)
	ids, err := runtime.KillRunning(ctx, rt, "p1")
	if err != nil || !slices.Equal(ids, []string{app}) {
		t.Fatalf("KillRunning = %q, %v; want [%s]", ids, err, app)
	}
	calls := rt.Calls()
	if !slices.Contains(calls, "signal app killed") || slices.Contains(calls, "signal done killed") {
		t.Errorf("calls %q: want app killed, done (%s) not signalled", calls, done)
	}
	list, err := rt.ListContainers(ctx, "p2")
	if err != nil || len(list) != 1 || list[0].ID != elsewhere || list[0].Exit != nil {
		t.Errorf("the other pod's instance: %+v, %v; want it running", list, err)
	}
}
