package podworker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// fakeMetrics records each measure as a line ("started container",
// "running 3s", ...), and rings the harness, so that a test waits for a
// measure as for any change.
type fakeMetrics struct {
	h *harness

	mu    sync.Mutex
	lines []string
}

func (m *fakeMetrics) add(format string, args ...any) {
	m.mu.Lock()
	m.lines = append(m.lines, fmt.Sprintf(format, args...))
	m.mu.Unlock()
	m.h.ring()
}

func (m *fakeMetrics) WorkerStarted(d time.Duration)            { m.add("worker started %v", d) }
func (m *fakeMetrics) PodRunning(d time.Duration)               { m.add("running %v", d) }
func (m *fakeMetrics) Synced(op SyncOperation, _ time.Duration) { m.add("sync %s", op) }
func (m *fakeMetrics) ContainerStarted(role model.Role)         { m.add("started %s", role) }
func (m *fakeMetrics) ContainerStartFailed(role model.Role, code string) {
	m.add("start failed %s %s", role, code)
}
func (m *fakeMetrics) DeferExited(o DeferOutcome, d time.Duration) { m.add("defer %s %v", o, d) }
func (m *fakeMetrics) PodTerminated(r TerminationReason, o TerminationOutcome, left time.Duration) {
	m.add("terminated %s %s left %v", r, o, left)
}
func (m *fakeMetrics) CheckpointSaved(d time.Duration, err error) {
	m.add("checkpoint %v failed=%v", d, err != nil)
}

// has reports whether every line was recorded (in any order).
func (m *fakeMetrics) has(lines ...string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, l := range lines {
		if !slices.Contains(m.lines, l) {
			return false
		}
	}
	return true
}

// count is how many times line was recorded.
func (m *fakeMetrics) count(line string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, l := range m.lines {
		if l == line {
			n++
		}
	}
	return n
}

func (m *fakeMetrics) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("%q", m.lines)
}

func (h *harness) waitMetrics(m *fakeMetrics, lines ...string) {
	h.t.Helper()
	h.waitFor(fmt.Sprintf("metrics %q", lines), func() bool { return m.has(lines...) })
}

func newMetricsHarness(t *testing.T, wrap func(*fake.Runtime) runtime.Runtime, cp Checkpointer) (*harness, *fakeMetrics) {
	m := &fakeMetrics{}
	h := newHarnessConfig(t, wrap, func(h *harness, cfg *Config) {
		m.h = h
		cfg.Metrics = m
		cfg.Checkpointer = cp
	})
	return h, m
}

// TestMetricsOfAPodsLife: each measure is taken as its event happens — the
// worker taking the pod up, each start by the container's role, the pod's
// first Running phase after its init container ran 3 s, the sync
// operations, the defer container's run, and the end of the termination
// with the grace period left — with the fake clock's durations.
func TestMetricsOfAPodsLife(t *testing.T) {
	h, m := newMetricsHarness(t, func(rt *fake.Runtime) runtime.Runtime { return rt }, nil)
	p := testPod("m1", v1.RestartPolicyAlways, "init:a", "sidecar:s", "main:app", "defer:d")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start a")
	h.waitMetrics(m, "worker started 0s", "sync create", "started init")
	if m.has("running 0s") || m.count("started main") != 0 {
		t.Fatalf("measures before the init container exited: %s", m)
	}

	h.clk.Step(3 * time.Second)
	h.rt.Exit(p.UID, "a", 0)
	h.waitCall("start app")
	h.waitMetrics(m, "sync sync", "started sidecar", "started main", "running 3s")
	h.waitFor("Census of a, s and app started, a exited", func() bool { return h.w.Census() == Census{Pods: 1, Running: 2, Exited: 1} })

	h.kill(p, ptr.To[int64](60))
	h.waitCall("start d")
	h.waitMetrics(m, "sync kill", "started defer")
	h.clk.Step(2 * time.Second)
	h.rt.Exit(p.UID, "d", 0)
	h.waitPhase(p.UID, Terminated)
	h.waitMetrics(m, "defer completed 2s", "terminated Deleted ended_early left 58s")
	h.waitFor("Census of the terminated pod", func() bool { return h.w.Census() == Census{Pods: 0, Running: 0, Exited: 4} })
	for _, line := range []string{"worker started 0s", "running 3s", "started init", "started sidecar", "started main", "started defer", "terminated Deleted ended_early left 58s"} {
		if n := m.count(line); n != 1 {
			t.Errorf("%q recorded %d times, want once: %s", line, n, m)
		}
	}
}

