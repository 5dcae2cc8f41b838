package agent

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The kubelet's marks of a pod its shutdown manager terminated
// (pkg/kubelet/nodeshutdown/nodeshutdown_manager.go, killPods).
func assertShutdownMarks(t *testing.T, p *v1.Pod) {
	t.Helper()
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "Terminated" || p.Status.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Errorf("status phase %s reason %q message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
	found := false
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget {
			found = c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet
		}
	}
	if !found {
		t.Errorf("no DisruptionTarget condition: %+v", p.Status.Conditions)
	}
	if p.DeletionTimestamp != nil {
		t.Errorf("a pod terminated by the shutdown is not deleted; deletionTimestamp %v", p.DeletionTimestamp)
	}
}

// newShutDownNode is a node (standalone or cluster mode) whose pod web ran
// and was terminated by a node shutdown.
func newShutDownNode(t *testing.T, standalone bool) *node {
	t.Helper()
	n := newNode(t)
	n.restartShutdownPods = standalone
	n.crash()
	n.start()
	if _, err := n.a.Create(decode(t, manifest)); err != nil {
		t.Fatal(err)
	}
	n.waitPod("default", "web", func(err error, running bool) bool { return err == nil && running })
	n.shutDownPod("web")
	return n
}

func (n *node) shutDownPod(name string) *v1.Pod {
	n.t.Helper()
	n.a.SetShuttingDown(true)
	p, err := n.a.GetPod("default", name)
	if err != nil {
		n.t.Fatal(err)
	}
	if active := n.a.ActivePods(); len(active) != 1 || active[0].UID != p.UID {
		n.t.Fatalf("ActivePods = %v", active)
	}
	if err := n.a.KillForShutdown(p.UID, 20); err != nil {
		n.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := n.a.WaitTerminated(ctx, p.UID); err != nil {
		n.t.Fatal(err)
	}
	got, err := n.a.GetPod("default", name)
	if err != nil {
		n.t.Fatalf("the pod is gone after the shutdown terminated it: %v", err)
	}
	assertShutdownMarks(n.t, got)
	if len(n.a.ActivePods()) != 0 {
		n.t.Fatalf("ActivePods after the shutdown: %v", n.a.ActivePods())
	}
	return got
}

func (n *node) startsOfApp() int {
	return strings.Count(strings.Join(n.rt.Calls(), "\n"), "start app")
}

func (n *node) waitRunningAgain(name string, restarts int32) *v1.Pod {
	n.t.Helper()
	n.waitPod("default", name, func(err error, running bool) bool { return err == nil && running })
	got, _ := n.a.GetPod("default", name)
	if cs := got.Status.ContainerStatuses[0]; cs.RestartCount != restarts || cs.LastTerminationState.Terminated == nil || got.Status.Phase != v1.PodRunning {
		n.t.Fatalf("started again: phase %s, app %+v; want restartCount %d and a lastState", got.Status.Phase, cs, restarts)
	}
	return got
}

// waitEvent waits until pod name (in default) has an event with reason
// whose message contains msg.
func (n *node) waitEvent(name, reason, msg string) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	w := n.a.WatchEvents(ctx, "default") // before the look: nothing is missed
	for !hasEvent(n.a.ListEvents("default", name), reason, msg) {
		if _, ok := <-w; !ok {
			n.t.Fatalf("timed out waiting for the %s event %q of pod %s", reason, msg, name)
		}
	}
}

func hasEvent(evs []v1.Event, reason, msg string) bool {
	return slices.ContainsFunc(evs, func(e v1.Event) bool { return e.Reason == reason && strings.Contains(e.Message, msg) })
}

// While the node shuts down it rejects new pods as the kubelet's shutdown
// manager does (pkg/kubelet/nodeshutdown/nodeshutdown_manager.go, Admit,
// reported by kubelet.go's rejectPod as every admission failure): Create
// and Apply record them Failed with reason NodeShutdown and a warning
// event — an apply's replacement too, once the old pod is gone — and Sync
// returns the rejection. None of them is a pod a shutdown terminates, and
// they stay rejected once the node no longer shuts down, when new pods are
// admitted again. An apply that changes nothing is no new pod.
func TestShuttingDownRejectsNewPods(t *testing.T) {
	n := newNode(t)
	if _, _, err := n.a.Apply(decode(t, manifest)); err != nil {
		t.Fatal(err)
	}
	n.a.SetShuttingDown(true)
	named := func(name string) string { return strings.Replace(manifest, "name: web", "name: "+name, 1) }
	const msg = "Pod was rejected as the node is shutting down."
	isRejected := func(name string) bool {
		p, err := n.a.GetPod("default", name)
		return err == nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "NodeShutdown" && p.Status.Message == "Pod was rejected: "+msg
	}
	wantRejected := func(name string) {
		t.Helper()
		if p, err := n.a.GetPod("default", name); !isRejected(name) {
			t.Errorf("pod %s: %v, %+v; want Failed, NodeShutdown, the kubelet's message", name, err, p)
		}
		if !hasEvent(n.a.ListEvents("default", name), "NodeShutdown", msg) {
			t.Errorf("pod %s: no NodeShutdown event %q: %+v", name, msg, n.a.ListEvents("default", name))
		}
	}
	if _, err := n.a.Create(decode(t, named("other"))); err != nil {
		t.Fatalf("Create while shutting down: %v", err)
	}
	wantRejected("other")
	if _, res, err := n.a.Apply(decode(t, named("third"))); err != nil || res != Created {
		t.Fatalf("Apply of a new pod: %v %v", res, err)
	}
	wantRejected("third")
	if _, res, err := n.a.Apply(decode(t, manifest)); err != nil || res != Unchanged {
		t.Errorf("Apply of the same pod: %v %v", res, err)
	}
	if _, res, err := n.a.Apply(decode(t, strings.Replace(manifest, `"100"`, `"200"`, 1))); err != nil || res != Replaced {
		t.Fatalf("Apply of a changed pod (a replacement): %v %v", res, err)
	}
	// The replacement is recorded, then its events: wait for its last.
	n.waitEvent("web", "NodeShutdown", msg)
	wantRejected("web")
	synced := decode(t, named("synced"))
	synced.UID = "api-uid"
	var rejected *RejectedError
	if err := n.a.Sync(synced); !errors.As(err, &rejected) || !errors.Is(err, ErrRejected) || rejected.Reason != "NodeShutdown" || rejected.Message != msg {
		t.Errorf("Sync of a new pod: %v", err)
	}
	if n.a.Known("api-uid") {
		t.Error("Sync recorded the pod it rejected")
	}
	if active := n.a.ActivePods(); len(active) != 0 {
		t.Errorf("ActivePods lists %d pods; the rejected ones never ran", len(active))
	}

	n.a.SetShuttingDown(false)
	if _, err := n.a.Create(decode(t, named("fourth"))); err != nil {
		t.Errorf("Create once the node no longer shuts down: %v", err)
	}
	n.waitPod("default", "fourth", func(err error, running bool) bool { return err == nil && running })
	wantRejected("other")
}

