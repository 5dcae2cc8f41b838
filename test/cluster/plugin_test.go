package cluster

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	v1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/podward/podward/test/internal/bintest"
)

// The kubectl plugin (`kubectl podward`, the podward binary linked as
// kubectl-podward) run by the real kubectl against a podward node.

// proxyableAddresses numbers the addresses proxyableAddress hands out.
var proxyableAddresses atomic.Int32

// proxyableAddress adds an address of its own to the loopback interface,
// for a node to register as its InternalIP, and removes it at the end of
// the test. The API server's node proxy refuses a node whose address is not
// global unicast (isProxyableHostname in kubernetes'
// pkg/registry/core/node/strategy.go: "address not allowed"), so a node on
// 127.0.0.1 is not reachable through /api/v1/nodes/NAME/proxy. The address
// is in 198.18.0.0/15 (RFC 2544, for tests), on this machine: nothing
// leaves it. Without root or ip(8) the test is skipped (it fails under
// PODWARD_REQUIRE_CLUSTER=1).
//
// Each call of a test process gets its own address (the process's ID and a
// count, over the 2^17 addresses of the block); one already on lo (a test
// process killed before its cleanup, another's at the same place) is
// passed over.
func proxyableAddress(t *testing.T) string {
	t.Helper()
	const block = 1 << 17 // 198.18.0.0/15
	var addr string
	var out []byte
	var err error
	for range 16 {
		off := (os.Getpid()*64 + int(proxyableAddresses.Add(1))) % block
		addr = fmt.Sprintf("198.%d.%d.%d", 18+off>>16, (off>>8)&0xff, off&0xff)
		out, err = execCommand("ip", "addr", "add", addr+"/32", "dev", "lo").CombinedOutput()
		if err == nil || !strings.Contains(string(out), "already assigned") {
			break
		}
	}
	if err != nil {
		msg := fmt.Sprintf("cannot add %s to lo for the node proxy (root and ip(8) needed): %v: %s", addr, err, out)
		if os.Getenv(requireEnvName) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	t.Cleanup(func() {
		if out, err := execCommand("ip", "addr", "del", addr+"/32", "dev", "lo").CombinedOutput(); err != nil {
			t.Errorf("remove %s from lo: %v: %s", addr, err, out)
		}
	})
	return addr
}

// pluginPath is a PATH with kubectl-podward first: a directory with a link
// of that name to the podward binary, as `make kubectl-plugin` makes.
func pluginPath(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Symlink(podwardBin, filepath.Join(dir, "kubectl-podward")); err != nil {
		t.Fatal(err)
	}
	return dir + string(os.PathListSeparator) + os.Getenv("PATH")
}

// plugin runs the real kubectl, `kubectl podward ARGS`, with the plugin on
// PATH and the control plane in KUBECONFIG (kubectl takes no flag before
// a plugin's name).
func (c *controlPlane) plugin(path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := c.pluginCommand(ctx, path, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("kubectl podward %s: %w; stderr: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}

func (c *controlPlane) pluginCommand(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.env["KUBECTL"], append([]string{"podward"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+path, "KUBECONFIG="+c.env["KUBECONFIG"])
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

func (c *controlPlane) mustPlugin(t *testing.T, path string, args ...string) string {
	t.Helper()
	out, err := c.plugin(path, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// deferState is the state of a defer container in the statuses the node
// published in the pod's annotation.
func deferState(p *v1.Pod, name string) v1.ContainerState {
	var sts []v1.ContainerStatus
	if p != nil {
		_ = json.Unmarshal([]byte(p.Annotations["pod.alpha.kubernetes.io/defer-container-statuses"]), &sts)
	}
	for _, st := range sts {
		if st.Name == name {
			return st.State
		}
	}
	return v1.ContainerState{}
}

// deferSection is describe's Defer Containers section.
func deferSection(t *testing.T, describe string) string {
	t.Helper()
	_, section, ok := strings.Cut(describe, "\nDefer Containers:\n")
	if !ok {
		t.Fatalf("kubectl podward describe has no Defer Containers section:\n%s", describe)
	}
	section, _, _ = strings.Cut(section, "\nConditions:")
	return section
}

const pluginJob = `
apiVersion: v1
kind: Pod
metadata:
  name: plugin-job
  annotations:
    pod.alpha.kubernetes.io/defer-containers: '[{"name": "cleanup", "image": "busybox", "command": ["/bin/sh", "-c", "echo cleaning up; echo cleaned"]}]'
spec:
  restartPolicy: Never
  containers:
  - name: work
    image: busybox
    command: ["/bin/sh", "-c", "echo working"]
`

// TestKubectlPluginEndedPod: a pod ran to completion and its defer
// container ran after it. The API server refuses `kubectl logs -c
// cleanup` (the name is not in the pod's spec); `kubectl podward logs`
// reads it from the node through the node proxy, as does `kubectl get
// --raw` on the same path; `kubectl podward describe` shows its state. The
// node serves it for as long as the pod's API object exists. On both
// runtimes (busybox from the test registry on the CRI one).
func TestKubectlPluginEndedPod(t *testing.T) {
	c := needControlPlane(t)
	bintest.EachRuntime(t, func(t *testing.T, rt bintest.Runtime) {
		testPluginEndedPod(t, c, rt)
	})
}

func testPluginEndedPod(t *testing.T, c *controlPlane, rt bintest.Runtime) {
	addr := proxyableAddress(t)
	name := nodeName(t, "a")
	n := startNode(t, c, name, append([]string{"--node-ip", addr}, rt.Args...)...)
	path := pluginPath(t)
	pod := "plugin-job-" + rt.Name
	n.apply(t, strings.Replace(pluginJob, "name: plugin-job", "name: "+pod, 1))
	c.waitPod(t, "default", pod, "Succeeded with its defer container done", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodSucceeded && deferState(p, "cleanup").Terminated != nil
	})

	if out, err := c.kubectl(waitTimeout, "logs", pod, "-c", "cleanup"); err == nil || !strings.Contains(err.Error(), "container cleanup is not valid for pod "+pod) {
		t.Errorf("kubectl logs -c cleanup: %q, %v; want the API server's refusal", out, err)
	}
	const want = "cleaning up\ncleaned\n"
	if out := c.mustPlugin(t, path, "logs", pod, "-c", "cleanup"); out != want {
		t.Errorf("kubectl podward logs -c cleanup = %q, want %q", out, want)
	}
	if out := c.mustPlugin(t, path, "logs", pod, "-c", "cleanup", "--tail", "1", "--kubeconfig", c.env["KUBECONFIG"], "-n", "default"); out != "cleaned\n" {
		t.Errorf("kubectl podward logs --tail 1 = %q, want the last line", out)
	}
	if out := c.mustPlugin(t, path, "logs", pod, "work"); out != "working\n" {
		t.Errorf("kubectl podward logs plugin-job work = %q: a regular container reads the same", out)
	}
	raw := c.mustKubectl(t, "get", "--raw", "/api/v1/nodes/"+name+"/proxy/containerLogs/default/"+pod+"/cleanup")
	if raw != want {
		t.Errorf("kubectl get --raw .../containerLogs/default/plugin-job/cleanup = %q, want %q", raw, want)
	}

	// kubectl's words for what cannot be read.
	out, err := c.plugin(path, "logs", pod, "-c", "nope")
	if err == nil || !strings.Contains(err.Error(), "error: container nope is not valid for pod "+pod+" out of: work, cleanup (defer)") {
		t.Errorf("kubectl podward logs -c nope: %q, %v", out, err)
	}
	out, err = c.plugin(path, "logs", pod, "-c", "cleanup", "--previous")
	if err == nil || !strings.Contains(err.Error(), `Error from server (BadRequest): previous terminated container "cleanup" in pod "`+pod+`" not found`) {
		t.Errorf("kubectl podward logs --previous: %q, %v; want the node's refusal", out, err)
	}

	describe := c.mustPlugin(t, path, "describe", pod)
	section := deferSection(t, describe)
	for _, want := range []string{"  cleanup:\n", "    State:          Terminated\n      Reason:       Completed\n      Exit Code:    0\n", "    Restart Count:  0\n"} {
		if !strings.Contains(section, want) {
			t.Errorf("Defer Containers section lacks %q:\n%s", want, section)
		}
	}
	// The rest is kubectl describe pod's.
	kubectlDescribe := c.mustKubectl(t, "describe", "pod", pod)
	for _, line := range []string{"Name:", "Namespace:", "Node:", "Status:", "QoS Class:"} {
		if got, want := describeLine(describe, line), describeLine(kubectlDescribe, line); got != want {
			t.Errorf("kubectl podward describe: %q, kubectl describe: %q", got, want)
		}
	}
	if !strings.Contains(describe, "DeferCompleted") {
		t.Errorf("kubectl podward describe shows no DeferCompleted event:\n%s", describe)
	}
}

// describeLine is the first line of describe's output that starts with
// prefix.
func describeLine(describe, prefix string) string {
	for _, l := range strings.Split(describe, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}

const pluginDeleted = `
apiVersion: v1
kind: Pod
metadata:
  name: plugin-del
  annotations:
    pod.alpha.kubernetes.io/defer-containers: '[{"name": "flush", "image": "busybox", "command": ["/bin/bash", "-c", "echo flushing; until [ -e {{.Dir}}/go ]; do sleep 0.05; done; echo flushed"]}]'
spec:
  terminationGracePeriodSeconds: 60
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c", "trap 'exit 0' TERM; echo serving; while true; do sleep 100 & wait; done"]
`

// TestKubectlPluginDeletedPod: a deleted pod's defer container runs while
// the pod terminates; meanwhile `kubectl podward logs` reads it, `-f`
// follows it to its end, and describe shows it Running. Once the node has
// deleted the terminated pod's object, there is nothing to read, as for
// any container of a pod that is gone.
func TestKubectlPluginDeletedPod(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	addr := proxyableAddress(t)
	n := startNode(t, c, nodeName(t, "a"), "--node-ip", addr)
	path := pluginPath(t)
	dir := t.TempDir()
	n.apply(t, strings.ReplaceAll(pluginDeleted, "{{.Dir}}", dir))
	c.waitPod(t, "default", "plugin-del", "Running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning
	})
	c.mustKubectl(t, "delete", "pod", "plugin-del", "--wait=false")
	c.waitPod(t, "default", "plugin-del", "its defer container running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && deferState(p, "flush").Running != nil
	})

	waitPluginLog(t, c, path, "flushing", "logs", "plugin-del", "-c", "flush")
	if out := c.mustPlugin(t, path, "logs", "plugin-del", "-c", "flush"); out != "flushing\n" {
		t.Errorf("kubectl podward logs -c flush while it runs = %q, want its first line", out)
	}
	if section := deferSection(t, c.mustPlugin(t, path, "describe", "pod/plugin-del")); !strings.Contains(section, "  flush:\n") ||
		!strings.Contains(section, "    State:          Running\n") {
		t.Errorf("Defer Containers section of the terminating pod:\n%s\nwant flush Running", section)
	}

	// -f: from what it wrote so far to its last line, then the end.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := c.pluginCommand(ctx, path, "logs", "-f", "plugin-del", "-c", "flush")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lines []string
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if sc.Text() == "flushing" {
			touch(t, filepath.Join(dir, "go"))
		}
	}
	err = cmd.Wait()
	if got := strings.Join(lines, "\n"); err != nil || got != "flushing\nflushed" {
		t.Errorf("kubectl podward logs -f: %q, %v (stderr %s); want both lines, then the end", got, err, stderr.String())
	}

	c.waitPod(t, "default", "plugin-del", "deletion", waitTimeout, func(p *v1.Pod) bool { return p == nil })
	out, err := c.plugin(path, "logs", "plugin-del", "-c", "flush")
	if want := `error: error from server (NotFound): pods "plugin-del" not found in namespace "default"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("kubectl podward logs of a pod gone: %q, %v; want %q", out, err, want)
	}
}

// waitPluginLog runs `kubectl podward ARGS -f` until a line has want: the
// status that said the container runs may come before its first line.
func waitPluginLog(t *testing.T, c *controlPlane, path, want string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := c.pluginCommand(ctx, path, append(args, "-f")...)
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
	t.Fatalf("kubectl podward %s -f ended without %q: %q; stderr: %s", strings.Join(args, " "), want, seen, stderr.String())
}

// TestKubectlPluginNeedsNodesProxy: the node proxy is authorized by the API
// server as get on nodes/proxy; a user who may read pods, and their logs
// through pods/log, is refused it in the API server's words, until given
// it.
func TestKubectlPluginNeedsNodesProxy(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	addr := proxyableAddress(t)
	name := nodeName(t, "a")
	n := startNode(t, c, name, "--node-ip", addr)
	path := pluginPath(t)
	n.apply(t, strings.Replace(pluginJob, "name: plugin-job", "name: plugin-rbac", 1))
	c.waitPod(t, "default", "plugin-rbac", "Succeeded with its defer container done", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodSucceeded && deferState(p, "cleanup").Terminated != nil
	})
	user := "plugin-reader-" + randomSuffix(t)
	c.bindPodReader(t, user)
	kubeconfig := c.userKubeconfig(t, user)

	out, err := c.plugin(path, "logs", "plugin-rbac", "-c", "cleanup", "--kubeconfig", kubeconfig)
	want := fmt.Sprintf(`Error from server (Forbidden): nodes %q is forbidden: User %q cannot get resource "nodes/proxy" in API group "" at the cluster scope`, name, user)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("kubectl podward logs without nodes/proxy: %q, %v; want %q", out, err, want)
	}
	c.bindNodesRole(t, user, "proxy")
	if out := c.mustPlugin(t, path, "logs", "plugin-rbac", "-c", "cleanup", "--kubeconfig", kubeconfig); out != "cleaning up\ncleaned\n" {
		t.Errorf("kubectl podward logs with nodes/proxy = %q", out)
	}
}

// bindPodReader lets user get and list pods and events, and read pods/log,
// with a ClusterRole and its binding removed when the test ends.
func (c *controlPlane) bindPodReader(t *testing.T, user string) {
	t.Helper()
	ctx := t.Context()
	name := user + "-pods"
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods", "pods/log", "events"},
			Verbs: []string{"get", "list"}}},
	}
	if _, err := c.client.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.client.RbacV1().ClusterRoles().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if _, err := c.client.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.client.RbacV1().ClusterRoleBindings().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		sar, err := c.client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: user, Groups: []string{"system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: "default", Verb: "get", Version: "v1", Resource: "pods"},
		}}, metav1.CreateOptions{})
		return err == nil && sar.Status.Allowed, err
	})
	if err != nil {
		t.Fatalf("%s may still not get pods: %v", user, err)
	}
}

// userKubeconfig is a kubeconfig for the control plane as user, with a
// client certificate the cluster's CA signed.
func (c *controlPlane) userKubeconfig(t *testing.T, user string) string {
	t.Helper()
	cert := loadClusterCA(t, c).clientCert(t, user)
	key, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "user.crt"), filepath.Join(dir, "user.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Certificate[0]}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: key}), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: cp
  cluster: {server: %q, certificate-authority: %q}
users:
- name: %s
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: cp
  context: {cluster: cp, user: %s}
current-context: cp
`, c.env["CP_APISERVER_URL"], c.env["CP_CA_FILE"], user, certFile, keyFile, user)
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
