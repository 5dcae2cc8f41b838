package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"

	"github.com/podward/podward/test/internal/bintest"
)

// addonsLockFile serialises the runs of TestClusterNetworking on a machine:
// kube-proxy writes the host's iptables rules, so two at once (two test
// runs, each with a control plane of its own and the same service CIDR)
// would overwrite each other's.
const addonsLockFile = "/run/podward-addons.lock"

// Deadlines of the add-ons test: a rollout pulls images and starts pods on
// a machine busy with the other tests.
const (
	addonsRollout = 3 * time.Minute
	addonsLockMax = 10 * time.Minute
)

const addonsWorkloads = `
apiVersion: v1
kind: Namespace
metadata: {name: NS}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: NS}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      nodeSelector: {kubernetes.io/hostname: NODE}
      terminationGracePeriodSeconds: 2
      containers:
      - name: web
        image: busybox
        command: ["sh", "-c", "mkdir -p /www && hostname > /www/index.html && exec httpd -f -p 8080 -h /www"]
        ports: [{containerPort: 8080}]
        readinessProbe:
          httpGet: {path: /index.html, port: 8080}
          periodSeconds: 1
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: NS}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 8080}]
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: lister, namespace: NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: pod-lister, namespace: NS}
rules:
- {apiGroups: [""], resources: [pods], verbs: [list]}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: lister-lists-pods, namespace: NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: pod-lister}
subjects: [{kind: ServiceAccount, name: lister, namespace: NS}]
`

// addonsClientPod runs clusterclient (mounted from the host) with ARGS in
// a busybox container, once.
const addonsClientPod = `
apiVersion: v1
kind: Pod
metadata: {name: NAME, namespace: NS}
spec:
  nodeSelector: {kubernetes.io/hostname: NODE}
  serviceAccountName: SA
  restartPolicy: Never
  containers:
  - name: client
    image: busybox
    command: ["/cc/clusterclient", ARGS]
    volumeMounts: [{name: cc, mountPath: /cc, readOnly: true}]
  volumes:
  - {name: cc, hostPath: {path: DIR, type: Directory}}
`

