package prober

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestInitialDelayAndPeriod(t *testing.T) {
	t.Run("from start", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("p", v1.Container{Name: "app", LivenessProbe: execProbe("live", delay(5), period(2))})
		h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
		h.settle()
		want := []struct {
			step time.Duration
			runs int
		}{
			{0, 0}, {4 * time.Second, 0}, {time.Second, 1}, {time.Second, 1}, {time.Second, 2},
			{time.Second, 2}, {time.Second, 3}, {10 * time.Second, 4},
		}
		elapsed := time.Duration(0)
		for _, w := range want {
			h.step(w.step)
			elapsed += w.step
			if got := h.ex.count("live"); got != w.runs {
				t.Fatalf("after %v: %d attempts, want %d", elapsed, got, w.runs)
			}
		}
		h.expect() // successes of a healthy liveness probe report nothing
	})
	t.Run("started long ago", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("p", v1.Container{Name: "app", LivenessProbe: execProbe("live", delay(5), period(2))})
		h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now().Add(-time.Minute))
		h.settle()
		if got := h.ex.count("live"); got != 1 {
			t.Fatalf("%d attempts at once, want 1", got)
		}
		h.step(time.Second)
		h.step(time.Second)
		if got := h.ex.count("live"); got != 2 {
			t.Fatalf("%d attempts after a period, want 2", got)
		}
	})
}

func TestLivenessFailureThreshold(t *testing.T) {
	h := newHarness(t)
	h.ex.set("live", 1)
	pod := newPod("p", v1.Container{Name: "app", LivenessProbe: execProbe("live", failureAfter(3))})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	h.settle()
	failing := Result{PodUID: "p", Container: "app", ID: "c1", Kind: Liveness, Healthy: true, Failed: true}
	got := h.expect(failing)
	if got[0].Output != "failing live" {
		t.Errorf("Output = %q, want the command's output", got[0].Output)
	}
	h.step(time.Second)
	h.expect(failing)
	h.step(time.Second)
	h.expect(Result{PodUID: "p", Container: "app", ID: "c1", Kind: Liveness, Healthy: false, Changed: true, Failed: true})

	// On hold until a new instance: the worker kills this one.
	for range 3 {
		h.step(time.Second)
	}
	if got := h.ex.count("live"); got != 3 {
		t.Errorf("%d attempts, want 3: a failed liveness probe stops", got)
	}
	h.expect()

	// A new instance starts over, healthy.
	h.m.AddContainer(pod, ref(pod, 0), "c2", h.clk.Now())
	h.settle()
	h.expect(Result{Container: "app", ID: "c2", Kind: Liveness, Healthy: true, Failed: true})
}

func TestReadiness(t *testing.T) {
	t.Run("flips both ways", func(t *testing.T) {
		h := newHarness(t)
		h.ex.set("ready", 1)
		pod := newPod("p", v1.Container{Name: "app", ReadinessProbe: execProbe("ready", failureAfter(2))})
		h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
		h.settle()
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: false, Failed: true})

		h.ex.set("ready", 0)
		h.step(time.Second)
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: true, Changed: true})
		h.step(time.Second)
		h.expect() // still ready: nothing to say

		h.ex.set("ready", 1)
		h.step(time.Second)
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: true, Failed: true})
		h.step(time.Second)
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: false, Changed: true, Failed: true})
		h.step(time.Second)
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: false, Failed: true})

		h.ex.set("ready", 0)
		h.step(time.Second)
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: true, Changed: true})
		if got := h.ex.count("ready"); got != 7 {
			t.Errorf("%d attempts, want 7: readiness keeps probing", got)
		}
	})
	t.Run("success threshold", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("p", v1.Container{Name: "app", ReadinessProbe: execProbe("ready", successAfter(3))})
		h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
		h.settle()
		h.step(time.Second)
		h.expect()
		h.step(time.Second)
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: true, Changed: true})
	})
}

func TestStartupGatesLivenessAndReadiness(t *testing.T) {
	h := newHarness(t)
	h.ex.set("start", 1)
	pod := newPod("p", v1.Container{
		Name:           "app",
		StartupProbe:   execProbe("start", failureAfter(10)),
		LivenessProbe:  execProbe("live"),
		ReadinessProbe: execProbe("ready"),
	})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	h.settle()
	h.expect(Result{Container: "app", Kind: Startup, Healthy: true, Failed: true})
	h.step(time.Second)
	h.expect(Result{Container: "app", Kind: Startup, Healthy: true, Failed: true})
	if live, ready := h.ex.count("live"), h.ex.count("ready"); live != 0 || ready != 0 {
		t.Fatalf("liveness ran %d times, readiness %d times before the startup probe succeeded", live, ready)
	}

	h.ex.set("start", 0)
	h.step(time.Second)
	// Started, then — at once, since their initial delay has passed —
	// readiness and liveness; the startup report comes first.
	h.expect(
		Result{Container: "app", Kind: Startup, Healthy: true, Changed: true},
		Result{Container: "app", Kind: Readiness, Healthy: true, Changed: true},
	)
	if live := h.ex.count("live"); live != 1 {
		t.Errorf("liveness ran %d times right after startup, want 1", live)
	}
	for range 3 {
		h.step(time.Second)
	}
	if start, live, ready := h.ex.count("start"), h.ex.count("live"), h.ex.count("ready"); start != 3 || live != 4 || ready != 4 {
		t.Errorf("attempts: startup %d, liveness %d, readiness %d; want 3 (it stops), 4, 4", start, live, ready)
	}
}

