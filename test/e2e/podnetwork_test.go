package e2e

import (
	"encoding/json"
	"net"
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

// TestPodNetworkOnCRI: with --cri-pod-network, a pod without hostNetwork
// gets its own network namespace from the runtime's CNI: its status has
// its own IP, and its readiness probe reaches it there. The test runs its
// own containerd with a CNI bridge.
func TestPodNetworkOnCRI(t *testing.T) {
	needRoot(t)
	bintest.CRI().Need(t)
	t.Parallel()
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
		down := exec.Command("../../hack/cri-down.sh")
		down.Env = append(env, "PODWARD_CRI_KEEP_CACHE=0")
		if out, err := down.CombinedOutput(); err != nil {
			t.Errorf("cri-down.sh: %v\n%s", err, out)
		}
	})
	if err != nil {
		t.Fatalf("cri-up.sh with CNI: %v\n%s", err, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	endpoint := strings.TrimPrefix(lines[len(lines)-1], "CRI_ENDPOINT=")

	a := startAgent(t, "--runtime", "cri", "--cri-endpoint", endpoint, "--cri-pod-network")
	a.apply("own-network", writeManifest(t, t.TempDir(), podNetworkPod, nil))
	a.waitPod("own-network", "condition=Ready", 60*time.Second)
	var st struct {
		Status struct {
			PodIP string `json:"podIP"`
		} `json:"status"`
	}
	out2 := a.mustCLI("get", "pod", "own-network", "-o", "json")
	if err := json.Unmarshal([]byte(out2), &st); err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(st.Status.PodIP)
	_, subnet, _ := net.ParseCIDR("10.88.0.0/16")
	if ip == nil || !subnet.Contains(ip) {
		t.Fatalf("podIP %q, want one of the CNI bridge's 10.88.0.0/16", out2)
	}
	t.Logf("pod IP %s; readiness probe passed there", ip)
	a.mustCLI("delete", "pod", "own-network", "--wait", "--timeout", "30s")
}
