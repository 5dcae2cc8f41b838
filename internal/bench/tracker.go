package bench

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/client"
)

// tracker follows every pod of the agent through one watch, so that the
// bench waits on a pod's state without asking the agent again and again:
// a wait is a condition on the newest state of one pod, checked on every
// event of that pod.
type tracker struct {
	mu      sync.Mutex
	pods    map[string]*v1.Pod // by name; the newest state
	deleted map[string]bool    // names whose pod was removed
	waiters map[string][]*waiter
	err     error         // why the watch ended, once it did
	dead    chan struct{} // closed once the watch ended
}

// waiter is one wait: cond on the pod (nil once it is gone), ch closed
// when it holds.
type waiter struct {
	cond func(p *v1.Pod, gone bool) bool
	ch   chan struct{}
}

// startTracker watches the pods of ns until ctx ends.
func startTracker(ctx context.Context, c *client.Client, ns string) (*tracker, error) {
	w, err := c.WatchPods(ctx, ns, client.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	t := &tracker{
		pods:    map[string]*v1.Pod{},
		deleted: map[string]bool{},
		waiters: map[string][]*waiter{},
		dead:    make(chan struct{}),
	}
	go t.run(w)
	return t, nil
}

func (t *tracker) run(w *client.Watch[v1.Pod]) {
	defer w.Close()
	for {
		ev, err := w.Next()
		if err != nil {
			t.mu.Lock()
			t.err = err
			t.mu.Unlock()
			close(t.dead)
			return
		}
		t.apply(ev)
	}
}

func (t *tracker) apply(ev client.Event[v1.Pod]) {
	name := ev.Object.Name
	t.mu.Lock()
	defer t.mu.Unlock()
	var pod *v1.Pod
	gone := ev.Type == client.Deleted
	if gone {
		delete(t.pods, name)
		t.deleted[name] = true
	} else {
		pod = ev.Object
		t.pods[name] = pod
	}
	ws := t.waiters[name]
	kept := ws[:0]
	for _, w := range ws {
		if w.cond(pod, gone) {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		delete(t.waiters, name)
	} else {
		t.waiters[name] = kept
	}
}

// wait returns once cond holds for the pod name (gone: it was removed),
// or ctx ends, or the watch does.
func (t *tracker) wait(ctx context.Context, name string, cond func(p *v1.Pod, gone bool) bool) error {
	t.mu.Lock()
	if cond(t.pods[name], t.deleted[name]) {
		t.mu.Unlock()
		return nil
	}
	w := &waiter{cond: cond, ch: make(chan struct{})}
	t.waiters[name] = append(t.waiters[name], w)
	t.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		t.drop(name, w)
		return fmt.Errorf("pod %s: %w", name, ctx.Err())
	case <-t.dead:
		return fmt.Errorf("pod %s: %w: %v", name, errAgentGone, t.err)
	}
}

func (t *tracker) drop(name string, w *waiter) {
	t.mu.Lock()
	defer t.mu.Unlock()
	ws := t.waiters[name]
	for i, x := range ws {
		if x == w {
			t.waiters[name] = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(t.waiters[name]) == 0 {
		delete(t.waiters, name)
	}
}

// forget drops what the tracker knows of name, once the bench is done
// with it (names are never reused).
func (t *tracker) forget(name string) {
	t.mu.Lock()
	delete(t.deleted, name)
	t.mu.Unlock()
}

// waitGone waits until the pod name is removed from the agent.
func (t *tracker) waitGone(ctx context.Context, name string) error {
	err := t.wait(ctx, name, func(_ *v1.Pod, gone bool) bool { return gone })
	if err == nil {
		t.forget(name)
	}
	return err
}

// waitRunning waits until the pod name runs with every container it has
// (sidecars included) running.
func (t *tracker) waitRunning(ctx context.Context, name string) error {
	err := t.wait(ctx, name, func(p *v1.Pod, gone bool) bool {
		return gone || (p != nil && allRunning(p))
	})
	if err != nil {
		return err
	}
	t.mu.Lock()
	gone := t.deleted[name]
	t.mu.Unlock()
	if gone {
		return fmt.Errorf("pod %s was removed before all its containers ran", name)
	}
	return nil
}

// allRunning says whether p is Running with every container's status
// running, its sidecars' included.
func allRunning(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	want := len(p.Spec.Containers)
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			want++
		}
	}
	got := 0
	for _, ss := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, s := range ss {
			if s.State.Running != nil {
				got++
			}
		}
	}
	return got == want
}
