package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/test/internal/bintest"
)

// hogPod is a pod named %s that requests %d millicpus.
const hogPod = `
apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: hog
    image: busybox
    command: ["sleep", "3600"]
    resources:
      requests:
        cpu: %dm
`

const resizeTarget = `
apiVersion: v1
kind: Pod
metadata:
  name: resize-target
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox
    command: ["sleep", "3600"]
    resources:
      requests:
        cpu: 100m
      limits:
        memory: 32Mi
`

// TestKubectlResize: kubectl patch --subresource resize (KEP-1287, GA in
// the v1.37 API server) changes a running container's resources; the node
// sees the pod update, applies them without a restart and reports them in
// status.containerStatuses[].resources, as the kubelet does
// (pkg/kubelet/kubelet.go, the allocation manager and
// handlePodResourcesResize). A resize that would change the QoS class is
// the API server's to refuse. On both runtimes.
func TestKubectlResize(t *testing.T) {
	c := needControlPlane(t)
	bintest.EachRuntime(t, func(t *testing.T, rt bintest.Runtime) {
		n := startNode(t, c, nodeName(t, "a"), rt.Args...)
		pod := "resize-" + rt.Name
		n.apply(t, strings.Replace(resizeTarget, "name: resize-target", "name: "+pod, 1))
		before := c.waitPod(t, "default", pod, "Running", waitTimeout, func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Running != nil
		})

		patch := `{"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":"64Mi"}}}]}}`
		out := c.mustKubectl(t, "patch", "pod", pod, "--subresource", "resize", "--patch", patch)
		t.Logf("kubectl patch pod %s --subresource resize --patch %s: %q", pod, patch, out)
		want := resource.MustParse("64Mi")
		after := c.waitPod(t, "default", pod, "status.containerStatuses[0].resources with the new memory limit", waitTimeout, func(p *v1.Pod) bool {
			if p == nil || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Resources == nil {
				return false
			}
			q, ok := p.Status.ContainerStatuses[0].Resources.Limits[v1.ResourceMemory]
			return ok && q.Equal(want)
		})
		cs := after.Status.ContainerStatuses[0]
		if cs.RestartCount != 0 || cs.State.Running == nil || !cs.State.Running.StartedAt.Equal(&before.Status.ContainerStatuses[0].State.Running.StartedAt) {
			t.Errorf("app after the resize: %+v, want it running since before, never restarted", cs)
		}
		for _, cond := range after.Status.Conditions {
			if cond.Type == v1.PodResizePending || cond.Type == v1.PodResizeInProgress {
				t.Errorf("condition %s %s %s once applied", cond.Type, cond.Reason, cond.Message)
			}
		}
		// The API server bumped metadata.generation for the resize; the
		// status and each condition observe it (KEP-5067, GA in 1.35:
		// the kubelet's status manager, pkg/kubelet/status/generate.go).
		if after.Generation <= before.Generation {
			t.Errorf("generation %d after the resize, %d before: the API server did not bump it", after.Generation, before.Generation)
		}
		c.waitPod(t, "default", pod, "status.observedGeneration and the conditions' observedGeneration at the resize's generation", waitTimeout, func(p *v1.Pod) bool {
			if p == nil || p.Status.ObservedGeneration != p.Generation || p.Generation < after.Generation {
				return false
			}
			for _, cond := range p.Status.Conditions {
				if cond.ObservedGeneration != p.Generation {
					return false
				}
			}
			return true
		})

		// A resize past what the node has free (its allocatable less the
		// other pods' requests) waits, Deferred, with the kubelet 1.37's
		// message (pkg/kubelet/allocation and the predicate handler's
		// arithmetic), its condition observing the resize's generation;
		// the container keeps its allocation until the other pod goes.
		// (Past the allocatable itself, the 1.37 API server refuses it.)
		nd, err := c.client.CoreV1().Nodes().Get(context.Background(), n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		capacity := nd.Status.Allocatable.Cpu().MilliValue()
		hog := "hog-" + rt.Name
		n.apply(t, fmt.Sprintf(hogPod, hog, capacity-500))
		c.waitPod(t, "default", hog, "Running", waitTimeout, func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodRunning })
		c.mustKubectl(t, "patch", "pod", pod, "--subresource", "resize", "--patch", `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"600m"}}}]}}`)
		wantMsg := fmt.Sprintf("Node didn't have enough resource: cpu, requested: 600, used: %d, capacity: %d", capacity-500, capacity)
		c.waitPod(t, "default", pod, "PodResizePending Deferred", waitTimeout, func(p *v1.Pod) bool {
			if p == nil || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].AllocatedResources.Cpu().String() != "100m" {
				return false
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == v1.PodResizePending && cond.Reason == v1.PodReasonDeferred && cond.Message == wantMsg && cond.ObservedGeneration == p.Generation {
					return true
				}
			}
			return false
		})
		c.mustKubectl(t, "delete", "pod", hog, "--wait=true", "--timeout=60s")
		c.waitPod(t, "default", pod, "the deferred resize allocated once the other pod is gone", waitTimeout, func(p *v1.Pod) bool {
			if p == nil || len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].AllocatedResources.Cpu().String() != "600m" {
				return false
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == v1.PodResizePending || cond.Type == v1.PodResizeInProgress {
					return false
				}
			}
			return true
		})

		qos := `{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"100m","memory":"64Mi"}}}]}}`
		msg, err := c.kubectl(waitTimeout, "patch", "pod", pod, "--subresource", "resize", "--patch", qos)
		t.Logf("kubectl patch pod %s --subresource resize --patch %s: %v %q", pod, qos, err, msg)
		if err == nil || !strings.Contains(err.Error()+msg, `spec: Invalid value: "Burstable": Pod QOS Class may not change as a result of resizing`) {
			t.Errorf("a resize to Guaranteed: %v %q, want the API server's refusal", err, msg)
		}

		c.mustKubectl(t, "delete", "pod", pod, "--wait=true", "--timeout=60s")
	})
}
