package podworker

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// newImageHarness is a harness whose runtime has images; present are there
// from the start.
func newImageHarness(t *testing.T, present ...string) (*harness, *fake.ImageRuntime) {
	t.Helper()
	var ir *fake.ImageRuntime
	h := newHarnessWith(t, func(rt *fake.Runtime) runtime.Runtime {
		ir = fake.NewImageRuntime(rt, present...)
		return ir
	})
	return h, ir
}

// eventMessages lists "Reason: message" of a pod's events, in order.
func (h *harness) eventMessages(uid types.UID) []string {
	var out []string
	for _, e := range h.rec.List(uid) {
		out = append(out, e.Reason+": "+e.Message)
	}
	return out
}

func (h *harness) waitEventMessage(uid types.UID, reason, contains string) {
	h.t.Helper()
	h.waitFor("event "+reason+" "+contains, func() bool {
		for _, e := range h.rec.List(uid) {
			if e.Reason == reason && strings.Contains(e.Message, contains) {
				return true
			}
		}
		return false
	})
}

func waitingReason(h *harness, uid types.UID, name string) string {
	st, _, _ := h.w.PodStatus(uid)
	if st == nil {
		return ""
	}
	for _, cs := range append(append([]v1.ContainerStatus{}, st.Status.InitContainerStatuses...), st.Status.ContainerStatuses...) {
		if cs.Name == name && cs.State.Waiting != nil {
			return cs.State.Waiting.Reason
		}
	}
	return ""
}

func TestImagePulledBeforeStart(t *testing.T) {
	h, ir := newImageHarness(t)
	p := testPod("img1", v1.RestartPolicyNever, "main:app")
	p.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCalls("prepare", "pull busybox", "start app")
	h.waitEvent(p.UID, "Started") // emitted once the start returned
	msgs := h.eventMessages(p.UID)
	pulling := slices.Index(msgs, `Pulling: Pulling image "busybox"`)
	pulled := slices.IndexFunc(msgs, func(m string) bool {
		return strings.HasPrefix(m, `Pulled: Successfully pulled image "busybox" in 10ms. Image size: 1048576 bytes.`)
	})
	started := slices.Index(msgs, "Started: Started container app")
	if pulling < 0 || pulled < pulling || started < pulled {
		t.Fatalf("want Pulling, Pulled, Started in order; events: %q", msgs)
	}
	h.waitFor("imageID", func() bool {
		st, _, _ := h.w.PodStatus(p.UID)
		return st != nil && st.Status.ContainerStatuses[0].ImageID != ""
	})
	if got := ir.Pulls(); !slices.Equal(got, []string{"busybox"}) {
		t.Fatalf("pulls = %q", got)
	}
}

func TestImagePresentIsNotPulled(t *testing.T) {
	h, _ := newImageHarness(t, "busybox")
	p := testPod("img2", v1.RestartPolicyNever, "main:app")
	p.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCalls("prepare", "start app")
	h.waitEventMessage(p.UID, "Pulled", `Container image "busybox" already present on machine`)
}

func TestImagePullAlwaysPullsPresentImage(t *testing.T) {
	h, _ := newImageHarness(t, "busybox")
	p := testPod("img3", v1.RestartPolicyNever, "main:app")
	p.Spec.Containers[0].ImagePullPolicy = v1.PullAlways
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCalls("prepare", "pull busybox", "start app")
}

func TestImagePullFailureBacksOff(t *testing.T) {
	h, ir := newImageHarness(t)
	var mu sync.Mutex
	fail := true
	ir.PullHook = func(ctx context.Context, image string) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errors.New("manifest unknown")
		}
		return nil
	}
	p := testPod("img4", v1.RestartPolicyNever, "main:app")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCalls("prepare", "pull busybox")
	h.waitEventMessage(p.UID, "Failed", `Failed to pull image "busybox": manifest unknown`)
	h.waitEventMessage(p.UID, "Failed", "Error: ErrImagePull")
	h.waitFor("ErrImagePull", func() bool { return waitingReason(h, p.UID, "app") == "ErrImagePull" })

	// A second later the wait shows as a backoff...
	h.step(imageBackOffShownAfter)
	h.waitEventMessage(p.UID, "BackOff", `Back-off pulling image "busybox"`)
	h.waitEventMessage(p.UID, "Failed", "Error: ImagePullBackOff")
	h.waitFor("ImagePullBackOff", func() bool { return waitingReason(h, p.UID, "app") == "ImagePullBackOff" })
	if got := h.rt.Calls(); !slices.Equal(got, []string{"prepare", "pull busybox"}) {
		t.Fatalf("pulled again during the backoff: %q", got)
	}
	// ... and at its end (10 s after the failure) the pull is tried again.
	h.step(9 * time.Second)
	h.waitCalls("prepare", "pull busybox", "pull busybox")
	h.waitFor("ErrImagePull again", func() bool { return waitingReason(h, p.UID, "app") == "ErrImagePull" })
	// The second backoff is twice as long.
	h.step(imageBackOffShownAfter)
	h.waitFor("ImagePullBackOff again", func() bool { return waitingReason(h, p.UID, "app") == "ImagePullBackOff" })
	mu.Lock()
	fail = false
	mu.Unlock()
	h.step(19 * time.Second)
	h.waitCalls("prepare", "pull busybox", "pull busybox", "pull busybox", "start app")
}

