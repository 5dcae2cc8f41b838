package cluster

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/test/internal/bintest"
)

// The pods of these tests run on the process runtime: host processes, so
// the tests can see and steer them through files.

const sidecarJob = `
apiVersion: v1
kind: Pod
metadata:
  name: job
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 30
  initContainers:
  - name: proxy
    image: busybox
    restartPolicy: Always
    command: ["/bin/bash", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
  containers:
  - name: work
    image: busybox
    command: ["/bin/bash", "-c", "until [ -e {{.Dir}}/go ]; do sleep 0.05; done; echo done"]
`

// TestSidecarJobSucceeds: a Job-style pod whose sidecar must not keep it
// alive: it reaches Succeeded once its main container is done, and the
// READY column counts the sidecar throughout.
func TestSidecarJobSucceeds(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"))
	dir := t.TempDir()
	n.apply(t, strings.ReplaceAll(sidecarJob, "{{.Dir}}", dir))
	var seen []string
	note := func(p *v1.Pod) {
		if p == nil {
			return
		}
		s := string(p.Status.Phase) + " " + readyColumn(p)
		if len(seen) == 0 || seen[len(seen)-1] != s {
			seen = append(seen, s)
		}
	}
	c.waitPod(t, "default", "job", "both containers ready", waitTimeout, func(p *v1.Pod) bool {
		note(p)
		return p != nil && p.Status.Phase == v1.PodRunning && readyColumn(p) == "2/2"
	})
	if out := c.mustKubectl(t, "get", "pod", "job", "--no-headers"); !strings.Contains(out, "2/2") || !strings.Contains(out, "Running") {
		t.Errorf("kubectl get pod: %q, want 2/2 Running", out)
	}
	touch(t, filepath.Join(dir, "go"))
	c.waitPod(t, "default", "job", "Succeeded", waitTimeout, func(p *v1.Pod) bool {
		note(p)
		return p != nil && p.Status.Phase == v1.PodSucceeded
	})
	t.Logf("phase and READY seen: %q", seen)
	if !slices.Contains(seen, "Running 2/2") || seen[len(seen)-1] != "Succeeded 0/2" {
		t.Errorf("phase and READY seen %q: want Running 2/2, ending Succeeded 0/2", seen)
	}
	if out := c.mustKubectl(t, "get", "pod", "job", "--no-headers"); !strings.Contains(out, "0/2") || !strings.Contains(out, "Completed") {
		t.Errorf("kubectl get pod: %q, want 0/2 Completed", out)
	}
}

const restartingPod = `
apiVersion: v1
kind: Pod
metadata:
  name: logs
spec:
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c", "n=$(cat {{.Dir}}/n 2>/dev/null || echo 0); n=$((n+1)); echo $n > {{.Dir}}/n; echo run $n; until [ -e {{.Dir}}/exit-$n ]; do sleep 0.05; done; echo bye $n; exit 1"]
`

// TestKubectlLogs: kubectl logs reaches the node's kubelet port, for the
// running instance and, with --previous, the one before.
func TestKubectlLogs(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"), "--backoff-base", "5s")
	dir := t.TempDir()
	n.apply(t, strings.ReplaceAll(restartingPod, "{{.Dir}}", dir))
	c.waitPod(t, "default", "logs", "Running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning
	})
	waitLogs(t, c, "run 1", "logs", "-c", "app")
	touch(t, filepath.Join(dir, "exit-1"))
	c.waitPod(t, "default", "logs", "a restart", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].RestartCount == 1 &&
			p.Status.ContainerStatuses[0].State.Running != nil
	})
	waitLogs(t, c, "run 2", "logs", "-c", "app")
	prev := c.mustKubectl(t, "logs", "logs", "-c", "app", "--previous")
	if prev != "run 1\nbye 1\n" {
		t.Errorf("kubectl logs --previous = %q, want the first instance's output", prev)
	}
	if out := c.mustKubectl(t, "logs", "logs", "--timestamps"); !strings.Contains(out, "Z run 2") {
		t.Errorf("kubectl logs --timestamps = %q", out)
	}
	// -f ends once the container instance does, as with the kubelet.
	done := make(chan string, 1)
	go func() {
		out, err := c.kubectl(waitTimeout, "logs", "-f", "logs", "-c", "app")
		if err != nil {
			out += " (" + err.Error() + ")"
		}
		done <- out
	}()
	touch(t, filepath.Join(dir, "exit-2"))
	if out := <-done; !strings.HasSuffix(out, "run 2\nbye 2\n") {
		t.Errorf("kubectl logs -f = %q, want it to end with the instance's last line", out)
	}
}