// TestClusterNetworking: a real cluster around a podward node on the CRI
// runtime (issue 23, item 6). hack/addons-up.sh runs kube-proxy (a
// DaemonSet on the host network) and CoreDNS (a Deployment on the pod
// network, behind kube-dns) as pods on the node; the scheduler places a
// Deployment of 3 web replicas on it, behind a ClusterIP Service, and
//   - a pod reaches the Service by its DNS name web.NS.svc.cluster.local
//     (CoreDNS through the kube-dns ClusterIP, kube-proxy's rules to the
//     replicas: pod -> ClusterIP -> pod on one bridge);
//   - the host reaches the ClusterIP through kube-proxy's rules;
//   - a pod with client-go's in-cluster config (KUBERNETES_SERVICE_HOST, the
//     `kubernetes` Service through kube-proxy to the API server, its
//     service-account token) lists the pods of its namespace, which a
//     RoleBinding allows, and is refused the secrets, which none does.
//
// It needs a control plane reachable from pods (PODWARD_CP_POD_REACHABLE=1:
// hack/with-control-plane.sh sets it as root) and a CRI environment with
// a CNI network whose containerd pulls registry.k8s.io through the local
// registry (hack/with-cri.sh). Its workloads are pinned to its node, in a
// namespace of its own; one run at a time per machine (addonsLockFile).
func TestClusterNetworking(t *testing.T) {
	c := needControlPlane(t)
	rt := bintest.CRI()
	rt.Need(t)
	criBase := addonsPreconditions(t, c)
	// The long builds run before t.Parallel, while the suite's other
	// tests wait: a cold CoreDNS build takes minutes of both cores.
	cc := buildClusterClient(t)
	env := append(os.Environ(), "PODWARD_CRI_BASE="+criBase, "PODWARD_CP_ENV="+os.Getenv(cpEnvEnv))
	runScript(t, env, "../../hack/addons-images.sh")
	t.Parallel()
	holdAddonsLock(t)

	name := nodeName(t, "a")
	env = append(env, "PODWARD_ADDONS_NODE_NAME="+name)
	down := func() { runScript(t, env, "../../hack/addons-down.sh") }
	t.Cleanup(down) // also after a failed addons-up.sh
	up := runScript(t, env, "../../hack/addons-up.sh")
	dnsIP := scriptValue(t, up, "DNS_IP")
	n := startNode(t, c, name, slices.Concat(rt.Args, []string{"--cluster-dns", dnsIP, "--cluster-domain", "cluster.local"})...)
	// before the node's own cleanup: the add-ons' pods go while it runs
	t.Cleanup(down)
	c.rollout(t, "kube-system", "daemonset/kube-proxy")
	c.rollout(t, "kube-system", "deployment/coredns")

	ns := name
	applyManifest(t, c, strings.NewReplacer("NS", ns, "NODE", name).Replace(addonsWorkloads))
	t.Cleanup(func() {
		if _, err := c.kubectl(addonsRollout, "delete", "namespace", ns, "--timeout", "150s"); err != nil {
			t.Error(err)
		}
	})
	c.rollout(t, ns, "deployment/web")
	web := webReplicas(t, c, ns, name)
	// kube-proxy routes to the endpoints the EndpointSlice controller
	// lists, which follows the replicas' readiness, after the rollout.
	c.waitReadyEndpoints(t, ns, "web", len(web))

	dnsFromPod := func(getter string) func(*testing.T) {
		return func(t *testing.T) {
			url := "http://web." + ns + ".svc.cluster.local/"
			out := runClientPod(t, c, ns, name, getter, "default", cc, `"get", "`+url+`", "12"`)
			var answers []string
			for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
				if !strings.HasPrefix(line, "clusterclient:") { // its retries, on stderr
					answers = append(answers, line)
				}
			}
			checkAnswers(t, "GET "+url+" in a pod", answers, web)
		}
	}
	clusterIPFromHost := func(t *testing.T) {
		svc, err := c.client.CoreV1().Services(ns).Get(context.Background(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		checkAnswers(t, "GET "+svc.Spec.ClusterIP+" on the host", getFromHost(t, "http://"+svc.Spec.ClusterIP+"/", 12), web)
	}
	t.Run("DNSNameFromPod", dnsFromPod("getter"))
	t.Run("ClusterIPFromHost", clusterIPFromHost)
	t.Run("InClusterClient", func(t *testing.T) {
		out := runClientPod(t, c, ns, name, "lister", "lister", cc, `"list-pods"`)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		cidr, err := netip.ParsePrefix(c.env["CP_SERVICE_CIDR"])
		if err != nil {
			t.Fatalf("CP_SERVICE_CIDR: %v", err)
		}
		// the `kubernetes` Service: the service CIDR's first address
		want := []string{"host: https://" + cidr.Addr().Next().String() + ":443", "pods: ", "secrets: forbidden"}
		if len(lines) != 3 || lines[0] != want[0] || !strings.HasPrefix(lines[1], want[1]) || lines[2] != want[2] {
			t.Fatalf("clusterclient list-pods said:\n%s\nwant the lines %q (pods: NAME...)", out, want)
		}
		listed := strings.Fields(strings.TrimPrefix(lines[1], "pods: "))
		for _, p := range slices.Concat(web, []string{"lister"}) {
			if !slices.Contains(listed, p) {
				t.Errorf("the in-cluster client listed %v, not %s", listed, p)
			}
		}
	})
	// Issue 23 item 6's last point: the agent's kill and restart change
	// nothing the add-ons and the web replicas see, and the Service
	// still answers by its name in a pod and by its ClusterIP on the host.
	t.Run("AgentKillChangesNothing", func(t *testing.T) {
		agentKillKeepsPods(t, c, n, []string{"kube-system", ns}, func(t *testing.T) []string {
			t.Run("DNSNameFromPod", dnsFromPod("getter-after"))
			t.Run("ClusterIPFromHost", clusterIPFromHost)
			return []string{"getter-after"}
		})
	})
}

// addonsPreconditions checks what the test needs of its environment and
// returns the CRI environment's base dir.
func addonsPreconditions(t *testing.T, c *controlPlane) string {
	t.Helper()
	if c.env["CP_APISERVER_POD_URL"] == "" {
		msg := "the control plane is not reachable from pods (no CP_APISERVER_POD_URL in " + os.Getenv(cpEnvEnv) + "): start it with PODWARD_CP_POD_REACHABLE=1 (hack/with-control-plane.sh does as root)"
		if os.Getenv(requireEnvName) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ep := os.Getenv(bintest.CRIEndpointEnv)
	sock := strings.TrimPrefix(ep, "unix://")
	if sock == ep || filepath.Base(sock) != "containerd.sock" {
		t.Fatalf("%s=%s is not a CRI environment of hack/cri-up.sh (unix://BASE/containerd.sock)", bintest.CRIEndpointEnv, ep)
	}
	return filepath.Dir(sock)
}

// buildClusterClient builds test/internal/clusterclient as a static
// binary into a directory of its own (the pods mount it).
func buildClusterClient(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := execCommand("go", "build", "-o", filepath.Join(dir, "clusterclient"), "github.com/podward/podward/test/internal/clusterclient")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build clusterclient: %v\n%s", err, out)
	}
	return dir
}

// holdAddonsLock takes addonsLockFile for the rest of the test, waiting
// for at most addonsLockMax.
func holdAddonsLock(t *testing.T) {
	t.Helper()
	f, err := os.OpenFile(addonsLockFile, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	deadline := time.NewTimer(addonsLockMax)
	defer deadline.Stop()
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			t.Fatalf("flock %s: %v", addonsLockFile, err)
		}
		select {
		case <-retry.C:
		case <-deadline.C:
			holder, _ := os.ReadFile(addonsLockFile)
			t.Fatalf("%s is held for more than %v (by %s): another run's kube-proxy owns the host's service rules", addonsLockFile, addonsLockMax, strings.TrimSpace(string(holder)))
		}
	}
	_ = f.Truncate(0)
	_, _ = fmt.Fprintf(f, "pid %d (%s)\n", os.Getpid(), t.Name())
}

