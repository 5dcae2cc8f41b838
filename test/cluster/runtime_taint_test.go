package cluster

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
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
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"

	"github.com/podward/podward/test/internal/bintest"
)

// A node on the process runtime is tainted podward.io/runtime=process:
// NoSchedule: its pods are host processes, isolated less than containers,
// so only the pods that tolerate it are scheduled there.
var (
	processRuntimeTaint      = v1.Taint{Key: "podward.io/runtime", Value: "process", Effect: v1.TaintEffectNoSchedule}
	processRuntimeToleration = v1.Toleration{Key: "podward.io/runtime", Operator: v1.TolerationOpEqual, Value: "process", Effect: v1.TaintEffectNoSchedule}
)

// runtimeTaints are the node's taints of key podward.io/runtime.
func runtimeTaints(t *testing.T, c *controlPlane, name string) []v1.Taint {
	t.Helper()
	node, err := c.client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var taints []v1.Taint
	for _, tn := range node.Spec.Taints {
		if tn.Key == processRuntimeTaint.Key {
			taints = append(taints, tn)
		}
	}
	return taints
}

func wantProcessTaint(t *testing.T, c *controlPlane, name, when string) {
	t.Helper()
	if got := runtimeTaints(t, c, name); len(got) != 1 || !got[0].MatchTaint(&processRuntimeTaint) || got[0].Value != "process" {
		t.Errorf("%s: the node's podward.io/runtime taints are %v, want %v once", when, got, processRuntimeTaint)
	}
}

const untoleratingPod = `
apiVersion: v1
kind: Pod
metadata:
  name: untolerating
spec:
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
`

// TestNodeProcessRuntimeTaint: `podward node --runtime process` registers
// its Node with the taint, puts it back on a Node that lost it when it
// starts again, and still runs a pod bound to it by spec.nodeName that
// does not tolerate it (NoSchedule keeps the scheduler away, not the node).
func TestNodeProcessRuntimeTaint(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"), "--runtime", "process")
	wantProcessTaint(t, c, n.name, "registered")

	n.signal(syscall.SIGTERM)
	setProcessTaint(t, c, n.name, false)
	if got := runtimeTaints(t, c, n.name); len(got) != 0 {
		t.Fatalf("taints %v left after removing it", got)
	}
	n.start()
	wantProcessTaint(t, c, n.name, "registered again")

	n.apply(t, untoleratingPod)
	c.waitPod(t, "default", "untolerating", "Running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning
	})
}

// TestSchedulerKeepsOffProcessNode: kube-scheduler does not place a pod
// that does not tolerate the process runtime's taint on such a node, and
// places it there once it tolerates it.
func TestSchedulerKeepsOffProcessNode(t *testing.T) {
	c := needControlPlane(t)
	needControllers(t, c)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"), "--runtime", "process")
	ns := testNamespace(t, c)
	// The node lifecycle controller taints a new node not-ready until it
	// has seen it Ready: the pod comes once the process runtime's taint is
	// the only one it does not tolerate.
	waitOnlyProcessTaint(t, c, n.name)
	pods := c.client.CoreV1().Pods(ns)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "untolerating", Namespace: ns},
		Spec: v1.PodSpec{
			NodeSelector: map[string]string{v1.LabelHostname: n.name},
			Containers: []v1.Container{{
				Name: "app", Image: "busybox",
				Command: []string{"/bin/bash", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"},
			}},
		},
	}
	if _, err := pods.Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		grace := int64(1)
		_ = pods.Delete(context.Background(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
		c.waitPod(t, ns, pod.Name, "deletion", waitTimeout, func(p *v1.Pod) bool { return p == nil })
	})
	got := c.waitPod(t, ns, pod.Name, "unschedulable", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && unschedulable(p) != ""
	})
	// The scheduler does not name the taint (0/N nodes are available: N
	// node(s) had untolerated taint(s)); the node has no other.
	if msg := unschedulable(got); !strings.Contains(msg, "untolerated taint") {
		t.Errorf("PodScheduled False: %q, want an untolerated taint", msg)
	}
	if got.Spec.NodeName != "" {
		t.Fatalf("the pod was placed on %s", got.Spec.NodeName)
	}

	// Tolerations may be added to a pod: the scheduler tries again.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := pods.Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Spec.Tolerations = append(p.Spec.Tolerations, processRuntimeToleration)
		_, err = pods.Update(t.Context(), p, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("add the toleration: %v", err)
	}
	c.waitPod(t, ns, pod.Name, "Running on the node", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Spec.NodeName == n.name && p.Status.Phase == v1.PodRunning
	})
}

// waitOnlyProcessTaint waits until the process runtime's taint is the
// node's only NoSchedule or NoExecute taint.
func waitOnlyProcessTaint(t *testing.T, c *controlPlane, name string) {
	t.Helper()
	var taints []v1.Taint
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		node, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		taints = node.Spec.Taints
		for _, tn := range taints {
			if tn.Effect != v1.TaintEffectPreferNoSchedule && !tn.MatchTaint(&processRuntimeTaint) {
				return false, nil
			}
		}
		return len(taints) > 0, nil
	})
	if err != nil {
		t.Fatalf("node %s: taints %v, want only %v within %v: %v", name, taints, processRuntimeTaint, waitTimeout, err)
	}
}

