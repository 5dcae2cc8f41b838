package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

const podNetworkPod = `
apiVersion: v1
kind: Pod
metadata:
  name: own-network
spec:
  containers:
  - name: web
    image: busybox
    command: ["sh", "-c", "mkdir -p /www && echo ok > /www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]
    readinessProbe:
      httpGet: {path: /index.html, port: 8080}
      periodSeconds: 1
    env:
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
`

// hostPortPod serves HTTP on its port 80, mapped to the host's
// {{.Port}} by CNI's portmap.
const hostPortPod = `
apiVersion: v1
kind: Pod
metadata:
  name: host-port
spec:
  containers:
  - name: web
    image: busybox
    command: ["sh", "-c", "mkdir -p /www && echo served-by-host-port > /www/index.html && trap 'exit 0' TERM; httpd -f -p 80 -h /www & wait"]
    ports:
    - {containerPort: 80, hostPort: {{.Port}}}
    readinessProbe:
      httpGet: {path: /index.html, port: 80}
      periodSeconds: 1
`

const hostNetworkPod = `
apiVersion: v1
kind: Pod
metadata:
  name: host-network
spec:
  hostNetwork: true
  containers:
  - name: main
    image: busybox
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 1000 & wait"]
`

// TestPodNetworkOnCRI: with --cri-pod-network, a pod without hostNetwork
// gets its own network namespace from the runtime's CNI: its status has
// its own IP (in the bridge's subnet, not the host's), and its readiness
// probe reaches it there; a pod's hostPort 80 -> P is mapped by CNI's
// portmap, so that the host reaches it at 127.0.0.1:P; a hostNetwork pod's
// podIP is the host's. The test runs its own containerd with a CNI
// bridge.
//
// Its teardown (hack/cri-down.sh) leaves alone an empty pod cgroup under
// podward's default root that is not its containerd's: an agent beside it
// may have just made one to start a pod in (a teardown that removed every
// empty cgroup there made the churn test's pods fail to start).
func TestPodNetworkOnCRI(t *testing.T) {
	needRoot(t)
	bintest.CRI().Need(t)
	t.Parallel()
	endpoint, subnet := criWithCNI(t)

	a := startAgent(t, "--runtime", "cri", "--cri-endpoint", endpoint, "--cri-pod-network")
	a.apply("own-network", writeManifest(t, t.TempDir(), podNetworkPod, nil))
	port := freePort(t)
	a.apply("host-port", writeManifest(t, t.TempDir(), hostPortPod, map[string]int{"Port": port}))
	a.apply("host-network", writeManifest(t, t.TempDir(), hostNetworkPod, nil))
	a.waitPod("own-network", "condition=Ready", 60*time.Second)
	a.waitPod("host-port", "condition=Ready", 60*time.Second)
	a.waitPod("host-network", "condition=Ready", 60*time.Second)

	st := a.getPod("own-network").Status
	ip := net.ParseIP(st.PodIP)
	if ip == nil || !subnet.Contains(ip) || st.PodIP == st.HostIP {
		t.Fatalf("podIP %q (hostIP %q), want one of the CNI bridge's %s", st.PodIP, st.HostIP, subnet)
	}
	if len(st.PodIPs) == 0 || st.PodIPs[0].IP != st.PodIP || st.HostIP != "127.0.0.1" || len(st.HostIPs) != 1 {
		t.Errorf("podIPs %v hostIP %q hostIPs %v, want podIPs starting with podIP, the node's hostIP", st.PodIPs, st.HostIP, st.HostIPs)
	}
	t.Logf("pod IP %s; readiness probe passed there", ip)

	resp, err := http.Get("http://127.0.0.1:" + strconv.Itoa(port) + "/index.html")
	if err != nil {
		t.Fatalf("the hostPort %d -> 80 from the host: %v", port, err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.TrimSpace(string(body)) != "served-by-host-port" {
		t.Fatalf("GET 127.0.0.1:%d: %s %q, want the pod's page", port, resp.Status, body)
	}
	if hp := a.getPod("host-port").Status.PodIP; !subnet.Contains(net.ParseIP(hp)) {
		t.Errorf("host-port pod's podIP %q, want one of %s", hp, subnet)
	}

	if hn := a.getPod("host-network").Status; hn.PodIP != hn.HostIP || hn.PodIP != "127.0.0.1" {
		t.Errorf("hostNetwork pod: podIP %q hostIP %q, want the node's for both", hn.PodIP, hn.HostIP)
	}
	for _, name := range []string{"own-network", "host-port", "host-network"} {
		a.mustCLI("delete", "pod", name, "--wait", "--timeout", "30s")
	}
}

// criWithCNI starts a containerd of the test's own with a CNI network
// (hack/cri-up.sh, torn down at the test's end), and returns its endpoint
// and its pods' subnet.
func criWithCNI(t *testing.T) (endpoint string, subnet *net.IPNet) {
	t.Helper()
	base := filepath.Join(os.TempDir(), "pw-cri-cni-"+strconv.Itoa(os.Getpid()))
	// A port of its own for its registry: cri-up.sh's choice of a free
	// one races with other suites starting theirs at the same time.
	env := append(os.Environ(), "PODWARD_CRI_BASE="+base, "PODWARD_CRI_CNI=1", "PODWARD_CRI_REGISTRY_PORT="+strconv.Itoa(freePort(t)))
	up := exec.Command("../../hack/cri-up.sh")
	up.Env = env
	var stderr strings.Builder
	up.Stderr = &stderr
	out, err := up.Output()
	t.Cleanup(func() {
		foreign := foreignPodCgroup(t)
		down := exec.Command("../../hack/cri-down.sh")
		down.Env = append(env, "PODWARD_CRI_KEEP_CACHE=0")
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("cri-down.sh: %v\n%s", err, out)
		}
		for _, d := range foreign {
			if !fileExists(d) {
				t.Errorf("cri-down.sh removed %s, the cgroup of a pod not its containerd's", d)
			}
			removeCgroupTree(t, d)
		}
	})
	if err != nil {
		t.Fatalf("cri-up.sh with CNI: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	endpoint = strings.TrimPrefix(lines[len(lines)-1], "CRI_ENDPOINT=")
	envFile, err := os.ReadFile(filepath.Join(base, "env"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(envFile), "\n") {
		if v, ok := strings.CutPrefix(l, "PODWARD_CRI_CNI_SUBNET="); ok {
			if _, subnet, err = net.ParseCIDR(v); err != nil {
				t.Fatalf("cri-up.sh's subnet %q: %v", v, err)
			}
		}
	}
	if subnet == nil {
		t.Fatalf("cri-up.sh's env file has no PODWARD_CRI_CNI_SUBNET:\n%s", envFile)
	}
	return endpoint, subnet
}

// foreignPodCgroup makes an empty pod cgroup under podward's default root
// (/podward/besteffort/pod<random>), in every hierarchy podward uses, as
// an agent does before it starts a pod's first container, and returns its
// directories; the caller removes them.
func foreignPodCgroup(t *testing.T) []string {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	rel := filepath.Join("podward", "besteffort", "pod-e2e-"+hex.EncodeToString(b[:]))
	var dirs []string
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		dirs = []string{filepath.Join("/sys/fs/cgroup", rel)}
	} else {
		for _, c := range []string{"memory", "cpu", "cpuacct", "pids"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err == nil {
				dirs = append(dirs, filepath.Join("/sys/fs/cgroup", c, rel))
			}
		}
	}
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatalf("make the cgroup %s: %v", d, err)
		}
	}
	return dirs
}