// scriptValue is KEY's value in a script's KEY=value lines.
func scriptValue(t *testing.T, out, key string) string {
	t.Helper()
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, key+"="); ok && v != "" {
			return v
		}
	}
	t.Fatalf("no %s= line in:\n%s", key, out)
	return ""
}

func applyManifest(t *testing.T, c *controlPlane, manifest string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "objects.yaml")
	if err := os.WriteFile(path, []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	c.mustKubectl(t, "apply", "-f", path)
}

// rollout waits until kubectl says what is rolled out.
func (c *controlPlane) rollout(t *testing.T, ns, what string) {
	t.Helper()
	if out, err := c.kubectl(addonsRollout+10*time.Second, "-n", ns, "rollout", "status", what, "--timeout", addonsRollout.String()); err != nil {
		pods, _ := c.kubectl(waitTimeout, "get", "pods", "-A", "-o", "wide")
		t.Fatalf("%s/%s not rolled out: %v\n%s\npods:\n%s", ns, what, err, out, pods)
	}
}

// webReplicas are the names of the web Deployment's pods: 3, each placed
// by the scheduler (the template names no node) on the node.
func webReplicas(t *testing.T, c *controlPlane, ns, node string) []string {
	t.Helper()
	pods, err := c.client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName != node || p.Status.Phase != v1.PodRunning || p.Status.PodIP == "" {
			t.Errorf("web replica %s: node %q, phase %s, IP %q; want Running on %s with an IP", p.Name, p.Spec.NodeName, p.Status.Phase, p.Status.PodIP, node)
		}
		names = append(names, p.Name)
	}
	if len(names) != 3 {
		t.Fatalf("web replicas %v, want 3", names)
	}
	return names
}