// waitLogs follows `kubectl logs -f ARGS` until a line has want: the
// container may not have written it yet.
func waitLogs(t *testing.T, c *controlPlane, want string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.env["KUBECTL"], append([]string{"--kubeconfig", c.env["KUBECONFIG"], "logs", "-f"}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	sc := bufio.NewScanner(out)
	var seen []string
	for sc.Scan() {
		if strings.Contains(sc.Text(), want) {
			return
		}
		seen = append(seen, sc.Text())
	}
	t.Fatalf("kubectl logs -f %s ended without %q: %q; stderr: %s", strings.Join(args, " "), want, seen, stderr.String())
}

func touch(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

const nodeEchoPod = `
apiVersion: v1
kind: Pod
metadata:
  name: NAME
spec:
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c", "echo on $NODE; echo $NODE > DIR/NAME; trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
    env:
    - name: NODE
      valueFrom: {fieldRef: {fieldPath: spec.nodeName}}
`

// TestTwoNodes: two podward nodes on one machine, each with its own root
// and name, each runs the pods bound to it and only those.
func TestTwoNodes(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	a := startNode(t, c, nodeName(t, "a"))
	b := startNode(t, c, nodeName(t, "b"))
	dir := t.TempDir()
	pods := map[string]*node{"two-a1": a, "two-a2": a, "two-b1": b}
	for name, n := range pods {
		n.apply(t, strings.NewReplacer("NAME", name, "DIR", dir).Replace(nodeEchoPod))
	}
	for name, n := range pods {
		p := c.waitPod(t, "default", name, "Running", waitTimeout, func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodRunning
		})
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || strings.TrimSpace(string(data)) != n.name {
			t.Errorf("pod %s wrote %q (%v), want its node %s", name, data, err, n.name)
		}
		if p.Spec.NodeName != n.name {
			t.Errorf("pod %s on %s", name, p.Spec.NodeName)
		}
	}
	for name := range pods {
		c.mustKubectl(t, "delete", "pod", name, "--timeout", "60s")
	}
}

const hangingDeferPod = `
apiVersion: v1
kind: Pod
metadata:
  name: deadline
  annotations:
    pod.alpha.kubernetes.io/defer-containers: '[{"name": "stuck", "image": "busybox", "command": ["/bin/bash", "-c", "echo stuck; exec sleep MARK"]}]'
spec:
  terminationGracePeriodSeconds: 8
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
`

// TestCrashMidTermination: the node agent is killed with SIGKILL while a
// deleted pod's defer container runs, and restarted: the pod still ends by
// its original deadline and its API object is deleted.
func TestCrashMidTermination(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"))
	// A unique sleep, to find the defer container's process.
	mark := strconv.FormatInt(100000+time.Now().UnixNano()%800000, 10)
	n.apply(t, strings.ReplaceAll(hangingDeferPod, "MARK", mark))
	c.waitPod(t, "default", "deadline", "Running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning
	})
	deleted := time.Now()
	c.mustKubectl(t, "delete", "pod", "deadline", "--wait=false")
	waitEvent(t, c, "deadline", "DeferStarted", "stuck", waitTimeout)
	n.signal(syscall.SIGKILL)
	crashed := time.Since(deleted)
	n.start()
	restarted := time.Since(deleted)
	c.waitPod(t, "default", "deadline", "deletion", waitTimeout, func(p *v1.Pod) bool { return p == nil })
	gone := time.Since(deleted)
	t.Logf("delete at 0, crash at %v, restart at %v, API object gone at %v (grace period 8 s)",
		crashed.Round(time.Millisecond), restarted.Round(time.Millisecond), gone.Round(time.Millisecond))
	if gone < 7*time.Second || gone > 14*time.Second {
		t.Errorf("the pod went %v after the delete, want about its 8 s deadline", gone)
	}
	waitGone(t, "sleep "+mark)
}

// TestDeleteWhileDown: pods deleted from the API server while the node
// agent is down — gracefully (they wait in Terminating) or by force (gone
// at once) — are killed when it comes back.
func TestDeleteWhileDown(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"))
	dir := t.TempDir()
	names := []string{"down-graceful", "down-forced"}
	for _, name := range names {
		n.apply(t, strings.NewReplacer("NAME", name, "DIR", dir).Replace(nodeEchoPod))
	}
	for _, name := range names {
		c.waitPod(t, "default", name, "Running", waitTimeout, func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodRunning
		})
	}
	n.signal(syscall.SIGTERM)
	c.mustKubectl(t, "delete", "pod", "down-graceful", "--wait=false")
	c.mustKubectl(t, "delete", "pod", "down-forced", "--grace-period=0", "--force")
	p, err := c.client.CoreV1().Pods("default").Get(context.Background(), "down-graceful", metav1.GetOptions{})
	if err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("down-graceful while the node is down: %v %v", err, p)
	}
	n.start()
	c.waitPod(t, "default", "down-graceful", "deletion", waitTimeout, func(p *v1.Pod) bool { return p == nil })
	for _, name := range names {
		// Their containers' command lines have their file's path.
		waitGone(t, filepath.Join(dir, name))
	}
}

// waitGone waits, a bounded time, until no process has s in its command
// line, through pidfds.
func waitGone(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for _, pid := range bintest.ProcessesRunning(s) {
		if !bintest.WaitExit(pid, time.Until(deadline)) && bintest.ProcessRuns(pid, s) {
			t.Errorf("process %d (%s) still runs", pid, bintest.Cmdline(pid))
		}
	}
}

const noCommandPod = `
apiVersion: v1
kind: Pod
metadata:
  name: no-command
spec:
  containers:
  - name: app
    image: busybox
`

// TestRejectedPodFails: a pod the node's runtime cannot run (the process
// runtime runs a command, and this container has none) is marked Failed
// with a reason and a message naming the field, as the kubelet marks the
// pods it rejects.
func TestRejectedPodFails(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"))
	n.apply(t, noCommandPod)
	p := c.waitPod(t, "default", "no-command", "Failed", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodFailed
	})
	if p.Status.Reason != "UnsupportedPodSpec" || !strings.Contains(p.Status.Message, "spec.containers[0].command") {
		t.Errorf("status reason %q message %q", p.Status.Reason, p.Status.Message)
	}
}
