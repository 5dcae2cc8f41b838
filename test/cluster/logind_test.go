package cluster

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/logind/logindtest"
)

// TestNodeLogindLock: `podward node` holds logind's delay lock too (the
// stand-in org.freedesktop.login1 of internal/logind/logindtest, run as a
// program on a private bus): PrepareForShutdown(true) turns the Node
// NotReady with the kubelet's shutdown reason and releases the lock once
// the (empty) node is shut down; PrepareForShutdown(false) takes the lock
// again and the Node is Ready again.
func TestNodeLogindLock(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	bus := logindtest.StartBus(t)
	// Above the budget: the node writes no drop-in into the machine's /etc.
	login := logindtest.StartProc(t, login1Bin, bus, 5*time.Minute)
	name := nodeName(t, "logind")
	n := startNodeEnv(t, c, name, []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bus.SystemBusAddress()},
		"--shutdown-grace-period", "8s", "--shutdown-grace-period-critical-pods", "3s")
	lockTaken := func(lock int) {
		t.Helper()
		ev := login.NextInhibit(waitTimeout)
		if ev.Lock != lock || len(ev.Args) != 4 || ev.Args[0] != "shutdown" || ev.Args[1] != "podward" || ev.Args[3] != "delay" {
			t.Fatalf("lock %d: Inhibit%q (lock %d); want Inhibit(shutdown, podward, …, delay)", lock, ev.Args, ev.Lock)
		}
		// The node has the fd once its call returned, and says so.
		if !n.log.waitLine("took logind's delay inhibitor lock", lock, waitTimeout) {
			t.Fatalf("the node did not say it took lock %d:\n%s", lock, n.log.String())
		}
		login.Drop(lock)
		if !login.Held(lock) {
			t.Fatalf("lock %d was released as soon as the node took it", lock)
		}
	}
	lockTaken(1)

	login.Emit(true)
	node := c.waitNode(t, name, "Ready=False", waitTimeout, func(nd *v1.Node) bool {
		st, _ := nodeCondition(nd, v1.NodeReady)
		return st == v1.ConditionFalse
	})
	for _, cond := range node.Status.Conditions {
		if cond.Type == v1.NodeReady && cond.Message != "node is shutting down" {
			t.Errorf("Ready condition %+v; want the message node is shutting down", cond)
		}
	}
	login.WaitReleased(1, waitTimeout)

	login.Emit(false)
	lockTaken(2)
	c.waitNode(t, name, "Ready=True", waitTimeout, func(nd *v1.Node) bool {
		st, _ := nodeCondition(nd, v1.NodeReady)
		return st == v1.ConditionTrue
	})
}
