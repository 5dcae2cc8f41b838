package e2e

import (
	"crypto/rand"
	"encoding/hex"
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
//
// Its teardown (hack/cri-down.sh) leaves alone an empty pod cgroup under
// podward's default root that is not its containerd's: an agent beside it
// may have just made one to start a pod in (a teardown that removed every
// empty cgroup there made the churn test's pods fail to start).
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