// unschedulable is the message of the pod's PodScheduled condition when it
// is False for reason Unschedulable, "" otherwise.
func unschedulable(p *v1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
			return c.Message
		}
	}
	return ""
}

// nodeKubeconfig writes a kubeconfig whose user is node name's own
// identity (system:node:NAME of group system:nodes, minted with the
// cluster's CA), which the NodeRestriction admission plugin restricts as a
// kubelet's, and returns its path.
func nodeKubeconfig(t *testing.T, c *controlPlane, name string) string {
	t.Helper()
	key, der := loadClusterCA(t, c).issue(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: "system:node:" + name, Organization: []string{"system:nodes"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cp"] = &clientcmdapi.Cluster{Server: c.env["CP_APISERVER_URL"], CertificateAuthority: c.env["CP_CA_FILE"]}
	cfg.AuthInfos["node"] = &clientcmdapi.AuthInfo{
		ClientCertificateData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		ClientKeyData:         pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
	}
	cfg.Contexts["node"] = &clientcmdapi.Context{Cluster: "cp", AuthInfo: "node"}
	cfg.CurrentContext = "node"
	path := filepath.Join(t.TempDir(), "node.kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNodeRestrictionAndTheProcessTaint: as its own identity, a node may
// put its taints on its Node when it creates it, not change them later
// (NodeRestriction). So a process-runtime node whose existing Node lost the
// taint does not start, and says how to put it back; once an administrator
// did, it starts.
func TestNodeRestrictionAndTheProcessTaint(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	name := nodeName(t, "a")
	args := []string{"--kubeconfig", nodeKubeconfig(t, c, name), "--runtime", "process"}
	n := startNode(t, c, name, args...)
	wantProcessTaint(t, c, name, "registered as the node")
	n.signal(syscall.SIGTERM)
	setProcessTaint(t, c, name, false)

	// The node's own flags, its kubeconfig last (the later flag wins).
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, podwardBin, append([]string{"node", "--node-name", name, "--root", n.root,
		"--node-ip", "127.0.0.1", "--kubelet-port", strconv.Itoa(n.port), "--client-ca-file", c.env["CP_CA_FILE"]}, args...)...)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("podward node on a Node without its taint: %v, want exit code 1:\n%s", err, out)
	}
	if want := "kubectl taint node " + name + " podward.io/runtime=process:NoSchedule"; !strings.Contains(string(out), want) {
		t.Errorf("its output does not say %q:\n%s", want, out)
	}
	if got := runtimeTaints(t, c, name); len(got) != 0 {
		t.Errorf("taints %v: NodeRestriction let the node change them", got)
	}

	setProcessTaint(t, c, name, true)
	n.start()
	wantProcessTaint(t, c, name, "registered again")
}

// setProcessTaint puts the process runtime's taint on node name, or
// removes it, as an administrator.
func setProcessTaint(t *testing.T, c *controlPlane, name string, on bool) {
	t.Helper()
	nodes := c.client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		var taints []v1.Taint
		for _, tn := range node.Spec.Taints {
			if !tn.MatchTaint(&processRuntimeTaint) {
				taints = append(taints, tn)
			}
		}
		if on {
			taints = append(taints, processRuntimeTaint)
		}
		node.Spec.Taints = taints
		_, err = nodes.Update(t.Context(), node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("set the taint (%v) on node %s: %v", on, name, err)
	}
}

// TestNodeOnCRIDropsTheProcessTaint: a node that ran the process runtime
// and now runs the CRI runtime removes the process runtime's taint from
// its Node, and only it: a taint of the same key with another value is
// someone else's, as is any other.
func TestNodeOnCRIDropsTheProcessTaint(t *testing.T) {
	c := needControlPlane(t)
	rt := bintest.CRI()
	rt.Need(t)
	t.Parallel()
	name := nodeName(t, "a")
	n := startNode(t, c, name, "--runtime", "process")
	wantProcessTaint(t, c, name, "registered on the process runtime")
	n.signal(syscall.SIGTERM)
	others := []v1.Taint{
		{Key: "podward.io/runtime", Value: "other", Effect: v1.TaintEffectPreferNoSchedule},
		{Key: "example.com/keep", Value: "yes", Effect: v1.TaintEffectNoSchedule},
	}
	addTaints(t, c, name, others...)

	startNode(t, c, name, rt.Args...)
	node, err := c.client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range node.Spec.Taints {
		if tn.MatchTaint(&processRuntimeTaint) {
			t.Errorf("taints %v: the process runtime's is left on a CRI node", node.Spec.Taints)
		}
	}
	for _, o := range others {
		if !slices.ContainsFunc(node.Spec.Taints, func(tn v1.Taint) bool { return tn.MatchTaint(&o) && tn.Value == o.Value }) {
			t.Errorf("taints %v: %v was removed", node.Spec.Taints, o)
		}
	}
}

// addTaints adds taints to node name, as an administrator.
func addTaints(t *testing.T, c *controlPlane, name string, taints ...v1.Taint) {
	t.Helper()
	nodes := c.client.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := nodes.Get(t.Context(), name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		node.Spec.Taints = append(node.Spec.Taints, taints...)
		_, err = nodes.Update(t.Context(), node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("add taints %v to node %s: %v", taints, name, err)
	}
}
