package e2e

import (
	"encoding/json"
	"strings"
	"testing"
)

// statusPod is a job with an init container whose containers ask for as
// much cpu and memory as they are limited to (Guaranteed) and print the
// host name they see.
const statusPod = `
apiVersion: v1
kind: Pod
metadata:
  name: status-job
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 5
  hostname: job-host
  initContainers:
  - name: setup
    image: busybox
    command: ["/bin/sh", "-c", "echo set up"]
    resources:
      limits: {cpu: 100m, memory: 64Mi}
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "echo host=$(cat /proc/sys/kernel/hostname)"]
    resources:
      limits: {cpu: 100m, memory: 64Mi}
`

// TestStatusAfterCompletion: what `podward get -o json` shows of a pod that
// Succeeded, as the kubelet writes it (pkg/kubelet/status/generate.go):
// Ready and ContainersReady False with reason PodCompleted, Initialized
// True with reason PodCompleted, the completed init container ready
// (pkg/kubelet/prober/prober_manager.go, UpdatePodStatus), the QoS class
// (kubelet_pods.go, convertStatusToAPIStatus) and the service account
// admission names; and the container ran with the pod's host name.
func TestStatusAfterCompletion(t *testing.T) {
	needRoot(t)
	t.Parallel()
	dir := t.TempDir()
	a := startAgent(t)
	a.apply("status-job", writeManifest(t, dir, statusPod, nil))
	a.waitPod("status-job", "jsonpath={.status.phase}=Succeeded", lineTimeout)

	p := a.getPod("status-job")
	conds, _ := json.Marshal(p.Status.Conditions)
	for _, c := range p.Status.Conditions {
		want := map[string][2]string{
			"Ready":           {"False", "PodCompleted"},
			"ContainersReady": {"False", "PodCompleted"},
			"Initialized":     {"True", "PodCompleted"},
		}[c.Type]
		if want[0] != "" && (c.Status != want[0] || c.Reason != want[1]) {
			t.Errorf("condition %s: %s reason %q, want %s reason %q; conditions: %s", c.Type, c.Status, c.Reason, want[0], want[1], conds)
		}
	}
	if setup := p.container(t, "setup"); setup.State.Terminated == nil || !setup.Ready {
		t.Errorf("completed init container: %v, want terminated and ready", setup)
	}
	if p.Status.QOSClass != "Guaranteed" {
		t.Errorf("qosClass %q, want Guaranteed", p.Status.QOSClass)
	}
	if p.Spec.ServiceAccountName != "default" {
		t.Errorf("serviceAccountName %q, want default", p.Spec.ServiceAccountName)
	}
	if out := a.mustCLI("logs", "status-job", "-c", "app"); strings.TrimSpace(out) != "host=job-host" {
		t.Errorf("app's output %q, want host=job-host", out)
	}
}