// A pod the shutdown terminated is kept, marked as the kubelet marks it;
// when the shutdown is cancelled it starts again (standalone mode), one
// restart more.
func TestShutdownCancelledStartsPodsAgain(t *testing.T) {
	n := newShutDownNode(t, true)
	if !slices.Contains(n.rt.Calls(), "signal app terminated") {
		t.Fatalf("calls %q", n.rt.Calls())
	}
	n.a.SetShuttingDown(false)
	n.waitRunningAgain("web", 1)
	if n.startsOfApp() != 2 {
		t.Errorf("app started %d times", n.startsOfApp())
	}
	evs := n.a.ListEvents("default", "web")
	if !hasEvent(evs, "NodeShutdown", "Terminating the pod: the node is shutting down (grace period 20s)") ||
		!hasEvent(evs, "NodeShutdown", "Starting the pod again: the node shutdown was cancelled") {
		t.Errorf("events %+v", evs)
	}
}

// After the reboot, a standalone pod the shutdown terminated starts
// again, not Failed; an agent restarted while the node still shuts down
// starts nothing; in cluster mode the pod stays as the shutdown left it.
func TestShutdownThenReboot(t *testing.T) {
	for _, standalone := range []bool{true, false} {
		t.Run(map[bool]string{true: "standalone", false: "cluster"}[standalone], func(t *testing.T) {
			n := newShutDownNode(t, standalone)

			// The agent restarts before the machine goes down.
			n.crash()
			n.shuttingDown = true
			n.start()
			got, err := n.a.GetPod("default", "web")
			if err != nil {
				t.Fatal(err)
			}
			assertShutdownMarks(t, got)

			n.crash()
			n.shuttingDown = false
			n.rt.Reboot()
			n.setBoot("boot-2")
			n.start()
			if rebooted, err := n.a.Rebooted(); !rebooted || err != nil {
				t.Fatalf("Rebooted = %v, %v", rebooted, err)
			}
			if !standalone {
				got, _ := n.a.GetPod("default", "web")
				assertShutdownMarks(t, got)
				if n.startsOfApp() != 1 {
					t.Errorf("app started again in cluster mode: %q", n.rt.Calls())
				}
				return
			}
			n.waitRunningAgain("web", 1)
			if !hasEvent(n.a.ListEvents("default", "web"), "NodeShutdown", "Starting the pod again: the node rebooted after its shutdown") {
				t.Errorf("events %+v", n.a.ListEvents("default", "web"))
			}
			if !hasEvent(n.a.ListEvents("default", ""), "Rebooted", "Node localhost has been rebooted, boot id: boot-2") {
				t.Errorf("no Rebooted node event: %+v", n.a.ListEvents("default", ""))
			}
		})
	}
}

// A pod whose shutdown was cancelled while the agent was down starts
// again when the agent comes back.
func TestShutdownCancelledWhileDown(t *testing.T) {
	n := newShutDownNode(t, true)
	n.crash()
	n.start() // not shutting down: the shutdown was cancelled
	n.waitRunningAgain("web", 1)
}

// A pod deleted after the shutdown terminated it is removed, not started
// again.
func TestShutdownPodDeletedIsNotStartedAgain(t *testing.T) {
	n := newShutDownNode(t, true)
	if _, err := n.a.DeletePod("default", "web", nil); err != nil {
		t.Fatal(err)
	}
	n.waitPod("default", "web", func(err error, _ bool) bool { return errors.Is(err, ErrNotFound) })
	n.a.SetShuttingDown(false)
	if n.startsOfApp() != 1 {
		t.Errorf("a deleted pod started again: %q", n.rt.Calls())
	}
}
