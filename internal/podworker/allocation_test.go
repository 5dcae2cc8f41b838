package podworker

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// withCPU is p with its first regular container's cpu request and limit
// set to q, as the resize subresource hands it over.
func withCPU(p *model.Pod, q string) *model.Pod {
	next := &model.Pod{Pod: p.Pod.DeepCopy(), Defer: p.Defer}
	c := &next.Spec.Containers[0]
	c.Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}
	c.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse(q)}
	return next
}

// A resize that waits for room (Deferred) is tried again as soon as
// another pod's resize gives cpu back, not only when a pod terminates
// (the kubelet 1.37's HandlePodReconcile: RetryPendingResizes with
// TriggerReasonPodResized when a pod's requests shrank,
// pkg/kubelet/kubelet.go).
func TestDeferredResizeIsRetriedWhenAnotherPodShrinks(t *testing.T) {
	h := newHarnessConfig(t, func(rt *fake.Runtime) runtime.Runtime { return rt }, func(_ *harness, cfg *Config) {
		cfg.Allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	})
	a := withCPU(testPod("a", v1.RestartPolicyAlways, "main:app"), "600m")
	b := withCPU(testPod("b", v1.RestartPolicyAlways, "main:web"), "400m")
	h.w.UpdatePod(UpdateOptions{Pod: a})
	h.w.UpdatePod(UpdateOptions{Pod: b})
	h.waitCall("start app")
	h.waitCall("start web")

	h.w.UpdatePod(UpdateOptions{Pod: withCPU(b, "500m")})
	h.waitFor("b's resize deferred", func() bool {
		p, _, _ := h.w.PodStatus(b.UID)
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodResizePending && c.Reason == v1.PodReasonDeferred &&
				c.Message == "Node didn't have enough resource: cpu, requested: 500, used: 600, capacity: 1000" {
				return true
			}
		}
		return false
	})

	h.w.UpdatePod(UpdateOptions{Pod: withCPU(a, "300m")})
	h.waitCall("resize app cpu=300m memory=0")
	h.waitCall("resize web cpu=500m memory=0")
	// The worker publishes b's status after the runtime's call returned.
	h.waitFor("b's resize conditions gone once it was applied", func() bool {
		p, _, _ := h.w.PodStatus(b.UID)
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodResizePending || c.Type == v1.PodResizeInProgress {
				return false
			}
		}
		return true
	})
}
