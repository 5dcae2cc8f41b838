package cluster

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"

	"github.com/podward/podward/test/internal/bintest"
)

// nodeCondition is the status of the node's condition typ and its reason.
func nodeCondition(n *v1.Node, typ v1.NodeConditionType) (v1.ConditionStatus, string) {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c.Status, c.Reason
		}
	}
	return "", ""
}

// waitNode watches the Node until cond holds.
func (c *controlPlane) waitNode(t *testing.T, name, what string, within time.Duration, cond func(*v1.Node) bool) *v1.Node {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	lw := cache.NewListWatchFromClient(c.client.CoreV1().RESTClient(), "nodes", "", fields.OneTermEqualSelector("metadata.name", name))
	var last *v1.Node
	_, err := toolswatch.UntilWithSync(ctx, lw, &v1.Node{}, func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			last = o.(*v1.Node)
			return cond(last), nil
		}
		return false, nil
	}, func(ev watch.Event) (bool, error) {
		if n, ok := ev.Object.(*v1.Node); ok {
			last = n
			return cond(n), nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("node %s: no %s within %v: %v; last: %+v", name, what, within, err, last)
	}
	return last
}

func TestNodeRegistersReadyAndRenewsLease(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	name := nodeName(t, "a")
	n := startNode(t, c, name)
	node := c.waitNode(t, name, "Ready", readyTimeout, func(n *v1.Node) bool {
		st, _ := nodeCondition(n, v1.NodeReady)
		return st == v1.ConditionTrue
	})
	for k, want := range map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "node.kubernetes.io/podward": "true"} {
		if got := node.Labels[k]; got != want {
			t.Errorf("label %s = %q, want %q", k, got, want)
		}
	}
	if !strings.HasPrefix(node.Status.NodeInfo.ContainerRuntimeVersion, "podward-process://") {
		t.Errorf("containerRuntimeVersion = %q", node.Status.NodeInfo.ContainerRuntimeVersion)
	}
	if node.Status.DaemonEndpoints.KubeletEndpoint.Port != int32(n.port) {
		t.Errorf("kubelet port = %d, want %d", node.Status.DaemonEndpoints.KubeletEndpoint.Port, n.port)
	}
	if node.Status.Capacity.Cpu().IsZero() || node.Status.Allocatable.Memory().IsZero() {
		t.Errorf("capacity %v, allocatable %v: want the machine's", node.Status.Capacity, node.Status.Allocatable)
	}

	// The Lease is renewed every 10 s, as the kubelet does.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	lw := cache.NewListWatchFromClient(c.client.CoordinationV1().RESTClient(), "leases", "kube-node-lease", fields.OneTermEqualSelector("metadata.name", name))
	var first *metav1.MicroTime
	_, err := toolswatch.UntilWithSync(ctx, lw, &coordinationv1.Lease{}, nil, func(ev watch.Event) (bool, error) {
		l, ok := ev.Object.(*coordinationv1.Lease)
		if !ok || l.Spec.RenewTime == nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != name {
			return false, nil
		}
		if first == nil {
			first = l.Spec.RenewTime
			return false, nil
		}
		d := l.Spec.RenewTime.Sub(first.Time)
		t.Logf("lease renewed %v after the previous renewal", d.Round(time.Millisecond))
		return d > 0, nil
	})
	if err != nil {
		t.Fatalf("lease kube-node-lease/%s not renewed: %v", name, err)
	}
}

// TestNodeNotReadyWhenRuntimeUnreachable runs the node on a containerd of
// its own, then stops that containerd.
func TestNodeNotReadyWhenRuntimeUnreachable(t *testing.T) {
	c := needControlPlane(t)
	rt := bintest.CRI()
	rt.Need(t)
	t.Parallel()
	base := filepath.Join(os.TempDir(), "pw-cri-"+strconv.Itoa(os.Getpid()))
	// A port of its own for its registry: cri-up.sh's choice of a free
	// one races with other suites starting theirs at the same time.
	env := append(os.Environ(), "PODWARD_CRI_BASE="+base, "PODWARD_CRI_REGISTRY_PORT="+strconv.Itoa(freePort(t)))
	up := runScript(t, env, "../../hack/cri-up.sh")
	t.Cleanup(func() { runScript(t, append(env, "PODWARD_CRI_KEEP_CACHE=0"), "../../hack/cri-down.sh") })
	endpoint := strings.TrimPrefix(lastLine(up), "CRI_ENDPOINT=")
	name := nodeName(t, "a")
	startNode(t, c, name, "--runtime", "cri", "--cri-endpoint", endpoint)
	c.waitNode(t, name, "Ready", readyTimeout, func(n *v1.Node) bool {
		st, _ := nodeCondition(n, v1.NodeReady)
		return st == v1.ConditionTrue
	})
	pid, err := os.ReadFile(filepath.Join(base, "containerd.pid"))
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(strings.TrimSpace(string(pid)))
	proc, err := os.FindProcess(p)
	if err != nil {
		t.Fatal(err)
	}
	_ = proc.Kill()
	node := c.waitNode(t, name, "Ready=False", waitTimeout, func(n *v1.Node) bool {
		st, _ := nodeCondition(n, v1.NodeReady)
		return st == v1.ConditionFalse
	})
	_, reason := nodeCondition(node, v1.NodeReady)
	t.Logf("Ready=False, reason %s", reason)
}

