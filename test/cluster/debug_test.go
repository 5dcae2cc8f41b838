package cluster

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/test/internal/bintest"
	"github.com/podward/podward/test/internal/ptytest"
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

// debugItTarget's app writes a marker into its emptyDir and sleeps.
const debugItTarget = `
apiVersion: v1
kind: Pod
metadata:
  name: {{.Name}}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox
    command: ["sh", "-c", "echo from-app > /data/marker; exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
  volumes: [{name: data, emptyDir: {}}]
`

// TestKubectlDebugInteractive: `kubectl debug -it POD --image=busybox
// --target=app` in a real terminal against a podward node, on both
// runtimes. kubectl adds an ephemeral container with stdin and a tty,
// waits for it to run and attaches to it through the node's /attach
// (kubectl's pkg/cmd/debug/debug.go, handleAttachPod, which falls back to
// the container's log when the attach fails: its warning must not show).
// What is typed reaches the debug container's shell; --target shares the
// target's mounts (process runtime: its emptyDir at its path) or its
// process namespace (CRI: PID 1 is the target's command); a resize
// reaches the shell's terminal; `exit 0` ends the session with kubectl's
// note, and the ephemeral container ends Terminated with exit code 0.
//
// On the process runtime, which has no image to take a command from, the
// command without `-- sh` gives a debug container the node refuses: it
// stays waiting with the reason as its message, which kubectl prints
// while it waits (as for a container the kubelet cannot create), and the
// next debug container still starts.
func TestKubectlDebugInteractive(t *testing.T) {
	c := needControlPlane(t)
	bintest.EachRuntime(t, func(t *testing.T, rt bintest.Runtime) {
		n := startNode(t, c, nodeName(t, "a"), rt.Args...)
		pod := "debug-it-" + rt.Name
		n.apply(t, strings.Replace(debugItTarget, "{{.Name}}", pod, 1))
		c.waitPod(t, "default", pod, "Running", waitTimeout, func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodRunning
		})

		args := []string{"debug", "-it", pod, "--image=busybox", "--target=app"}
		if !rt.IsCRI() {
			refused := ptytest.Start(t, c.kubectlCmd(args...), 30, 90, waitTimeout)
			refused.Expect("command: Required value: the process runtime runs the command itself and has no image to take it from")
			refused.Leave()
			t.Logf("kubectl %s (process runtime, no command): it showed %q, and waits", strings.Join(args, " "), refused.Output())
			p := c.waitPod(t, "default", pod, "the refused debug container waiting", waitTimeout, func(p *v1.Pod) bool {
				return p != nil && len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Waiting != nil
			})
			if w := p.Status.EphemeralContainerStatuses[0].State.Waiting; w.Reason != "CreateContainerConfigError" || !strings.HasPrefix(w.Message, "spec.ephemeralContainers[0].command: Required value") {
				t.Errorf("the refused debug container: waiting %+v, want CreateContainerConfigError and why", *w)
			}
			// The process runtime has no image to take the command
			// from: a container must name it.
			args = append(args, "--", "sh")
		}
		cmd := c.kubectlCmd(args...)
		cmd.Env = append(cmd.Environ(), "TERM=dumb")
		term := ptytest.Start(t, cmd, 30, 90, waitTimeout)
		term.Expect("If you don't see a command prompt, try pressing enter.")
		// The markers are split so that the echo of the typed line does
		// not match them.
		term.Type("echo hi-$((6*7))\r")
		term.Expect("hi-42")
		if rt.IsCRI() {
			term.Type(`tr '\0' ' ' </proc/1/cmdline; echo E''ND` + "\r")
			if seen := term.Expect("END"); !strings.Contains(seen, "sleep 3600 END") {
				t.Errorf("PID 1 of the targeting debug container: the terminal shows %q, want the target's sleep 3600", seen)
			}
		} else {
			term.Type("cat /data/marker; echo E''ND\r")
			if seen := term.Expect("END"); !strings.Contains(seen, "from-app") {
				t.Errorf("/data/marker in the targeting debug container: the terminal shows %q, want the target's emptyDir's from-app", seen)
			}
		}
		// The first size comes on the attach's resize stream: ask until it
		// shows.
		term.TypeUntil("echo SIZE $(stty size 2>/dev/null) E''ND\r", "END", "SIZE 30 90 END")
		term.Resize(40, 100)
		term.TypeUntil("echo SIZE $(stty size) E''ND\r", "END", "SIZE 40 100 END")
		term.Type("exit 0\r")
		err := term.Wait()
		out := term.Output()
		t.Logf("kubectl %s in a 30x90 terminal, resized to 40x100, exit 0: %v; it showed:\n%s", strings.Join(args, " "), err, out)
		if err != nil {
			t.Errorf("kubectl debug -it after exit 0: %v", err)
		}
		for _, want := range []string{"Defaulting debug container name to debugger-", "Session ended, the ephemeral container will not be restarted"} {
			if !strings.Contains(out, want) {
				t.Errorf("kubectl debug -it showed no %q", want)
			}
		}
		if strings.Contains(out, "falling back to streaming logs") {
			t.Errorf("kubectl debug -it could not attach: it showed %q", out)
		}
		_, rest, _ := strings.Cut(out, "Defaulting debug container name to ")
		name, _, _ := strings.Cut(rest, ".")
		var ec v1.ContainerStatus
		p := c.waitPod(t, "default", pod, "debug container "+name+" terminated", waitTimeout, func(p *v1.Pod) bool {
			if p == nil {
				return false
			}
			for _, cs := range p.Status.EphemeralContainerStatuses {
				if ec = cs; cs.Name == name && cs.State.Terminated != nil {
					return true
				}
			}
			return false
		})
		if term := ec.State.Terminated; term.ExitCode != 0 || term.Reason != "Completed" {
			t.Errorf("ephemeral container %s: terminated %+v, want exit code 0, Completed", ec.Name, *term)
		}
		if p.Status.Phase != v1.PodRunning {
			t.Errorf("pod phase %s once its debug container ended, want Running", p.Status.Phase)
		}
	})
}