// waitReadyEndpoints waits until the EndpointSlices of service list n
// ready endpoints.
func (c *controlPlane) waitReadyEndpoints(t *testing.T, ns, service string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	lw := cache.NewFilteredListWatchFromClient(c.client.DiscoveryV1().RESTClient(), "endpointslices", ns, func(o *metav1.ListOptions) {
		o.LabelSelector = discoveryv1.LabelServiceName + "=" + service
	})
	ready := 0
	count := func(store cache.Store) (bool, error) {
		ready = 0
		for _, o := range store.List() {
			for _, ep := range o.(*discoveryv1.EndpointSlice).Endpoints {
				if ep.Conditions.Ready == nil || *ep.Conditions.Ready {
					ready++
				}
			}
		}
		return ready == n, nil
	}
	var store cache.Store
	_, err := toolswatch.UntilWithSync(ctx, lw, &discoveryv1.EndpointSlice{}, func(s cache.Store) (bool, error) {
		store = s
		return count(s)
	}, func(watch.Event) (bool, error) { return count(store) })
	if err != nil {
		t.Fatalf("service %s/%s: %d ready endpoints, not %d, within %v: %v", ns, service, ready, n, waitTimeout, err)
	}
}

// runClientPod runs clusterclient with args (a YAML list's items) in pod
// name, with the service account sa, and returns its output once it
// succeeded.
func runClientPod(t *testing.T, c *controlPlane, ns, node, name, sa, dir, args string) string {
	t.Helper()
	applyManifest(t, c, strings.NewReplacer("NAME", name, "NS", ns, "NODE", node, "SA", sa, "DIR", dir, "ARGS", args).Replace(addonsClientPod))
	p := c.waitPod(t, ns, name, "completion", addonsRollout, func(p *v1.Pod) bool {
		return p != nil && (p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed)
	})
	out, err := c.kubectl(waitTimeout, "-n", ns, "logs", name)
	if err != nil || p.Status.Phase != v1.PodSucceeded {
		t.Fatalf("pod %s: %s (logs: %v):\n%s", name, p.Status.Phase, err, out)
	}
	return out
}

// getFromHost GETs url n times from the host, retrying until the first
// answer (kube-proxy programs a new Service's rules within a second or two).
func getFromHost(t *testing.T, url string, n int) []string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.NewTimer(waitTimeout)
	defer deadline.Stop()
	retry := time.NewTicker(time.Second)
	defer retry.Stop()
	var answers []string
	for len(answers) < n {
		resp, err := client.Get(url)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				answers = append(answers, strings.TrimSpace(string(body)))
				continue
			}
			err = fmt.Errorf("%s %q %v", resp.Status, body, rerr)
		}
		if len(answers) > 0 {
			t.Fatalf("GET %s after %d answers: %v", url, len(answers), err)
		}
		select {
		case <-retry.C:
		case <-deadline.C:
			t.Fatalf("GET %s: no answer within %v: %v", url, waitTimeout, err)
		}
	}
	return answers
}

// checkAnswers: every answer is a replica's name (its hostname), and the
// Service spread them over more than one replica.
func checkAnswers(t *testing.T, what string, answers, replicas []string) {
	t.Helper()
	seen := map[string]bool{}
	for _, a := range answers {
		if !slices.Contains(replicas, a) {
			t.Errorf("%s answered %q, not one of the replicas %v", what, a, replicas)
		}
		seen[a] = true
	}
	if len(answers) < 2 || len(seen) < 2 {
		t.Errorf("%s: answers %v, want them from more than one of the replicas %v", what, answers, replicas)
	}
	t.Logf("%s: %d answers from %d replicas", what, len(answers), len(seen))
}