func TestStartupGateKeepsInitialDelay(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p", v1.Container{
		Name:          "app",
		StartupProbe:  execProbe("start"),
		LivenessProbe: execProbe("live", delay(3)),
	})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	h.settle()
	h.expect(Result{Container: "app", Kind: Startup, Healthy: true, Changed: true})
	h.step(2 * time.Second)
	if live := h.ex.count("live"); live != 0 {
		t.Fatalf("liveness ran %d times before its initial delay", live)
	}
	h.step(time.Second)
	if live := h.ex.count("live"); live != 1 {
		t.Fatalf("liveness ran %d times at its initial delay, want 1", live)
	}
}

func TestStartupFailure(t *testing.T) {
	h := newHarness(t)
	h.ex.set("start", 1)
	pod := newPod("p", v1.Container{
		Name:           "app",
		StartupProbe:   execProbe("start", failureAfter(2)),
		LivenessProbe:  execProbe("live"),
		ReadinessProbe: execProbe("ready"),
	})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	h.settle()
	h.expect(Result{Container: "app", Kind: Startup, Healthy: true, Failed: true})
	h.step(time.Second)
	h.expect(Result{Container: "app", Kind: Startup, Healthy: false, Changed: true, Failed: true})
	for range 3 {
		h.step(time.Second)
	}
	if start, live, ready := h.ex.count("start"), h.ex.count("live"), h.ex.count("ready"); start != 2 || live != 0 || ready != 0 {
		t.Errorf("attempts: startup %d, liveness %d, readiness %d; want 2, 0, 0", start, live, ready)
	}
	h.expect()
}

func TestTimeout(t *testing.T) {
	h := newHarness(t)
	h.ex.block("hang")
	pod := newPod("p", v1.Container{Name: "app", LivenessProbe: execProbe("hang", timeout(2), period(10), failureAfter(1))})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	<-h.ex.started
	idle := func() bool { return h.m.schedulerIdle(h.clk.Now()) }
	h.waitFor("the scheduler to sleep", idle)
	h.clk.Step(time.Second)
	h.waitFor("the scheduler to sleep", idle)
	select {
	case c := <-h.ex.ended:
		t.Fatalf("the attempt ended after 1s of its 2s timeout: %v", c.cancelled)
	default:
	}
	h.clk.Step(time.Second)
	if c := <-h.ex.ended; !errors.Is(c.cancelled, errTimeout) {
		t.Errorf("the attempt ended with %v, want a timeout", c.cancelled)
	}
	h.settle()
	got := h.expect(Result{Container: "app", Kind: Liveness, Healthy: false, Changed: true, Failed: true})
	if want := `command "hang" timed out after 2s`; got[0].Output != want {
		t.Errorf("Output = %q, want %q", got[0].Output, want)
	}
}

func TestTimedOutProbeRunsAgainAtItsPeriod(t *testing.T) {
	h := newHarness(t)
	h.ex.block("hang")
	pod := newPod("p", v1.Container{Name: "app", ReadinessProbe: execProbe("hang", timeout(3), period(5))})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	<-h.ex.started
	idle := func() bool { return h.m.schedulerIdle(h.clk.Now()) }
	h.waitFor("the scheduler to sleep", idle)
	h.clk.Step(3 * time.Second)
	<-h.ex.ended
	h.settle()
	h.expect(Result{Container: "app", Kind: Readiness, Healthy: false, Failed: true})
	h.clk.Step(time.Second)
	h.settle()
	if n := h.ex.count("hang"); n != 1 {
		t.Fatalf("%d attempts 4s in, want 1", n)
	}
	h.clk.Step(time.Second)
	<-h.ex.started // at 5s: the next period
}

