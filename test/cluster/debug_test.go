package cluster

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/test/internal/bintest"
)

const debugTarget = `
apiVersion: v1
kind: Pod
metadata:
  name: debug-target
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox
    command: ["sleep", "3600"]
`

// TestKubectlDebug: kubectl debug adds an ephemeral container through the
// API server's ephemeralcontainers subresource; the node sees the pod
// update, starts the container once and reports it in
// status.ephemeralContainerStatuses, which kubectl reads back; deleting the
// pod stops it with the pod (kubelet 1.37,
// pkg/kubelet/kuberuntime/kuberuntime_manager.go, computePodActions). On
// both runtimes (busybox from the test registry on the CRI one).
func TestKubectlDebug(t *testing.T) {
	c := needControlPlane(t)
	bintest.EachRuntime(t, func(t *testing.T, rt bintest.Runtime) {
		n := startNode(t, c, nodeName(t, "a"), rt.Args...)
		pod := "debug-" + rt.Name
		n.apply(t, strings.Replace(debugTarget, "name: debug-target", "name: "+pod, 1))
		c.waitPod(t, "default", pod, "Running", waitTimeout, func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodRunning
		})

		stdout, stderr := kubectlOutErr(t, c, "debug", pod, "--image=busybox", "--target=app", "--", "sleep", "300")
		t.Logf("kubectl debug %s --image=busybox --target=app -- sleep 300:\nstdout: %q\nstderr: %q", pod, stdout, stderr)
		if !strings.Contains(stdout, "Defaulting debug container name to debugger-") {
			t.Errorf("kubectl debug printed %q %q, want the debug container's name", stdout, stderr)
		}
		p := c.waitPod(t, "default", pod, "its ephemeral container running", waitTimeout, func(p *v1.Pod) bool {
			return p != nil && len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Running != nil
		})
		name := p.Status.EphemeralContainerStatuses[0].Name
		if !strings.HasPrefix(name, "debugger-") || p.Spec.EphemeralContainers[0].TargetContainerName != "app" {
			t.Errorf("ephemeral container %q, spec %+v", name, p.Spec.EphemeralContainers)
		}
		running := c.mustKubectl(t, "get", "pod", pod, "-o", "jsonpath={.status.ephemeralContainerStatuses[0].name} {.status.ephemeralContainerStatuses[0].state.running.startedAt}")
		if n, at, _ := strings.Cut(running, " "); n != name || at == "" {
			t.Errorf("kubectl get pod -o jsonpath ephemeralContainerStatuses = %q, want %s running", running, name)
		}
		if ready := readyColumn(p); ready != "1/1" {
			t.Errorf("READY %s: an ephemeral container does not count", ready)
		}

		// kubectl logs reads an ephemeral container's log from the node.
		c.mustKubectl(t, "debug", pod, "--image=busybox", "-c", "echoer", "--", "echo", "from-debug")
		c.waitPod(t, "default", pod, "the second ephemeral container done", waitTimeout, func(p *v1.Pod) bool {
			return p != nil && len(p.Status.EphemeralContainerStatuses) == 2 && p.Status.EphemeralContainerStatuses[1].State.Terminated != nil
		})
		if out := c.mustKubectl(t, "logs", pod, "-c", "echoer"); out != "from-debug\n" {
			t.Errorf("kubectl logs %s -c echoer = %q", pod, out)
		}

		if rt.IsCRI() {
			// --target puts it in the target's process namespace: its
			// PID 1 is the target's command.
			c.mustKubectl(t, "debug", pod, "--image=busybox", "--target=app", "-c", "pid1", "--", "sh", "-c", `tr '\0' ' ' < /proc/1/cmdline`)
			c.waitPod(t, "default", pod, "the pid1 ephemeral container done", waitTimeout, func(p *v1.Pod) bool {
				return p != nil && len(p.Status.EphemeralContainerStatuses) == 3 && p.Status.EphemeralContainerStatuses[2].State.Terminated != nil
			})
			if out := c.mustKubectl(t, "logs", pod, "-c", "pid1"); strings.TrimSpace(out) != "sleep 3600" {
				t.Errorf("PID 1 of the targeted debug container = %q, want the target's sleep 3600", out)
			}
		}

		c.mustKubectl(t, "delete", "pod", pod, "--wait=true", "--timeout=60s")
	})
}

// kubectlOutErr runs kubectl, which must succeed, and returns its stdout
// and stderr apart.
func kubectlOutErr(t *testing.T, c *controlPlane, args ...string) (string, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.env["KUBECTL"], append([]string{"--kubeconfig", c.env["KUBECONFIG"]}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), stderr.String()
}
