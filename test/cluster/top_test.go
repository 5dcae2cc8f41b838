package cluster

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/podward/podward/test/internal/bintest"
)

// requireMetricsEnv=1 (hack/with-control-plane.sh sets it when it started
// a metrics-server) turns "the control plane has no metrics-server" from a
// skip into a failure.
const requireMetricsEnv = "PODWARD_REQUIRE_METRICS_SERVER"

// topTimeout bounds the wait for kubectl top's first figures:
// metrics-server scrapes every CP_METRICS_RESOLUTION (10 s) and has a
// pod's CPU rate from its second scrape of it.
const topTimeout = 120 * time.Second

// topFloor is the CPU a spinning container shows at the least, on a
// machine that other tests load (it gets a core when it has one).
var topFloor = resource.MustParse("50m")

// topPod spins on a CPU, holding 8 MB in a shell variable so that its
// working set shows in kubectl's Mi.
const topPod = `
apiVersion: v1
kind: Pod
metadata:
  name: {{.Name}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: spin
    image: busybox
    command: ["/bin/sh", "-c", "x=$(head -c 8000000 /dev/zero | tr '\\000' a); while :; do :; done"]
`

// needMetricsServer returns the label that makes the control plane's
// metrics-server scrape a node (CP_METRICS_NODE_LABEL, KEY=VALUE), or
// skips (fails under requireMetricsEnv=1) when it has none.
func needMetricsServer(t *testing.T, c *controlPlane) string {
	t.Helper()
	label := c.env["CP_METRICS_NODE_LABEL"]
	if label == "" {
		msg := "the control plane has no metrics-server: start it with PODWARD_CP_METRICS_SERVER=1 hack/control-plane-up.sh (hack/with-control-plane.sh does, as root)"
		if os.Getenv(requireMetricsEnv) == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return label
}

// TestKubectlTop: a real metrics-server (sigs.k8s.io/metrics-server, which
// hack/control-plane-up.sh runs behind the API server's aggregation layer
// as v1beta1.metrics.k8s.io) scrapes the node's /metrics/resource, and
// `kubectl top pod POD --containers` and `kubectl top node NODE` print its
// figures for a container that spins on a CPU: cores above a floor, memory
// above zero, within a bounded wait. On both runtimes. metrics-server
// verifies the node's serving certificate against the cluster CA (as in a
// cluster whose kubelets have CA-signed serving certificates), so the node
// serves one the test signed for its address.
func TestKubectlTop(t *testing.T) {
	c := needControlPlane(t)
	label := needMetricsServer(t, c)
	ca := loadClusterCA(t, c)
	bintest.EachRuntime(t, func(t *testing.T, rt bintest.Runtime) {
		name := nodeName(t, "a")
		certFile, keyFile := ca.servingCertFiles(t, name, "127.0.0.1")
		args := append([]string{"--tls-cert-file", certFile, "--tls-private-key-file", keyFile}, rt.Args...)
		if !rt.IsCRI() {
			// the process runtime's usage comes from the pods' cgroups
			args = append(args, "--cgroups", "on", "--cgroup-root", cgroupRoot(t))
		}
		n := startNode(t, c, name, args...)
		pod := "top-" + rt.Name
		n.apply(t, strings.ReplaceAll(topPod, "{{.Name}}", pod))
		c.waitPod(t, "default", pod, "Running", waitTimeout, func(p *v1.Pod) bool {
			return p != nil && p.Status.Phase == v1.PodRunning
		})
		c.mustKubectl(t, "label", "node", name, label)

		fields := waitTop(t, c, topContainerLine, "top", "pod", pod, "--containers", "--no-headers")
		if fields[0] != pod || fields[1] != "spin" {
			t.Errorf("kubectl top pod %s --containers: %q, want the pod's container spin", pod, fields)
		}
		fields = waitTop(t, c, topNodeLine, "top", "node", name, "--no-headers")
		if fields[0] != name {
			t.Errorf("kubectl top node %s: %q, want the node's line", name, fields)
		}
		// A graceful delete returns once the node has stopped the
		// container: the cleanup's deletion with grace 0 removes the
		// object at once, and the node may stop before its runtime has
		// killed a CRI container.
		c.mustKubectl(t, "delete", "pod", pod, "--wait=true", "--timeout=60s")
	})
}

// topLine is the shape of a line of kubectl top: its number of fields and
// which are CPU(cores) and MEMORY(bytes).
type topLine struct{ width, cpu, mem int }

var (
	topContainerLine = topLine{width: 4, cpu: 2, mem: 3} // POD NAME CPU(cores) MEMORY(bytes)
	topNodeLine      = topLine{width: 5, cpu: 1, mem: 3} // NAME CPU(cores) CPU(%) MEMORY(bytes) MEMORY(%)
)

// waitTop runs kubectl ARGS until it prints one line of shape whose CPU is
// at least topFloor and whose memory is above zero, for at most
// topTimeout, and returns that line's fields.
func waitTop(t *testing.T, c *controlPlane, shape topLine, args ...string) []string {
	t.Helper()
	var last string
	var fields []string
	start := time.Now()
	err := wait.PollUntilContextTimeout(t.Context(), time.Second, topTimeout, true, func(context.Context) (bool, error) {
		out, err := c.kubectl(waitTimeout, args...)
		last = fmt.Sprintf("%q, %v", out, err)
		if err != nil {
			return false, nil // "metrics not available yet" until two scrapes
		}
		fields = strings.Fields(out)
		if len(fields) != shape.width {
			return false, fmt.Errorf("kubectl %s printed %q: want one line of %d fields", strings.Join(args, " "), out, shape.width)
		}
		cpu, errCPU := resource.ParseQuantity(fields[shape.cpu])
		mem, errMem := resource.ParseQuantity(fields[shape.mem])
		if errCPU != nil || errMem != nil {
			return false, fmt.Errorf("kubectl %s printed %q: CPU %v, memory %v", strings.Join(args, " "), out, errCPU, errMem)
		}
		return cpu.Cmp(topFloor) >= 0 && mem.Sign() > 0, nil
	})
	if err != nil {
		t.Fatalf("kubectl %s: no CPU of at least %s and memory above 0 within %v: %v; last: %s", strings.Join(args, " "), topFloor.String(), topTimeout, err, last)
	}
	t.Logf("kubectl %s after %v: %q", strings.Join(args, " "), time.Since(start).Round(time.Second), fields)
	return fields
}

// servingCertFiles writes a serving certificate for the node name at ip,
// signed by the cluster CA, and its key, as --tls-cert-file and
// --tls-private-key-file take them.
func (ca *clusterCA) servingCertFiles(t *testing.T, name, ip string) (certFile, keyFile string) {
	t.Helper()
	key, der := ca.issue(t, &x509.Certificate{
		Subject:     pkix.Name{CommonName: name},
		DNSNames:    []string{name},
		IPAddresses: []net.IP{net.ParseIP(ip)},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "kubelet.crt"), filepath.Join(dir, "kubelet.key")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
