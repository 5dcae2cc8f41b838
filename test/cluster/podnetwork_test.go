package cluster

import (
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/test/internal/bintest"
)

// podNetworkNodeIP is the node's address in TestPodNetworkByDefault: not
// 127.0.0.1, which is also what the runtime assumes without one.
const podNetworkNodeIP = "127.0.0.3"

const podNetworkManifest = `
apiVersion: v1
kind: Pod
metadata:
  name: pod-network
spec:
  containers:
  - name: web
    image: busybox
    command: ["sh", "-c", "echo HOST_IP=$HOST_IP POD_IP=$POD_IP > /out/addresses; mkdir -p /www && echo served > /www/index.html && trap 'exit 0' TERM; httpd -f -p 80 -h /www & wait"]
    env:
    - name: HOST_IP
      valueFrom: {fieldRef: {fieldPath: status.hostIP}}
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    ports:
    - {containerPort: 80, hostPort: PORT}
    readinessProbe:
      httpGet: {path: /index.html, port: 80}
      periodSeconds: 1
    volumeMounts:
    - {name: out, mountPath: /out}
  volumes:
  - name: out
    hostPath: {path: OUT, type: Directory}
`

// TestPodNetworkByDefault: `podward node --runtime cri` without
// --cri-pod-network gives a pod without hostNetwork a network namespace and
// an IP of its own, as a kubelet's node does: the Pod's status.podIP(s)
// are its own, status.hostIP(s) the node's, the downward API says the same
// inside it, and its hostPort is mapped (CNI's portmap) on the node's
// address. The CRI environment (hack/with-cri.sh) has a CNI network.
func TestPodNetworkByDefault(t *testing.T) {
	c := needControlPlane(t)
	rt := bintest.CRI()
	rt.Need(t)
	t.Parallel()
	name := nodeName(t, "a")
	n := startNode(t, c, name, slices.Concat(rt.Args, []string{"--node-ip", podNetworkNodeIP})...)
	out := t.TempDir()
	port := freePort(t)
	manifest := strings.NewReplacer("PORT", strconv.Itoa(port), "OUT", out).Replace(podNetworkManifest)
	n.apply(t, manifest)
	p := c.waitPod(t, "default", "pod-network", "Running and ready", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning && readyColumn(p) == "1/1"
	})
	t.Cleanup(func() { c.mustKubectl(t, "delete", "pod", "pod-network", "--timeout", "60s") })
	st := p.Status
	ip := net.ParseIP(st.PodIP)
	if ip == nil || ip.IsLoopback() || st.PodIP == st.HostIP {
		t.Fatalf("podIP %q (hostIP %q), want an address of the pod's own", st.PodIP, st.HostIP)
	}
	if len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP {
		t.Errorf("podIPs %v, want them to start with podIP %s", st.PodIPs, st.PodIP)
	}
	if st.HostIP != podNetworkNodeIP || len(st.HostIPs) != 1 || st.HostIPs[0].IP != podNetworkNodeIP {
		t.Errorf("hostIP %q hostIPs %v, want the node's %s", st.HostIP, st.HostIPs, podNetworkNodeIP)
	}
	got, err := os.ReadFile(filepath.Join(out, "addresses"))
	if want := "HOST_IP=" + podNetworkNodeIP + " POD_IP=" + st.PodIP; err != nil || strings.TrimSpace(string(got)) != want {
		t.Errorf("the downward API in the pod: %q (%v), want %q", got, err, want)
	}
	resp, err := http.Get("http://" + net.JoinHostPort(podNetworkNodeIP, strconv.Itoa(port)) + "/index.html")
	if err != nil {
		t.Fatalf("hostPort %d -> 80 on the node's address: %v", port, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "served" {
		t.Errorf("GET %s:%d: %s %q, want the pod's page", podNetworkNodeIP, port, resp.Status, body)
	}
}