// TestMetricsOfAKillAtTheDeadline: a defer container that ignores its stop
// signal is killed 2 s after the deadline; its run counts as killed, the
// termination as killed at the deadline with no grace left.
func TestMetricsOfAKillAtTheDeadline(t *testing.T) {
	h, m := newMetricsHarness(t, func(rt *fake.Runtime) runtime.Runtime { return rt }, nil)
	h.rt.IgnoreStopSignal("d")
	p := testPod("m2", v1.RestartPolicyAlways, "main:app", "defer:d")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	h.kill(p, ptr.To[int64](10))
	h.waitCall("start d")
	h.step(10 * time.Second)
	h.waitCall("signal d terminated")
	h.step(2 * time.Second)
	h.waitPhase(p.UID, Terminated)
	h.waitMetrics(m, "defer killed 12s", "terminated Deleted killed_at_deadline left 0s")
}

// TestMetricsOfFailedStarts: a start the runtime refuses is a
// RunContainerError, a failed image pull an ErrImagePull, each counted as
// a start too, as the kubelet counts them.
func TestMetricsOfFailedStarts(t *testing.T) {
	var img *fake.ImageRuntime
	h, m := newMetricsHarness(t, func(rt *fake.Runtime) runtime.Runtime {
		img = fake.NewImageRuntime(rt, "busybox")
		return img
	}, nil)
	h.rt.StartHook = func(_ context.Context, ref model.ContainerRef) error {
		if ref.Name == "app" {
			return errors.New("exec format error")
		}
		return nil
	}
	p := testPod("m3", v1.RestartPolicyNever, "main:app")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitMetrics(m, "started main", "start failed main RunContainerError")

	img.PullHook = func(context.Context, string) error { return errors.New("no such image") }
	q := testPod("m4", v1.RestartPolicyNever, "main:web")
	q.Spec.Containers[0].Image = "nginx"
	h.w.UpdatePod(UpdateOptions{Pod: q})
	h.waitMetrics(m, "start failed main ErrImagePull")
	if n := m.count("started main"); n != 2 {
		t.Errorf("started main recorded %d times, want 2 (a refused start, a failed pull): %s", n, m)
	}
}

// steppingCheckpointer takes 5 ms of the fake clock per save, and fails
// while failing is set.
type steppingCheckpointer struct {
	h       *harness
	mu      sync.Mutex
	failing bool
}

func (c *steppingCheckpointer) SaveCheckpoint(types.UID, []byte) error {
	c.h.clk.Step(5 * time.Millisecond)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.failing {
		return errors.New("no space left on device")
	}
	return nil
}

// TestMetricsOfCheckpoints: every checkpoint write is timed, and a failed
// one says so.
func TestMetricsOfCheckpoints(t *testing.T) {
	cp := &steppingCheckpointer{}
	h, m := newMetricsHarness(t, func(rt *fake.Runtime) runtime.Runtime { return rt }, cp)
	cp.h = h
	p := testPod("m5", v1.RestartPolicyAlways, "main:app")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCall("start app")
	h.waitMetrics(m, "checkpoint 5ms failed=false")
	if m.has("checkpoint 5ms failed=true") {
		t.Fatalf("a write that succeeded counted as failed: %s", m)
	}
	cp.mu.Lock()
	cp.failing = true
	cp.mu.Unlock()
	h.kill(p, ptr.To[int64](30))
	h.waitMetrics(m, "checkpoint 5ms failed=true")
}
