package cluster

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	toolswatch "k8s.io/client-go/tools/watch"

	"github.com/podward/podward/test/internal/bintest"
)

// podwardBin is the binary built once by TestMain, and login1Bin the
// stand-in logind (test/internal/login1standin) of the logind test.
var podwardBin, login1Bin string

func TestMain(m *testing.M) {
	// client-go keeps its connections to the API server until the end.
	bintest.LeakOptions = []goleak.Option{
		goleak.IgnoreAnyFunction("golang.org/x/net/http2.(*clientConnReadLoop).run"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreAnyFunction("net/http.(*persistConn).writeLoop"),
		// tools/watch.UntilWithSync waits for its informer to stop, not
		// for the informer watcher's event processor, which can be left
		// parked on its condition variable when the watch ends as the
		// informer stops.
		goleak.IgnoreAnyFunction("k8s.io/client-go/tools/watch.(*eventProcessor).run"),
	}
	os.Exit(bintest.Main(m, "cluster", &podwardBin, bintest.Program{Pkg: "github.com/podward/podward/test/internal/login1standin", Bin: &login1Bin}))
}

// The control plane comes from hack/with-control-plane.sh: its env file
// (KUBECONFIG, CP_CA_FILE, KUBECTL...) is in PODWARD_CP_ENV.
const (
	cpEnvEnv       = "PODWARD_CP_ENV"
	requireEnvName = "PODWARD_REQUIRE_CLUSTER"
)

// Deadlines: they bound waits on conditions; a passing test never waits
// for one to expire.
const (
	readyTimeout = 30 * time.Second
	waitTimeout  = 60 * time.Second
)

// controlPlane is the running control plane as its env file describes it.
type controlPlane struct {
	env    map[string]string
	client kubernetes.Interface
}

var (
	cpOnce sync.Once
	cp     *controlPlane
	cpErr  error
)

// needControlPlane returns the control plane, or skips (fails under
// PODWARD_REQUIRE_CLUSTER=1) without one.
func needControlPlane(t testing.TB) *controlPlane {
	t.Helper()
	path := os.Getenv(cpEnvEnv)
	if path == "" {
		msg := cpEnvEnv + " is not set: run the tests through hack/with-control-plane.sh (make test does)"
		if os.Getenv(requireEnvName) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	cpOnce.Do(func() { cp, cpErr = loadControlPlane(path) })
	if cpErr != nil {
		t.Fatal(cpErr)
	}
	return cp
}

func loadControlPlane(path string) (*controlPlane, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	env := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", env["KUBECONFIG"])
	if err != nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if env["KUBECTL"] == "" {
		env["KUBECTL"] = "kubectl"
	}
	return &controlPlane{env: env, client: client}, nil
}

// kubectl runs kubectl against the control plane, for at most within.
func (c *controlPlane) kubectl(within time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.env["KUBECTL"], append([]string{"--kubeconfig", c.env["KUBECONFIG"]}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w; stderr: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

func (c *controlPlane) mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := c.kubectl(waitTimeout, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// nodeName makes a node name unique to the test.
func nodeName(t testing.TB, suffix string) string {
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	return strings.Trim(name, "-") + "-" + suffix
}

// node is one `podward node` of a test.
type node struct {
	t    *testing.T
	cp   *controlPlane
	name string
	root string
	port int
	args []string // runtime flags
	env  []string // more of its environment ("KEY=value")

	cmd  *exec.Cmd
	done chan struct{}
	log  *lockedBuffer
	logs []*lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	// changed is closed at the next Write (see waitLine); nil when no one
	// waits.
	changed chan struct{}
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitLine waits until the buffer has n lines containing s, for at most
// within; it says whether it has.
func (l *lockedBuffer) waitLine(s string, n int, within time.Duration) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		if strings.Count(l.b.String(), s) >= n {
			l.mu.Unlock()
			return true
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline.C:
			return false
		}
	}
}

// startNode starts `podward node` named name on a root of its own, with
// runtime flags args (without --runtime, --runtime process: a node's
// runtime is always named), and waits until it registered. The cleanup stops it,
// deletes its pods' containers' leftovers by killing the node's processes,
// and deletes its Node object.
func startNode(t *testing.T, cp *controlPlane, name string, args ...string) *node {
	t.Helper()
	return startNodeEnv(t, cp, name, nil, args...)
}

// startNodeEnv is startNode with env added to the node's environment.
func startNodeEnv(t *testing.T, cp *controlPlane, name string, env []string, args ...string) *node {
	t.Helper()
	n := &node{t: t, cp: cp, name: name, root: t.TempDir(), port: freePort(t), args: args, env: env}
	n.start()
	t.Cleanup(func() {
		// What the test left bound to the node goes with it: deleted
		// while the node runs, so that it kills the containers. A grace
		// period of 0 would delete the object at once (a forced delete),
		// and the node could be stopped before it killed them: with 1 s,
		// the object goes once the node terminated the pod.
		ctx := context.Background()
		grace := int64(1)
		if n.cmd == nil {
			grace = 0
		}
		pods, _ := cp.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + name})
		if pods != nil {
			for _, p := range pods.Items {
				_ = cp.client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
				if n.cmd != nil {
					cp.waitPod(t, p.Namespace, p.Name, "deletion", waitTimeout, func(p *v1.Pod) bool { return p == nil })
				}
			}
		}
		if n.cmd != nil {
			n.signal(syscall.SIGTERM)
		}
		if t.Failed() {
			for i, l := range n.logs {
				t.Logf("--- log of node %s run #%d:\n%s", name, i+1, l.String())
			}
		}
		_ = cp.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		// Whatever still runs under the node's root (a shim and its
		// container, if a pod outlived its deletion) is killed.
		for _, pid := range bintest.ProcessesRunning(n.root + "/") {
			t.Errorf("process %d (%s) outlived the node's pods; killing it", pid, bintest.Cmdline(pid))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	return n
}

func (n *node) start() {
	t := n.t
	t.Helper()
	n.log = &lockedBuffer{}
	n.logs = append(n.logs, n.log)
	args := append([]string{"node", "--kubeconfig", n.cp.env["KUBECONFIG"], "--node-name", n.name,
		"--root", n.root, "--node-ip", "127.0.0.1", "--kubelet-port", strconv.Itoa(n.port),
		"--client-ca-file", n.cp.env["CP_CA_FILE"], "-v"}, n.args...)
	if !namesRuntime(n.args) {
		args = append(args, "--runtime", "process")
	}
	n.cmd = exec.Command(podwardBin, args...)
	n.cmd.Env = append(os.Environ(), n.env...)
	pr, pw := io.Pipe()
	n.cmd.Stdout, n.cmd.Stderr = pw, pw
	n.cmd.WaitDelay = 5 * time.Second
	if err := n.cmd.Start(); err != nil {
		t.Fatalf("start podward node: %v", err)
	}
	n.done = make(chan struct{})
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		registered := false
		for sc.Scan() {
			fmt.Fprintln(n.log, sc.Text())
			if !registered && strings.HasPrefix(sc.Text(), "podward: node "+n.name+" registered") {
				registered = true
				close(ready)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		_ = n.cmd.Wait()
		pw.Close()
		close(n.done)
	}()
	select {
	case <-ready:
		t.Logf("node %s up (pid %d)", n.name, n.cmd.Process.Pid)
	case <-n.done:
		t.Fatalf("podward node %s exited before it registered:\n%s", n.name, n.log.String())
	case <-time.After(readyTimeout):
		t.Fatalf("podward node %s did not register within %v:\n%s", n.name, readyTimeout, n.log.String())
	}
}

// namesRuntime reports whether args choose the node's runtime.
func namesRuntime(args []string) bool {
	return slices.ContainsFunc(args, func(a string) bool { return a == "--runtime" || strings.HasPrefix(a, "--runtime=") })
}

// signal sends sig to the node agent and waits for it to exit.
func (n *node) signal(sig syscall.Signal) {
	n.t.Helper()
	_ = n.cmd.Process.Signal(sig)
	select {
	case <-n.done:
	case <-time.After(30 * time.Second):
		_ = n.cmd.Process.Kill()
		<-n.done
		n.t.Errorf("node %s did not exit within 30s of %v", n.name, sig)
	}
	n.cmd = nil
}

// apply applies a pod manifest bound to the node: spec.nodeName is set,
// so that the scheduler does not place it on another test's node. The
// control plane's ServiceAccount admission gives the pod its
// kube-api-access-* volume, as in every real cluster.
func (n *node) apply(t *testing.T, manifest string) {
	t.Helper()
	manifest = strings.Replace(manifest, "\nspec:\n", "\nspec:\n  nodeName: "+n.name+"\n", 1)
	path := filepath.Join(t.TempDir(), "pod.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	n.cp.mustKubectl(t, "apply", "-f", path)
}

// waitPod watches the pod until cond holds for it (nil: the pod is gone).
func (c *controlPlane) waitPod(t *testing.T, ns, name, what string, within time.Duration, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	lw := cache.NewListWatchFromClient(c.client.CoreV1().RESTClient(), "pods", ns, fields.OneTermEqualSelector("metadata.name", name))
	var last *v1.Pod
	_, err := toolswatch.UntilWithSync(ctx, lw, &v1.Pod{}, func(store cache.Store) (bool, error) {
		items := store.List()
		if len(items) == 0 {
			return cond(nil), nil
		}
		last = items[0].(*v1.Pod)
		return cond(last), nil
	}, func(ev watch.Event) (bool, error) {
		p, _ := ev.Object.(*v1.Pod)
		if ev.Type == watch.Deleted {
			return cond(nil), nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s/%s: no %s within %v: %v; last seen: %s", ns, name, what, within, err, podSummary(last))
	}
	return last
}

func podSummary(p *v1.Pod) string {
	if p == nil {
		return "(none)"
	}
	return fmt.Sprintf("phase %s, deletionTimestamp %v, ready %s", p.Status.Phase, p.DeletionTimestamp, readyColumn(p))
}

// readyColumn is kubectl's READY for a pod: ready regular containers and
// sidecars, over their number.
//
// A completed init container reports ready too (as the kubelet's do), but
// kubectl counts only the sidecars among the init containers.
func readyColumn(p *v1.Pod) string {
	total, ready := len(p.Spec.Containers), 0
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			total++
			sidecars[c.Name] = true
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if cs.Ready && sidecars[cs.Name] {
			ready++
		}
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Ready {
			ready++
		}
	}
	return fmt.Sprintf("%d/%d", ready, total)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func execCommand(name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}
