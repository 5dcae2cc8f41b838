package podworker

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/prober"
)

// fakeProber records what the worker asks of it; results are pushed by the
// test through Workers.HandleProbe.
type fakeProber struct {
	mu    sync.Mutex
	calls []string
	ids   map[string]string // container -> last added instance
	ring  func()
}

func (f *fakeProber) AddContainer(pod *model.Pod, ref model.ContainerRef, id string, _ time.Time) {
	f.mu.Lock()
	startup := pod.Container(ref).StartupProbe != nil
	f.calls = append(f.calls, fmt.Sprintf("add %s startup=%t", ref.Name, startup))
	f.ids[ref.Name] = id
	f.mu.Unlock()
	f.ring()
}

func (f *fakeProber) RemoveContainer(_ types.UID, container, _ string) {
	f.mu.Lock()
	f.calls = append(f.calls, "remove "+container)
	f.mu.Unlock()
	f.ring()
}

func (f *fakeProber) RemovePod(types.UID) {
	f.mu.Lock()
	f.calls = append(f.calls, "remove pod")
	f.mu.Unlock()
	f.ring()
}

func (f *fakeProber) id(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ids[name]
}

func (f *fakeProber) called(call string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.calls, call)
}

func newProbeHarness(t *testing.T) (*harness, *fakeProber) {
	h := newHarness(t)
	fp := &fakeProber{ids: map[string]string{}, ring: h.ring}
	h.w.cfg.Prober = fp
	return h, fp
}

func execProbe() *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"check"}}}, PeriodSeconds: 1, FailureThreshold: 3, SuccessThreshold: 1, TimeoutSeconds: 1}
}

func (h *harness) probe(p *model.Pod, fp *fakeProber, container string, kind prober.Kind, healthy, changed bool) {
	h.t.Helper()
	h.w.HandleProbe(prober.Result{PodUID: p.UID, Container: container, ID: fp.id(container), Kind: kind, Healthy: healthy, Changed: changed, Failed: !healthy, Output: "exit code 1"})
}

func TestStartupProbeGatesTheNextInitContainer(t *testing.T) {
	h, fp := newProbeHarness(t)
	p := testPod("pr1", v1.RestartPolicyAlways, "sidecar:proxy", "init:setup", "main:app")
	p.Spec.InitContainers[0].StartupProbe = execProbe()
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitFor("probes added", func() bool { return fp.called("add proxy startup=true") })
	pod, _, _ := h.w.PodStatus(p.UID)
	if st := pod.Status.InitContainerStatuses[0]; *st.Started || st.Ready {
		t.Fatalf("sidecar before its startup probe passed: started=%v ready=%v", *st.Started, st.Ready)
	}
	h.probe(p, fp, "proxy", prober.Startup, false, false) // a failed attempt below the threshold
	h.waitEvent(p.UID, "Unhealthy")
	if slices.Contains(h.rt.Calls(), "start setup") {
		t.Fatal("the next init container started before the sidecar's startup probe passed")
	}
	h.probe(p, fp, "proxy", prober.Startup, true, true)
	h.waitCall("start setup")
}

func TestReadinessDrivesReadyConditions(t *testing.T) {
	h, fp := newProbeHarness(t)
	p := testPod("pr2", v1.RestartPolicyAlways, "sidecar:proxy", "main:app")
	p.Spec.InitContainers[0].ReadinessProbe = execProbe()
	p.Spec.Containers[0].ReadinessProbe = execProbe()
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitFor("probes added", func() bool { return fp.called("add app startup=false") })
	ready := func() (v1.ConditionStatus, bool, bool) {
		pod, _, _ := h.w.PodStatus(p.UID)
		for _, c := range pod.Status.Conditions {
			if c.Type == v1.PodReady {
				return c.Status, pod.Status.InitContainerStatuses[0].Ready, pod.Status.ContainerStatuses[0].Ready
			}
		}
		return "", false, false
	}
	if cond, _, app := ready(); cond != v1.ConditionFalse || app {
		t.Fatalf("ready before any readiness success: %s app=%v", cond, app)
	}
	h.probe(p, fp, "app", prober.Readiness, true, true)
	h.waitFor("app ready", func() bool { _, _, app := ready(); return app })
	if cond, _, _ := ready(); cond != v1.ConditionFalse {
		t.Fatal("the pod is Ready while its sidecar is not: sidecar readiness counts")
	}
	h.probe(p, fp, "proxy", prober.Readiness, true, true)
	h.waitFor("pod Ready", func() bool { cond, _, _ := ready(); return cond == v1.ConditionTrue })
	h.probe(p, fp, "app", prober.Readiness, false, true)
	h.waitFor("pod not Ready", func() bool { cond, _, _ := ready(); return cond == v1.ConditionFalse })
	h.probe(p, fp, "app", prober.Readiness, true, true)
	h.waitFor("pod Ready again", func() bool { cond, _, _ := ready(); return cond == v1.ConditionTrue })

	// Terminating: probes stop and readiness goes false first.
	h.kill(p, nil)
	h.waitFor("probes removed", func() bool { return fp.called("remove pod") })
	h.waitFor("not ready while terminating", func() bool { cond, _, app := ready(); return cond == v1.ConditionFalse && !app })
}

func TestLivenessFailureRestartsTheContainer(t *testing.T) {
	h, fp := newProbeHarness(t)
	p := testPod("pr3", v1.RestartPolicyAlways, "main:app")
	probe := execProbe()
	probe.TerminationGracePeriodSeconds = ptr.To[int64](5)
	p.Spec.Containers[0].LivenessProbe = probe
	p.Spec.Containers[0].Lifecycle = nil
	h.rt.IgnoreStopSignal("app")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitFor("probes added", func() bool { return fp.called("add app startup=false") })
	h.probe(p, fp, "app", prober.Liveness, false, false)
	h.probe(p, fp, "app", prober.Liveness, false, false)
	h.probe(p, fp, "app", prober.Liveness, false, true) // the third failure
	h.waitCall("signal app terminated")
	e := h.waitEvent(p.UID, "Killing")
	if !strings.Contains(e.Message, "failed liveness probe, will be restarted") {
		t.Errorf("Killing message %q", e.Message)
	}
	if n := countEvents(h.rec.List(p.UID), "Unhealthy"); n != 3 {
		t.Errorf("Unhealthy events = %d, want 3", n)
	}
	h.step(5 * time.Second) // the probe's own grace period, not the pod's 60 s
	h.waitCall("signal app killed")
	h.waitFor("restart", func() bool {
		pod, _, _ := h.w.PodStatus(p.UID)
		return pod.Status.ContainerStatuses[0].RestartCount == 1
	})
	if n := count(h.rt.Calls(), "start app"); n != 2 {
		t.Errorf("app started %d times, want 2", n)
	}
	if !fp.called("remove app") {
		t.Error("the failed instance's probes were not removed")
	}
}
