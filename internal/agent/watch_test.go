package agent

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestWatchNamesPodsForgottenBeforeItsDeleted: a watch that lags behind a
// delete of more pods than the agent keeps removed (maxFinal) still sends
// each pod's DELETED with its name and namespace, as a Kubernetes watch's
// DELETED carries the object's last state: a client that waits for a
// name to go (podward bench's delete of 1,000 pods, `delete --wait`)
// would otherwise wait forever.
//
// It runs with the agent's change log, and with one too short for the
// watch's lag, which then looks at every pod to catch up.
func TestWatchNamesPodsForgottenBeforeItsDeleted(t *testing.T) {
	for _, size := range []int{maxChanges, 8} {
		t.Run(fmt.Sprintf("log-%d", size), func(t *testing.T) { testWatchNamesPodsForgotten(t, size) })
	}
}

func testWatchNamesPodsForgotten(t *testing.T, logSize int) {
	a, _ := newAgent(t)
	a.mu.Lock()
	a.changes = newChangeLog(logSize)
	a.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = maxFinal + 20
	for i := range n {
		if _, err := a.Create(decode(t, strings.Replace(manifest, "name: web", fmt.Sprintf("name: web-%d", i), 1))); err != nil {
			t.Fatal(err)
		}
	}
	w := a.WatchPods(ctx, "default")
	for added := 0; added < n; {
		select {
		case ev := <-w:
			if ev.Type == "ADDED" {
				added++
			}
		case <-ctx.Done():
			t.Fatalf("%d ADDED events, want %d", added, n)
		}
	}
	// The watch is not read while every pod is deleted and removed.
	zero := int64(0)
	for i := range n {
		if _, err := a.DeletePod("default", fmt.Sprintf("web-%d", i), &zero); err != nil {
			t.Fatal(err)
		}
	}
	waitChange(t, ctx, func() string { return fmt.Sprintf("%d pods left after the delete", len(a.ListPods("default"))) }, a.changedChan, func() bool { return len(a.ListPods("default")) == 0 })
	deleted := map[string]bool{}
	for len(deleted) < n {
		select {
		case ev := <-w:
			if ev.Type != "DELETED" {
				continue
			}
			if ev.Pod.Name == "" || ev.Pod.Namespace != "default" {
				t.Fatalf("DELETED of pod %s without its name or namespace: %q/%q", ev.Pod.UID, ev.Pod.Namespace, ev.Pod.Name)
			}
			deleted[ev.Pod.Name] = true
		case <-ctx.Done():
			t.Fatalf("%d pods seen DELETED, want %d", len(deleted), n)
		}
	}
}

// changedChan is the channel the agent's next change closes.
func (a *Agent) changedChan() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.changed
}
