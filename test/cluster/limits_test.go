package cluster

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

const maxPodsPod = `
apiVersion: v1
kind: Pod
metadata:
  name: {{.Name}}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
`

// TestMaxPods: `podward node --max-pods 1` reports a pods capacity of 1,
// and with one pod running marks the next one bound to it Failed as the
// kubelet does (pkg/kubelet/lifecycle/predicate.go, OutOfpods; kubelet.go,
// rejectPod), with a warning event.
func TestMaxPods(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	name := nodeName(t, "a")
	n := startNode(t, c, name, "--max-pods", "1")
	c.waitNode(t, name, "a pods capacity of 1", readyTimeout, func(node *v1.Node) bool {
		q, ok := node.Status.Capacity[v1.ResourcePods]
		a, okA := node.Status.Allocatable[v1.ResourcePods]
		return ok && okA && q.Value() == 1 && a.Value() == 1
	})
	n.apply(t, strings.ReplaceAll(maxPodsPod, "{{.Name}}", "max-pods-first"))
	c.waitPod(t, "default", "max-pods-first", "Running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning
	})
	n.apply(t, strings.ReplaceAll(maxPodsPod, "{{.Name}}", "max-pods-second"))
	const msg = "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"
	p := c.waitPod(t, "default", "max-pods-second", "Failed", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed
	})
	if p.Status.Reason != "OutOfpods" || p.Status.Message != "Pod was rejected: "+msg {
		t.Errorf("status reason %q message %q, want OutOfpods, %q", p.Status.Reason, p.Status.Message, "Pod was rejected: "+msg)
	}
	waitEvent(t, c, "max-pods-second", "OutOfpods", msg, waitTimeout)
}