func TestRemoveContainer(t *testing.T) {
	h := newHarness(t)
	h.ex.set("a", 1)
	h.ex.set("b", 1)
	pod := newPod("p",
		v1.Container{Name: "a", LivenessProbe: execProbe("a", failureAfter(100))},
		v1.Container{Name: "b", LivenessProbe: execProbe("b", failureAfter(100))},
	)
	h.m.AddContainer(pod, ref(pod, 0), "ca", h.clk.Now())
	h.m.AddContainer(pod, ref(pod, 1), "cb", h.clk.Now())
	h.settle()
	h.m.RemoveContainer("p", "a", "other-instance") // not the probed one: nothing happens
	h.step(time.Second)
	if a, b := h.ex.count("a"), h.ex.count("b"); a != 2 || b != 2 {
		t.Fatalf("attempts a %d, b %d; want 2, 2", a, b)
	}
	h.drain()

	h.m.RemoveContainer("p", "a", "ca")
	h.m.RemoveContainer("p", "a", "ca") // idempotent
	h.step(time.Second)
	h.step(time.Second)
	if a, b := h.ex.count("a"), h.ex.count("b"); a != 2 || b != 4 {
		t.Fatalf("attempts a %d, b %d; want 2 (removed), 4", a, b)
	}
	for _, r := range h.drain() {
		if r.Container != "b" {
			t.Errorf("report of a removed container: %+v", r)
		}
	}
}

func TestRemovePod(t *testing.T) {
	h := newHarness(t)
	p1 := newPod("p1",
		v1.Container{Name: "a", LivenessProbe: execProbe("a")},
		v1.Container{Name: "b", ReadinessProbe: execProbe("b")},
	)
	p2 := newPod("p2", v1.Container{Name: "c", LivenessProbe: execProbe("c")})
	h.m.AddContainer(p1, ref(p1, 0), "ca", h.clk.Now())
	h.m.AddContainer(p1, ref(p1, 1), "cb", h.clk.Now())
	h.m.AddContainer(p2, ref(p2, 0), "cc", h.clk.Now())
	h.settle()
	h.m.RemovePod("p1")
	h.m.RemovePod("p1")
	h.step(time.Second)
	h.step(time.Second)
	if a, b, c := h.ex.count("a"), h.ex.count("b"), h.ex.count("c"); a != 1 || b != 1 || c != 3 {
		t.Errorf("attempts a %d, b %d, c %d; want 1, 1, 3", a, b, c)
	}
}

func TestRemoveCancelsRunningAttempt(t *testing.T) {
	for name, remove := range map[string]func(m *Manager){
		"container": func(m *Manager) { m.RemoveContainer("p", "app", "c1") },
		"pod":       func(m *Manager) { m.RemovePod("p") },
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t)
			h.ex.block("hang")
			pod := newPod("p", v1.Container{Name: "app", LivenessProbe: execProbe("hang", timeout(30), failureAfter(1))})
			h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
			<-h.ex.started
			remove(h.m)
			if c := <-h.ex.ended; !errors.Is(c.cancelled, errRemoved) {
				t.Errorf("the attempt ended with %v, want errRemoved", c.cancelled)
			}
			h.step(time.Minute)
			h.expect()
			if n := h.ex.count("hang"); n != 1 {
				t.Errorf("%d attempts, want 1", n)
			}
		})
	}
}

func TestAddContainer(t *testing.T) {
	h := newHarness(t)
	h.ex.set("live", 1)
	pod := newPod("p", v1.Container{Name: "app", LivenessProbe: execProbe("live", period(10))})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now()) // idempotent
	h.settle()
	if n := h.ex.count("live"); n != 1 {
		t.Fatalf("%d attempts, want 1", n)
	}
	h.expect(Result{PodUID: "p", Container: "app", ID: "c1", Kind: Liveness, Healthy: true, Failed: true})

	// A new instance replaces the old one.
	h.m.AddContainer(pod, ref(pod, 0), "c2", h.clk.Now())
	h.settle()
	h.step(10 * time.Second)
	if n := h.ex.count("live"); n != 3 {
		t.Fatalf("%d attempts, want 3", n)
	}
	h.expect(
		Result{PodUID: "p", Container: "app", ID: "c2", Kind: Liveness, Healthy: true, Failed: true},
		Result{PodUID: "p", Container: "app", ID: "c2", Kind: Liveness, Healthy: true, Failed: true},
	)

	// Containers without probes, or that the pod lacks, are ignored.
	bare := newPod("q", v1.Container{Name: "bare"})
	h.m.AddContainer(bare, ref(bare, 0), "c3", h.clk.Now())
	h.m.AddContainer(bare, ref(pod, 0), "c4", h.clk.Now())
	h.settle()
	if n := len(h.ex.calls); n != 3 {
		t.Errorf("%d attempts in all, want 3", n)
	}
}