func TestImageNeverPullPolicy(t *testing.T) {
	h, _ := newImageHarness(t)
	p := testPod("img5", v1.RestartPolicyNever, "main:app")
	p.Spec.Containers[0].ImagePullPolicy = v1.PullNever
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitEventMessage(p.UID, "ErrImageNeverPull", `container image "busybox" is not present with pull policy of Never`)
	h.waitFor("ErrImageNeverPull", func() bool { return waitingReason(h, p.UID, "app") == "ErrImageNeverPull" })
	if got := h.rt.Calls(); !slices.Equal(got, []string{"prepare"}) {
		t.Fatalf("calls = %q, want no pull and no start", got)
	}
}

// A delete while an image is being pulled cancels the pull, and nothing of
// the pod starts afterwards.
func TestKillDuringPullStartsNothing(t *testing.T) {
	h, ir := newImageHarness(t)
	ir.PullHook = func(ctx context.Context, image string) error {
		<-ctx.Done()
		return ctx.Err()
	}
	p := testPod("img6", v1.RestartPolicyAlways, "main:app", "defer:d")
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCalls("prepare", "pull busybox")
	h.kill(p, nil)
	h.waitPhase(p.UID, Terminated)
	for _, c := range h.rt.Calls() {
		if strings.HasPrefix(c, "start ") {
			t.Fatalf("started %q after a kill during the pull; calls: %q", c, h.rt.Calls())
		}
	}
}

// Once the pod runs, the defer containers' images are pulled in the
// background; at termination the defer containers start without a pull.
func TestDeferImagesPrePulled(t *testing.T) {
	h, ir := newImageHarness(t, "busybox")
	p := testPod("img7", v1.RestartPolicyAlways, "main:app", "defer:d1", "defer:d2")
	p.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	p.Defer[0].Image, p.Defer[0].ImagePullPolicy = "cleanup:1", v1.PullIfNotPresent
	p.Defer[1].Image, p.Defer[1].ImagePullPolicy = "notify:latest", v1.PullAlways
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitEventMessage(p.UID, "Pulled", `Successfully pulled image "notify:latest"`)
	msgs := h.eventMessages(p.UID)
	for _, want := range []string{
		`Pulling: Pulling image "cleanup:1" (defer-container pre-pull for d1)`,
		`Pulling: Pulling image "notify:latest" (defer-container pre-pull for d2)`,
	} {
		if !slices.Contains(msgs, want) {
			t.Fatalf("missing %q in %q", want, msgs)
		}
	}
	if got := ir.Pulls(); !slices.Equal(got, []string{"cleanup:1", "notify:latest"}) {
		t.Fatalf("pulls = %q", got)
	}
	// The pre-pull's end closes prePullDone after its last event, and
	// may change nothing else the harness watches: wait on it.
	h.w.mu.Lock()
	pw := h.w.pods[p.UID]
	h.w.mu.Unlock()
	select {
	case <-pw.prePull.done:
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for the pre-pull's end; calls: %q", h.rt.Calls())
	}

	h.kill(p, nil)
	h.waitCall("start d1")
	h.rt.Exit(p.UID, "d1", 0)
	h.waitCall("start d2")
	if got := ir.Pulls(); len(got) != 2 {
		t.Fatalf("defer containers pulled again at termination: %q", got)
	}
}

// A pre-pull that failed is retried when the defer container starts.
func TestDeferPrePullFailureRetriedAtTermination(t *testing.T) {
	h, ir := newImageHarness(t, "busybox")
	var mu sync.Mutex
	fail := true
	ir.PullHook = func(ctx context.Context, image string) error {
		mu.Lock()
		defer mu.Unlock()
		if fail {
			return errors.New("registry unavailable")
		}
		return nil
	}
	p := testPod("img8", v1.RestartPolicyAlways, "main:app", "defer:d1")
	p.Spec.Containers[0].ImagePullPolicy = v1.PullIfNotPresent
	p.Defer[0].Image, p.Defer[0].ImagePullPolicy = "cleanup:1", v1.PullIfNotPresent
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitEventMessage(p.UID, "Failed", `Failed to pull image "cleanup:1" (defer-container pre-pull for d1): registry unavailable`)
	mu.Lock()
	fail = false
	mu.Unlock()
	h.kill(p, nil)
	h.waitCall("start d1")
	if got := ir.Pulls(); !slices.Equal(got, []string{"cleanup:1"}) {
		t.Fatalf("pulls = %q, want the pull at termination", got)
	}
	calls := h.rt.Calls()
	if i, j := slices.Index(calls, "pull cleanup:1"), slices.Index(calls, "start d1"); i < 0 || j < i {
		t.Fatalf("calls = %q", calls)
	}
}

