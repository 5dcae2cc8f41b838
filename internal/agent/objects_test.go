package agent

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// refreshingRuntime is the fake runtime with RefreshVolumes, noted as
// "refresh <pod name>" among its calls.
type refreshingRuntime struct{ *fake.Runtime }

func (r refreshingRuntime) RefreshVolumes(ctx context.Context, pod *model.Pod) error {
	r.Note("refresh %s %s", pod.Name, pod.Labels["v"])
	return nil
}

// registrar is objectstest's Getter and Tokens that records the pods
// registered, unregistered and forgotten, as "register NAME".
type registrar struct {
	*objectstest.Objects
	mu    sync.Mutex
	calls []string
}

func (r *registrar) note(format string, args ...any) {
	r.mu.Lock()
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
	r.mu.Unlock()
}
func (r *registrar) RegisterPod(p *model.Pod)   { r.note("register %s", p.Name) }
func (r *registrar) UnregisterPod(p *model.Pod) { r.note("unregister %s", p.Name) }
func (r *registrar) ForgetPod(uid types.UID)    { r.note("forget %s", uid) }
func (r *registrar) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

func newObjectsAgent(t *testing.T) (*Agent, *fake.Runtime, *registrar) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(clk)
	reg := &registrar{Objects: &objectstest.Objects{}}
	a := New(ctx, Config{Runtime: refreshingRuntime{rt}, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler),
		Objects: runtime.Objects{Getter: reg, Tokens: reg}})
	t.Cleanup(func() { cancel(); a.Wait() })
	return a, rt, reg
}

func podReferencing(name, volume string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: Pod
metadata: {name: %s, labels: {v: "1"}}
spec:
  containers: [{name: app, image: busybox, command: [sleep, "100"]}]
  volumes: [%s]
`, name, volume)
}

func TestObjectChangedRoutesToThePodsThatReferenceIt(t *testing.T) {
	a, rt, reg := newObjectsAgent(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pods := map[string]*model.Pod{}
	for name, vol := range map[string]string{
		"cm":     "{name: v, configMap: {name: shared}}",
		"secret": "{name: v, secret: {secretName: shared}}",
		"none":   "{name: v, emptyDir: {}}",
	} {
		p, err := a.Create(decode(t, podReferencing(name, vol)))
		if err != nil {
			t.Fatal(err)
		}
		pods[name] = p
		waitChange(t, ctx, func() string { return name + " never started" }, rt.Changed, func() bool {
			return slices.Contains(rt.Running(p.UID), "app")
		})
	}
	for _, name := range []string{"cm", "secret", "none"} {
		if !slices.Contains(reg.recorded(), "register "+name) {
			t.Errorf("pod %s not registered before it ran: %q", name, reg.recorded())
		}
	}
	refreshes := func() []string {
		var got []string
		for _, c := range rt.Calls() {
			if len(c) > 8 && c[:8] == "refresh " {
				got = append(got, c)
			}
		}
		return got
	}
	a.ObjectChanged(objects.Change{Ref: objects.Ref{Kind: objects.KindConfigMap, Namespace: "default", Name: "shared"}})
	waitChange(t, ctx, func() string { return fmt.Sprintf("refreshes %q", refreshes()) }, rt.Changed, func() bool { return len(refreshes()) == 1 })
	a.ObjectChanged(objects.Change{PodUID: pods["secret"].UID})
	waitChange(t, ctx, func() string { return fmt.Sprintf("refreshes %q", refreshes()) }, rt.Changed, func() bool { return len(refreshes()) == 2 })
	a.ObjectChanged(objects.Change{Ref: objects.Ref{Kind: objects.KindConfigMap, Namespace: "other", Name: "shared"}})
	a.ObjectChanged(objects.Change{PodUID: "unknown"})
	// A label change is taken in place and refreshes the pod's volumes.
	next := decode(t, podReferencing("none", "{name: v, emptyDir: {}}"))
	next.Labels["v"] = "2"
	if _, res, err := a.Apply(next); err != nil || res != Updated {
		t.Fatalf("apply of a label change = %v, %v; want Updated", res, err)
	}
	waitChange(t, ctx, func() string { return fmt.Sprintf("refreshes %q", refreshes()) }, rt.Changed, func() bool { return len(refreshes()) == 3 })
	if got, want := refreshes(), []string{"refresh cm 1", "refresh secret 1", "refresh none 2"}; !slices.Equal(got, want) {
		t.Errorf("refreshes %q, want %q", got, want)
	}

	if err := a.Delete(pods["cm"].UID, nil, StopDeleted); err != nil {
		t.Fatal(err)
	}
	waitChange(t, ctx, func() string { return fmt.Sprintf("calls %q", reg.recorded()) }, a.changedCh, func() bool {
		return slices.Contains(reg.recorded(), "forget "+string(pods["cm"].UID))
	})
	if !slices.Contains(reg.recorded(), "unregister cm") {
		t.Errorf("calls %q: the removed pod is not unregistered", reg.recorded())
	}
}

// changedCh is the channel the agent's next change closes.
func (a *Agent) changedCh() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed
}
