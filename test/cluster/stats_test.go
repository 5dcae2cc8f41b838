package cluster

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// statsPod spins on a CPU.
const statsPod = `
apiVersion: v1
kind: Pod
metadata:
  name: node-stats
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: spin
    image: busybox
    command: ["/bin/sh", "-c", "while :; do :; done"]
`

// cgroupRoot is a cgroup root of the test's own for the node's
// --cgroup-root, removed at the end of the test (registered before the
// node, so after its cleanup). Without root it skips (fails under
// PODWARD_REQUIRE_CLUSTER=1): the usage comes from the pods' cgroups.
func cgroupRoot(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv(requireEnvName) == "1" {
			t.Fatal("the node's usage needs cgroups, which need root")
		}
		t.Skip("the node's usage needs cgroups, which need root")
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	root := "/podward-cluster-" + hex.EncodeToString(b[:])
	t.Cleanup(func() {
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*" + root)
		if _, err := os.Stat("/sys/fs/cgroup" + root); err == nil {
			dirs = append(dirs, "/sys/fs/cgroup"+root)
		}
		for _, d := range dirs {
			removeTree(t, d)
		}
	})
	return root
}

func removeTree(t *testing.T, dir string) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeTree(t, filepath.Join(dir, e.Name()))
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
		t.Errorf("remove cgroup %s: %v", dir, err)
	}
}

// TestNodeServesUsage: through the API server's node proxy (as `kubectl
// get --raw` and metrics-server reach a kubelet), the node serves the
// kubelet's /stats/summary (k8s.io/kubelet's stats/v1alpha1 Summary) and
// /metrics/resource (the kubelet's names and labels, which metrics-server's
// decoder reads: sigs.k8s.io/metrics-server
// pkg/scraper/client/resource/decode.go), with the running pod's counters
// moving between two reads.
func TestNodeServesUsage(t *testing.T) {
	c := needControlPlane(t)
	root := cgroupRoot(t)
	addr := proxyableAddress(t)
	name := nodeName(t, "u")
	n := startNode(t, c, name, "--node-ip", addr, "--cgroups", "on", "--cgroup-root", root)
	n.apply(t, statsPod)
	c.waitPod(t, "default", "node-stats", "Running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning
	})

	summary := func() (statsv1alpha1.Summary, statsv1alpha1.PodStats) {
		t.Helper()
		raw := c.mustKubectl(t, "get", "--raw", "/api/v1/nodes/"+name+"/proxy/stats/summary")
		var s statsv1alpha1.Summary
		if err := json.Unmarshal([]byte(raw), &s); err != nil {
			t.Fatalf("/stats/summary is not a Summary: %v\n%s", err, raw)
		}
		for _, p := range s.Pods {
			if p.PodRef.Name == "node-stats" && p.PodRef.Namespace == "default" {
				return s, p
			}
		}
		t.Fatalf("/stats/summary has no node-stats pod:\n%s", raw)
		return s, statsv1alpha1.PodStats{}
	}
	s1, p1 := summary()
	if s1.Node.NodeName != name || s1.Node.CPU == nil || s1.Node.Memory == nil || s1.Node.Memory.WorkingSetBytes == nil || *s1.Node.Memory.WorkingSetBytes == 0 {
		t.Errorf("node stats %+v: want the node's name, CPU and memory", s1.Node)
	}
	if len(p1.Containers) != 1 || p1.Containers[0].Name != "spin" || p1.Containers[0].CPU == nil || p1.Containers[0].Memory == nil || p1.CPU == nil {
		t.Fatalf("pod stats %+v: want the pod's and its container spin's CPU and memory", p1)
	}
	_, p2 := summary()
	// The times are metav1.Time: whole seconds in JSON, as the kubelet's.
	if *p2.Containers[0].CPU.UsageCoreNanoSeconds <= *p1.Containers[0].CPU.UsageCoreNanoSeconds || p2.Containers[0].CPU.Time.Before(&p1.Containers[0].CPU.Time) {
		t.Errorf("spin's CPU did not move: %v then %v", *p1.Containers[0].CPU.UsageCoreNanoSeconds, *p2.Containers[0].CPU.UsageCoreNanoSeconds)
	}

	raw := c.mustKubectl(t, "get", "--raw", "/api/v1/nodes/"+name+"/proxy/metrics/resource")
	parser := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(raw))
	if err != nil {
		t.Fatalf("/metrics/resource does not parse: %v\n%s", err, raw)
	}
	want := map[string]map[string]string{
		"container_cpu_usage_seconds_total":  {"container": "spin", "namespace": "default", "pod": "node-stats"},
		"container_memory_working_set_bytes": {"container": "spin", "namespace": "default", "pod": "node-stats"},
		"container_start_time_seconds":       {"container": "spin", "namespace": "default", "pod": "node-stats"},
		"pod_cpu_usage_seconds_total":        {"namespace": "default", "pod": "node-stats"},
		"pod_memory_working_set_bytes":       {"namespace": "default", "pod": "node-stats"},
		"node_cpu_usage_seconds_total":       {},
		"node_memory_working_set_bytes":      {},
	}
	for fam, labels := range want {
		m := findSample(fams[fam], labels)
		if m == nil {
			t.Errorf("/metrics/resource has no %s%v:\n%s", fam, labels, raw)
			continue
		}
		// metrics-server drops a container or node whose CPU or memory is
		// zero, and dates each point by its timestamp (a start time has
		// none, as the kubelet's).
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
		if dated := m.GetTimestampMs() != 0; v <= 0 || dated != (fam != "container_start_time_seconds") {
			t.Errorf("%s%v = %v at %d ms: want a positive value, with its time for a usage", fam, labels, v, m.GetTimestampMs())
		}
	}
	if m := findSample(fams["resource_scrape_error"], map[string]string{}); m == nil || m.GetGauge().GetValue() != 0 {
		t.Errorf("resource_scrape_error %v, want 0", m)
	}
}

// findSample is fam's sample with exactly labels, nil if none.
func findSample(fam *dto.MetricFamily, labels map[string]string) *dto.Metric {
	for _, m := range fam.GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			match = match && labels[l.GetName()] == l.GetValue()
		}
		if match {
			return m
		}
	}
	return nil
}
