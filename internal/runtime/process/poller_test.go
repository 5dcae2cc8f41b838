package process

import (
	"context"
	"runtime"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	rt "github.com/podward/podward/internal/runtime"
)

// TestWatchingTakesNoGoroutinePerContainer: the runtime waits for every
// running instance's shim and reads its notices in its one poller, not in
// goroutines of their own — at 1,000 pods of three containers, two
// goroutines a container were 6,000 stacks (some 40 MB of the agent's
// memory, issue 14). The bound is a count, not a time.
func TestWatchingTakesNoGoroutinePerContainer(t *testing.T) {
	r, err := New(Config{Root: t.TempDir(), Clock: testingclock.NewFakeClock(epoch)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	h := &harness{t: t, r: r, events: map[string]rt.Event{}}

	const pods, perPod = 3, 3
	var started []string
	before := runtime.NumGoroutine()
	for range pods {
		var cs []v1.Container
		for i := range perPod {
			cs = append(cs, shell("c"+string(rune('0'+i)), "exec sleep 100"))
		}
		pod := newPod(t, cs...)
		h.prepare(pod)
		for i := range perPod {
			started = append(started, h.start(pod, i).ID)
		}
	}
	// Whatever a start leaves running for a moment is not one goroutine
	// a container: 9 containers took 18 before the poller.
	if grown := runtime.NumGoroutine() - before; grown >= pods*perPod/2 {
		t.Errorf("%d goroutines more with %d containers watched, want fewer than %d", grown, pods*perPod, pods*perPod/2)
	}
	for _, id := range started {
		if err := r.Signal(context.Background(), id, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range started {
		if ev := h.waitExit(id); ev.Exit.ExitCode != 137 {
			t.Errorf("%s: exit %+v, want 137", id, ev.Exit)
		}
	}
}
