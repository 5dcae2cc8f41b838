package podworker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

const meetTimeout = 2 * time.Second

// meetingRuntime takes concurrent starts (runtime.ConcurrentStarter), and
// its start of a regular container returns only once every regular
// container's start has begun: starts made one after the other fail
// (after meetTimeout, well within waitTimeout) instead of meeting.
type meetingRuntime struct {
	*fake.Runtime
	mains int

	mu      sync.Mutex
	arrived int
	all     chan struct{}
}

func (r *meetingRuntime) ConcurrentStarts() bool { return true }

func (r *meetingRuntime) StartContainer(ctx context.Context, pod *model.Pod, ref model.ContainerRef, attempt int) (runtime.Container, error) {
	if ref.Role == model.RoleMain {
		r.mu.Lock()
		r.arrived++
		if r.arrived == r.mains {
			close(r.all)
		}
		r.mu.Unlock()
		select {
		case <-r.all:
		case <-time.After(meetTimeout):
			return runtime.Container{}, errors.New("the other regular containers' starts did not come meanwhile")
		}
	}
	return r.Runtime.StartContainer(ctx, pod, ref, attempt)
}

// TestRegularContainersStartTogether: once the sidecar has started, the
// regular containers of one plan are started side by side on a runtime
// that takes concurrent starts, and each comes out running at its first
// attempt.
func TestRegularContainersStartTogether(t *testing.T) {
	h := newHarnessWith(t, func(rt *fake.Runtime) runtime.Runtime {
		return &meetingRuntime{Runtime: rt, mains: 2, all: make(chan struct{})}
	})
	p := testPod("together", v1.RestartPolicyAlways, "sidecar:side", "main:a", "main:b")
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Lifecycle = nil
	}
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitFor("a and b running, never restarted", func() bool {
		st, _, ok := h.w.PodStatus(p.UID)
		if !ok {
			return false
		}
		n := 0
		for _, cs := range st.Status.ContainerStatuses {
			if cs.State.Running != nil && cs.RestartCount == 0 {
				n++
			}
		}
		return n == 2
	})
}