func TestExecProbeGetsPodAndContainer(t *testing.T) {
	h := newHarness(t)
	pod := newPod("p",
		v1.Container{Name: "first"},
		v1.Container{Name: "app", LivenessProbe: execProbe("live")},
	)
	pod.Spec.Containers[1].LivenessProbe.Exec.Command = []string{"live", "--check"}
	h.m.AddContainer(pod, ref(pod, 1), "c1", h.clk.Now())
	c := <-h.ex.started
	if c.pod != "p" || c.ref != ref(pod, 1) || strings.Join(c.cmd, " ") != "live --check" {
		t.Errorf("exec call = %+v", c)
	}
}

// TestManyProbesFewWorkers runs more due probes than workers: the backlog
// drains, every probe runs once per period.
func TestManyProbesFewWorkers(t *testing.T) {
	h := newHarness(t) // 4 workers
	const n = 50
	for i := range n {
		pod := newPod("p"+strconv.Itoa(i), v1.Container{Name: "app", LivenessProbe: execProbe("live"), ReadinessProbe: execProbe("ready")})
		h.m.AddContainer(pod, ref(pod, 0), "c", h.clk.Now())
	}
	h.settle()
	for range 3 {
		h.step(time.Second)
	}
	if live, ready := h.ex.count("live"), h.ex.count("ready"); live != 4*n || ready != 4*n {
		t.Errorf("attempts: liveness %d, readiness %d; want %d each", live, ready, 4*n)
	}
	if got := len(h.drain()); got != n {
		t.Errorf("%d reports, want %d (each readiness probe turning ready)", got, n)
	}
}

func TestHTTPProbe(t *testing.T) {
	var (
		mu      sync.Mutex
		status  = http.StatusOK
		headers []http.Header
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		headers = append(headers, r.Header.Clone())
		w.WriteHeader(status)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	port, _ := strconv.Atoi(u.Port())

	h := newHarness(t)
	pod := newPod("p", v1.Container{
		Name:  "web",
		Ports: []v1.ContainerPort{{Name: "http", ContainerPort: int32(port)}},
		ReadinessProbe: &v1.Probe{
			ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{
				Path: "/healthz", Port: intstr.FromString("http"),
				HTTPHeaders: []v1.HTTPHeader{{Name: "X-Probe", Value: "yes"}},
			}},
			TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
		},
	})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	h.settle()
	h.expect(Result{Container: "web", Kind: Readiness, Healthy: true, Changed: true})

	mu.Lock()
	status = http.StatusInternalServerError
	mu.Unlock()
	h.step(time.Second)
	got := h.expect(Result{Container: "web", Kind: Readiness, Healthy: false, Changed: true, Failed: true})
	if want := "GET " + srv.URL + "/healthz returned HTTP 500"; got[0].Output != want {
		t.Errorf("Output = %q, want %q", got[0].Output, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(headers) != 2 || headers[0].Get("X-Probe") != "yes" || !strings.HasPrefix(headers[0].Get("User-Agent"), "kube-probe/") {
		t.Errorf("requests' headers = %v", headers)
	}
}

func TestRunEndCancelsAttempts(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	ex := newFakeExecer()
	ex.block("hang")
	results := make(chan Result, 10)
	m := New(Config{Execer: ex, Clock: clk, Report: func(r Result) { results <- r }})
	pod := newPod("p", v1.Container{Name: "app", LivenessProbe: execProbe("hang", timeout(30), failureAfter(1))})
	m.AddContainer(pod, ref(pod, 0), "c1", clk.Now()) // before Run: starts with it
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	<-ex.started
	cancel()
	<-done
	if c := <-ex.ended; !errors.Is(c.cancelled, errStopped) {
		t.Errorf("the attempt ended with %v, want errStopped", c.cancelled)
	}
	select {
	case r := <-results:
		t.Errorf("report after Run ended: %+v", r)
	default:
	}
	m.Run(context.Background()) // a second Run returns at once
}

// An instance resumed ready after an agent restart (ResumeContainer) stays
// ready through successes and through failures below the threshold: no
// Result changes its verdict until failureThreshold failures in a row, as
// for an instance that had become ready under this agent. Resumed unready,
// it is AddContainer: the first success makes it ready.
func TestResumeContainerKeepsReadiness(t *testing.T) {
	t.Run("ready", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("p", v1.Container{Name: "app", ReadinessProbe: execProbe("ready", failureAfter(2))})
		h.m.ResumeContainer(pod, ref(pod, 0), "c1", h.clk.Now().Add(-time.Hour), true)
		h.settle()
		h.expect() // a success of a ready instance: nothing to say

		h.ex.set("ready", 1)
		h.step(time.Second)
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: true, Failed: true})
		h.step(time.Second)
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: false, Changed: true, Failed: true})
	})
	t.Run("unready", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("p", v1.Container{Name: "app", ReadinessProbe: execProbe("ready")})
		h.m.ResumeContainer(pod, ref(pod, 0), "c1", h.clk.Now().Add(-time.Hour), false)
		h.settle()
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: true, Changed: true})
	})
}