func runScript(t *testing.T, env []string, script string, args ...string) string {
	t.Helper()
	cmd := execCommand(script, args...)
	cmd.Env = env
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	return string(out)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// TestSeedDemoThroughKubectl: the original demo pod, applied with kubectl
// to a podward node on containerd; `kubectl delete` returns once the defer
// containers are done, long before the 60 s grace period.
func TestSeedDemoThroughKubectl(t *testing.T) {
	c := needControlPlane(t)
	rt := bintest.CRI()
	rt.Need(t)
	t.Parallel()
	name := nodeName(t, "a")
	n := startNode(t, c, name, rt.Args...)
	seed, err := os.ReadFile("../../examples/defer-demo-seed.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n.apply(t, string(seed))
	c.waitPod(t, "default", "defer-demo", "Running and ready", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning && readyColumn(p) == "1/1"
	})
	// The defer containers' images are pre-pulled while it runs.
	waitEvent(t, c, "defer-demo", "Pulling", "defer-container pre-pull for last", waitTimeout)
	start := time.Now()
	c.mustKubectl(t, "delete", "pod", "defer-demo", "--timeout", "60s")
	took := time.Since(start)
	t.Logf("kubectl delete returned after %v (grace period 60 s)", took.Round(time.Millisecond))
	if took > 20*time.Second {
		t.Errorf("kubectl delete took %v: it should return as soon as the defer containers are done", took)
	}
	evs := podEvents(t, c, "defer-demo")
	order := []string{"Started first", "Started prestop", "DeferStarted last-but-one", "DeferCompleted last-but-one", "DeferStarted last", "DeferCompleted last", "Killing prestop"}
	i := 0
	for _, e := range evs {
		if i < len(order) && e == order[i] {
			i++
		}
	}
	if i < len(order) {
		t.Errorf("no event %q in order; events:\n%s", order[i], strings.Join(evs, "\n"))
	}
	out := c.mustKubectl(t, "get", "events", "--field-selector", "involvedObject.name=defer-demo")
	if !strings.Contains(out, "DeferCompleted") {
		t.Errorf("kubectl get events does not show the defer containers:\n%s", out)
	}
}

// podEvents lists a pod's events as "REASON CONTAINER" (the container from
// the field path), in the order podward recorded them.
func podEvents(t *testing.T, c *controlPlane, pod string) []string {
	t.Helper()
	list, err := c.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + pod})
	if err != nil {
		t.Fatal(err)
	}
	items := list.Items
	// The names end in the recording time in hex nanoseconds.
	at := func(e v1.Event) int64 {
		i := strings.LastIndexByte(e.Name, '.')
		n, _ := strconv.ParseInt(e.Name[i+1:], 16, 64)
		return n
	}
	sort.Slice(items, func(i, j int) bool { return at(items[i]) < at(items[j]) })
	var out []string
	for _, e := range items {
		ctr := ""
		if fp := e.InvolvedObject.FieldPath; strings.Contains(fp, "{") {
			ctr = " " + strings.TrimSuffix(fp[strings.IndexByte(fp, '{')+1:], "}")
		}
		out = append(out, e.Reason+ctr)
	}
	return out
}

// waitEvent waits for an event of the pod with reason whose message has
// contains.
func waitEvent(t *testing.T, c *controlPlane, pod, reason, contains string, within time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	lw := cache.NewListWatchFromClient(c.client.CoreV1().RESTClient(), "events", "default", fields.OneTermEqualSelector("involvedObject.name", pod))
	match := func(e *v1.Event) bool { return e.Reason == reason && strings.Contains(e.Message, contains) }
	_, err := toolswatch.UntilWithSync(ctx, lw, &v1.Event{}, func(store cache.Store) (bool, error) {
		for _, o := range store.List() {
			if match(o.(*v1.Event)) {
				return true, nil
			}
		}
		return false, nil
	}, func(ev watch.Event) (bool, error) {
		e, ok := ev.Object.(*v1.Event)
		return ok && match(e), nil
	})
	if err != nil {
		t.Fatalf("pod %s: no event %s %q within %v: %v", pod, reason, contains, within, err)
	}
}
