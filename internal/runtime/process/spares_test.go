package process

import (
	"testing"

	"github.com/podward/podward/internal/runtime/process/shim"
)

// From the first start on, the runtime keeps spare shims ready, the next
// start's shim is one of them (a start then waits for no exec of this
// binary), and Close ends those left.
func TestStartsOnSpareShims(t *testing.T) {
	h := newHarness(t)
	h.r.spares.want = 2
	pod := newPod(t, shell("first", "exit 0"), shell("second", "exit 0"))
	h.prepare(pod)
	h.run(pod, 0)
	h.r.spares.fills.Wait() // the first start filled the pool
	h.r.spares.mu.Lock()
	var ready []int
	for _, s := range h.r.spares.ready {
		ready = append(ready, s.Pid())
	}
	h.r.spares.mu.Unlock()
	if len(ready) != 2 {
		t.Fatalf("%d spare shims ready after a start, want 2", len(ready))
	}
	c, _ := h.run(pod, 1)
	st, err := shim.Load(h.r.instanceDir(pod.UID, c.ID))
	if err != nil {
		t.Fatal(err)
	}
	if st.Shim == nil || st.Shim.Pid != ready[0] {
		t.Fatalf("the second container's shim is %+v, want the spare %d", st.Shim, ready[0])
	}
	h.r.spares.fills.Wait()
	h.r.spares.mu.Lock()
	var left []int
	for _, s := range h.r.spares.ready {
		left = append(left, s.Pid())
	}
	h.r.spares.mu.Unlock()
	if err := h.r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pid := range left {
		if !processGone(t, pid) {
			t.Errorf("spare shim %d still runs after Close", pid)
		}
	}
}
