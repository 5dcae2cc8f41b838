package crash

import (
	"os"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/logind/logindtest"
	"github.com/podward/podward/internal/wire"
	"github.com/podward/podward/test/internal/bintest"
)

// The machine's shutdown as systemd-logind announces it, end to end: the
// real `podward serve`, a private dbus-daemon, and the stand-in
// org.freedesktop.login1 of internal/logind/logindtest run as a program of
// its own (test/internal/login1standin), the agent pointed at that bus by
// DBUS_SYSTEM_BUS_ADDRESS, as godbus reads it. The kubelet's pattern
// (pkg/kubelet/nodeshutdown/nodeshutdown_manager_linux.go): a delay lock
// taken at start, held while the pods are shut down, released when they
// are; PrepareForShutdown(false) takes it again.

// tookLock is what the agent logs each time it holds logind's lock.
const tookLock = "took logind's delay inhibitor lock"

// startWithLogind starts the test's agent on a private bus with the
// stand-in logind, and waits until the agent holds its first lock.
func (e *env) startWithLogind() *logindtest.Proc {
	t := e.t
	t.Helper()
	bus := logindtest.StartBus(t)
	// A longer InhibitDelayMaxUSec than the budget: the agent writes no
	// drop-in (into the machine's /etc).
	login := logindtest.StartProc(t, login1Bin, bus, 5*time.Minute)
	e.environ = append(e.environ, "DBUS_SYSTEM_BUS_ADDRESS="+bus.SystemBusAddress())
	e.start()
	e.lockTaken(login, 1)
	return login
}

// lockTaken waits for the n-th lock the agent takes: Inhibit("shutdown",
// "podward", …, "delay") on the stand-in, and the agent's word that it has
// it (its call returned: the fd crossed the bus). The stand-in then drops
// its own copy, so that the agent's alone holds the lock, which must be
// held.
func (e *env) lockTaken(login *logindtest.Proc, n int) {
	t := e.t
	t.Helper()
	ev := login.NextInhibit(readyTimeout)
	if ev.Lock != n || len(ev.Args) != 4 || ev.Args[0] != "shutdown" || ev.Args[1] != "podward" || ev.Args[3] != "delay" {
		t.Fatalf("lock %d: Inhibit%q (lock %d); want Inhibit(shutdown, podward, …, delay)", n, ev.Args, ev.Lock)
	}
	e.waitLog(tookLock, n)
	login.Drop(n)
	if !login.Held(n) {
		t.Fatalf("lock %d was released as soon as the agent took it", n)
	}
}

// waitLog waits until the running agent's log has n lines containing s.
func (e *env) waitLog(s string, n int) {
	e.t.Helper()
	log := e.logs[len(e.logs)-1]
	e.waitInDir(e.dir, "log line "+s, func() bool {
		data, _ := os.ReadFile(log)
		return strings.Count(string(data), s) >= n
	}, nil, readyTimeout)
}

// PrepareForShutdown(true) shuts the node down, each pod in its order —
// defer containers, mains, sidecars in reverse — group after group, under
// the lock the agent took at start and released only once the pods are
// done; PrepareForShutdown(false) then takes the lock again and the pods
// start again (standalone mode); an agent that stops releases its lock.
func TestLogindShutdownAndCancel(t *testing.T) {
	t.Parallel()
	e := newStoppedEnv(t, bintest.Process(), "--shutdown-grace-period", "30s", "--shutdown-grace-period-critical-pods", "10s")
	login := e.startWithLogind()

	web := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{e.sidecar("s1", serving("web-s1")), e.sidecar("s2", serving("web-s2"))},
			Containers:     []v1.Container{e.container("app", serving("web-app"))},
		},
	}
	// The defer container holds the shutdown until the test lets it go.
	withDefer(t, web, e.container("d", "echo defer web-d >> {rec}; "+waitTrigger("d")+"; echo done web-d >> {rec}"))
	dns := e.criticalPod("dns")
	e.apply(web)
	e.apply(dns)
	e.waitPod("web", "condition=Ready", recordTimeout)
	e.waitPod("dns", "condition=Ready", recordTimeout)

	login.Emit(true)
	e.waitRecord("defer web-d")
	if !login.Held(1) {
		t.Fatal("the lock was released while the first group's pods were still being stopped")
	}
	if st := e.shutdownStatus(); st.State != wire.ShutdownTerminating || st.Reason != wire.ShutdownReasonLogind {
		t.Errorf("the shutdown while the defer container runs: %+v; want Terminating, reason Logind", st)
	}
	e.trigger("d")
	login.WaitReleased(1, shutdownTimeout)
	// Released only once every pod was done: each container recorded its
	// stop before it exited, and the agent saw every exit before the end.
	e.assertOrder("defer web-d", "done web-d", "stop web-app", "stop web-s2", "stop web-s1", "defer dns-d", "stop dns-app", "stop dns-s")
	if st := e.shutdownStatus(); st.State != wire.ShutdownTerminated || st.Reason != wire.ShutdownReasonLogind {
		t.Errorf("the shutdown once the lock is released: %+v; want Terminated", st)
	}

	// The machine's shutdown is called off.
	login.Emit(false)
	e.lockTaken(login, 2)
	e.waitRecords("web and dns started again", func(lines []string) bool {
		return count(lines, "start web-app ") == 2 && count(lines, "start dns-app ") == 2
	}, recordTimeout)
	for _, name := range []string{"web", "dns"} {
		e.waitPod(name, "condition=Ready", recordTimeout)
		if cs := containerStatus(t, e.getPod(name).Status.ContainerStatuses, "app"); cs.RestartCount != 1 {
			t.Errorf("%s app after the cancelled shutdown: restartCount %d, want 1", name, cs.RestartCount)
		}
	}
	if st := e.shutdownStatus(); st.State != wire.ShutdownCancelled {
		t.Errorf("the shutdown after PrepareForShutdown(false): %+v; want Cancelled", st)
	}
	e.assertCounts(map[string]int{"defer web-d": 1, "stop web-app": 1, "stop web-s1": 1, "defer dns-d": 1, "stop dns-s": 1})

	e.trigger("d") // for the defer container of finish's delete
	e.finish()
	login.WaitReleased(2, exitTimeout)
}
