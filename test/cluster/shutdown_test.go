package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/store"
	"github.com/podward/podward/test/internal/bintest"
)

// shutdownPod is bound to the node; its regular container fails on
// SIGTERM, so the pod ends Failed; its defer container records itself.
const shutdownPod = `
apiVersion: v1
kind: Pod
metadata:
  name: NAME
  annotations:
    pod.alpha.kubernetes.io/defer-containers: '[{"name":"d","image":"busybox","command":["/bin/bash","-c","echo defer >> DIR/NAME"]}]'
spec:
  PRIORITY
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c", "trap 'echo stop >> DIR/NAME; exit 1' TERM; while true; do sleep 100 & wait; done"]
`

// TestNodeShutdown: `podward shutdown` on a cluster node (through its
// --socket) — the Node turns NotReady with the kubelet's reason and
// message while it shuts down, its pods are marked as the kubelet's
// shutdown manager marks them (pkg/kubelet/nodeshutdown/nodeshutdown_manager.go:
// Failed unless Succeeded, reason Terminated, the message, DisruptionTarget
// with reason TerminationByKubelet) and a pod bound to it meanwhile is
// rejected (reason NodeShutdown, as its Admit). After the reboot the node
// is Ready again, the shutdown's pods stay Failed for their controllers,
// and new pods run.
func TestNodeShutdown(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	sock := filepath.Join(shortTempDir(t), "node.sock")
	name := nodeName(t, "a")
	n := startNode(t, c, name, "--socket", sock, "--shutdown-grace-period", "8s", "--shutdown-grace-period-critical-pods", "3s")
	dir := t.TempDir()
	apply := func(pod, priority string) {
		t.Helper()
		n.apply(t, strings.NewReplacer("NAME", pod, "DIR", dir, "PRIORITY", priority).Replace(shutdownPod))
	}
	apply("sd-web", "terminationGracePeriodSeconds: 30")
	apply("sd-dns", "priorityClassName: system-node-critical")
	for _, pod := range []string{"sd-web", "sd-dns"} {
		c.waitPod(t, "default", pod, "Running", waitTimeout, func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodRunning })
	}

	out, err := bintest.CLI(podwardBin, sock, waitTimeout, "shutdown", "--wait")
	if err != nil || !strings.Contains(out, "node shutdown Terminated") {
		t.Fatalf("podward shutdown --wait: %v\n%s", err, out)
	}
	node := c.waitNode(t, name, "Ready=False", waitTimeout, func(nd *v1.Node) bool {
		st, _ := nodeCondition(nd, v1.NodeReady)
		return st == v1.ConditionFalse
	})
	for _, cond := range node.Status.Conditions {
		if cond.Type == v1.NodeReady && (cond.Reason != "KubeletNotReady" || cond.Message != "node is shutting down") {
			t.Errorf("Ready condition %+v; want KubeletNotReady, node is shutting down", cond)
		}
	}
	for _, pod := range []string{"sd-web", "sd-dns"} {
		p := c.waitPod(t, "default", pod, "Failed", waitTimeout, func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodFailed })
		assertKubeletShutdownMarks(t, p)
	}
	for _, pod := range []string{"sd-web", "sd-dns"} {
		if data, _ := os.ReadFile(filepath.Join(dir, pod)); string(data) != "defer\nstop\n" {
			t.Errorf("pod %s recorded %q; want its defer container, then its stop", pod, data)
		}
	}

	apply("sd-late", "terminationGracePeriodSeconds: 30")
	p := c.waitPod(t, "default", "sd-late", "Failed", waitTimeout, func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodFailed })
	if p.Status.Reason != "NodeShutdown" || p.Status.Message != "Pod was rejected: Pod was rejected as the node is shutting down." {
		t.Errorf("a pod bound during the shutdown: reason %q message %q", p.Status.Reason, p.Status.Message)
	}

	// The reboot: the node agent comes back in a new boot.
	n.signal(syscall.SIGTERM)
	setEarlierBoot(t, filepath.Join(n.root, "state.db"))
	n.start()
	c.waitNode(t, name, "Ready=True", waitTimeout, func(nd *v1.Node) bool {
		st, _ := nodeCondition(nd, v1.NodeReady)
		return st == v1.ConditionTrue
	})
	apply("sd-after", "terminationGracePeriodSeconds: 30")
	c.waitPod(t, "default", "sd-after", "Running", waitTimeout, func(p *v1.Pod) bool { return p != nil && p.Status.Phase == v1.PodRunning })
	for _, pod := range []string{"sd-web", "sd-dns"} {
		p := c.waitPod(t, "default", pod, "Failed", waitTimeout, func(p *v1.Pod) bool { return p != nil })
		if p.Status.Phase != v1.PodFailed {
			t.Errorf("pod %s after the reboot: %s; want it still Failed, for its controller", pod, podSummary(p))
		}
		if data, _ := os.ReadFile(filepath.Join(dir, pod)); string(data) != "defer\nstop\n" {
			t.Errorf("pod %s after the reboot recorded %q; want nothing more", pod, data)
		}
	}
}

func assertKubeletShutdownMarks(t *testing.T, p *v1.Pod) {
	t.Helper()
	if p.Status.Reason != "Terminated" || p.Status.Message != "Pod was terminated in response to imminent node shutdown." {
		t.Errorf("pod %s: reason %q message %q", p.Name, p.Status.Reason, p.Status.Message)
	}
	ok := false
	for _, c := range p.Status.Conditions {
		ok = ok || (c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet &&
			c.Message == "Pod was terminated in response to imminent node shutdown.")
	}
	if !ok || p.DeletionTimestamp != nil {
		t.Errorf("pod %s: conditions %+v, deletionTimestamp %v; want DisruptionTarget, not deleted", p.Name, p.Status.Conditions, p.DeletionTimestamp)
	}
}

// setEarlierBoot makes the node's store say it last ran in another boot of
// the machine, as after a reboot. The node agent must be down.
func setEarlierBoot(t *testing.T, path string) {
	t.Helper()
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatalf("open the node's store: %v", err)
	}
	defer st.Close()
	// The agent's key for the boot it last ran in (internal/agent).
	if err := st.PutMeta("bootID", "an-earlier-boot"); err != nil {
		t.Fatal(err)
	}
}

// shortTempDir is a temporary directory with a path short enough for a
// unix socket.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pwcl-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