// stopRuntime records graceful stops, like the CRI runtime's StopContainer.
type stopRuntime struct {
	*fake.Runtime
	mu    sync.Mutex
	stops []time.Duration
}

func (r *stopRuntime) StopContainer(ctx context.Context, id string, sig syscall.Signal, timeout time.Duration) error {
	r.mu.Lock()
	r.stops = append(r.stops, timeout)
	r.mu.Unlock()
	return r.Signal(ctx, id, sig)
}

// A runtime that stops containers itself is given the time left until the
// deadline, so that it kills on time even without the agent.
func TestGracefulStopperGetsTimeToDeadline(t *testing.T) {
	var sr *stopRuntime
	h := newHarnessWith(t, func(rt *fake.Runtime) runtime.Runtime {
		sr = &stopRuntime{Runtime: rt}
		return sr
	})
	p := testPod("img9", v1.RestartPolicyAlways, "main:app")
	p.Spec.Containers[0].Lifecycle = nil
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitCalls("prepare", "start app")
	h.kill(p, nil)
	h.waitPhase(p.UID, Terminated)
	sr.mu.Lock()
	defer sr.mu.Unlock()
	if !slices.Equal(sr.stops, []time.Duration{60 * time.Second}) {
		t.Fatalf("stops = %v, want one with the 60 s grace period", sr.stops)
	}
}

// A runtime that stops containers itself never gets less than the
// kubelet's 2 s minimum after the signal (kubelet 1.37,
// pkg/kubelet/kuberuntime/kuberuntime_container.go, killContainer:
// StopContainer's timeout is at least minimumGracePeriodInSeconds), even
// when the grace period is shorter: here 1 s, and 0.
func TestGracefulStopperGetsTheMinimum(t *testing.T) {
	for name, grace := range map[string]int64{"grace 1": 1, "grace 0": 0} {
		t.Run(name, func(t *testing.T) {
			var sr *stopRuntime
			h := newHarnessWith(t, func(rt *fake.Runtime) runtime.Runtime {
				sr = &stopRuntime{Runtime: rt}
				return sr
			})
			p := testPod("img10", v1.RestartPolicyAlways, "main:app")
			p.Spec.Containers[0].Lifecycle = nil
			h.w.UpdatePod(UpdateOptions{Pod: p})
			h.waitCalls("prepare", "start app")
			h.kill(p, &grace)
			h.waitPhase(p.UID, Terminated)
			sr.mu.Lock()
			defer sr.mu.Unlock()
			if !slices.Equal(sr.stops, []time.Duration{2 * time.Second}) {
				t.Fatalf("stops = %v, want one with the 2 s minimum", sr.stops)
			}
		})
	}
}

// A pod stays Pending while one of its regular containers has not started
// for the first time, even though another runs: the kubelet's getPhase
// (pkg/kubelet/kubelet_pods.go) counts a container waiting without a last
// termination as pending. Its QoS class is published too (kubelet_pods.go,
// convertStatusToAPIStatus: v1qos.GetPodQOS).
func TestPendingWhileARegularContainerWaitsForItsImage(t *testing.T) {
	h, ir := newImageHarness(t, "busybox")
	ir.PullHook = func(ctx context.Context, image string) error {
		if image == "missing:1" {
			return errors.New("manifest unknown")
		}
		return nil
	}
	p := testPod("img9", v1.RestartPolicyAlways, "main:app", "main:late")
	p.Spec.Containers[1].Image = "missing:1"
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Resources = v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")},
		}
	}
	h.w.UpdatePod(UpdateOptions{Pod: p})
	h.waitFor("app running, late ErrImagePull", func() bool {
		st, _, _ := h.w.PodStatus(p.UID)
		return st != nil && len(st.Status.ContainerStatuses) == 2 && st.Status.ContainerStatuses[0].State.Running != nil &&
			waitingReason(h, p.UID, "late") == "ErrImagePull"
	})
	st, _, _ := h.w.PodStatus(p.UID)
	if st.Status.Phase != v1.PodPending {
		t.Errorf("phase %s while late never started, want Pending", st.Status.Phase)
	}
	if st.Status.QOSClass != v1.PodQOSBurstable {
		t.Errorf("qosClass %q, want Burstable", st.Status.QOSClass)
	}
}
