package e2e

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// topPod has a container that spins on a CPU and one that holds 64 MiB:
// dd fills its 64 MiB block and blocks writing it to a pipe nobody reads.
const topPod = `
apiVersion: v1
kind: Pod
metadata:
  name: busy
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: spin
    image: busybox
    command: ["/bin/sh", "-c", "while :; do :; done"]
  - name: hold
    image: busybox
    command: ["/bin/sh", "-c", "dd if=/dev/zero bs=64M count=1 2>/dev/null | sleep 600"]
`

// newUsageEnv is newCgroupEnv, which fails instead of skipping where the
// machine must have cgroups (PODWARD_REQUIRE_CGROUPS=1, as .ci/run sets).
func newUsageEnv(t *testing.T) *cgroupEnv {
	t.Helper()
	if os.Getenv("PODWARD_REQUIRE_CGROUPS") == "1" {
		if os.Geteuid() != 0 {
			t.Fatal("PODWARD_REQUIRE_CGROUPS=1 but the test is not root: podward top reads the pods' cgroups, which need root")
		}
		_, v2 := os.Stat("/sys/fs/cgroup/cgroup.controllers")
		_, v1 := os.Stat("/sys/fs/cgroup/memory")
		if v2 != nil && v1 != nil {
			t.Fatal("PODWARD_REQUIRE_CGROUPS=1 but /sys/fs/cgroup has neither cgroup v2 nor a v1 memory hierarchy")
		}
	}
	return newCgroupEnv(t)
}

// topRow is a row of podward top pod --containers: POD NAME CPU MEMORY.
type topRow struct {
	pod, name string
	milli     int64
	mib       int64
}

func parseTop(t *testing.T, out string) map[string]topRow {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if f := strings.Fields(lines[0]); strings.Join(f, " ") != "POD NAME CPU(cores) MEMORY(bytes)" {
		t.Fatalf("header %q, want kubectl top pod --containers'", lines[0])
	}
	rows := map[string]topRow{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		if len(f) != 4 || !strings.HasSuffix(f[2], "m") || !strings.HasSuffix(f[3], "Mi") {
			t.Fatalf("row %q is not POD NAME 12m 34Mi", l)
		}
		m, err1 := strconv.ParseInt(strings.TrimSuffix(f[2], "m"), 10, 64)
		mi, err2 := strconv.ParseInt(strings.TrimSuffix(f[3], "Mi"), 10, 64)
		if err1 != nil || err2 != nil {
			t.Fatalf("row %q: %v %v", l, err1, err2)
		}
		rows[f[1]] = topRow{pod: f[0], name: f[1], milli: m, mib: mi}
	}
	return rows
}

// podward top pod reads the containers' usage from their cgroups: a
// container spinning on a CPU uses a good part of a core, one holding
// 64 MiB has a working set of at least that (cAdvisor's working set, which
// metrics-server reports and kubectl top prints). The bounds are generous:
// other tests share the machine's cores.
func TestTopPod(t *testing.T) {
	e := newUsageEnv(t)
	a := startAgent(t, e.args()...)
	a.apply("busy", writeManifest(t, t.TempDir(), topPod, nil))
	a.waitPod("busy", "jsonpath={.status.phase}=Running", lineTimeout)

	deadline := time.Now().Add(lineTimeout)
	var rows map[string]topRow
	for {
		out := a.mustCLI("top", "pod", "busy", "--containers")
		rows = parseTop(t, out)
		if rows["hold"].mib >= 64 && rows["spin"].milli >= 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("podward top pod busy --containers never showed spin >= 200m and hold >= 64Mi:\n%s", out)
		}
	}
	t.Logf("top rows: %+v", rows)
	if rows["spin"].pod != "busy" || rows["hold"].pod != "busy" || rows["spin"].milli > 1100 {
		t.Errorf("top rows %+v: want busy's spin at most a core", rows)
	}

	// The pod's line is the sum of its containers', in kubectl's table.
	out := a.mustCLI("top", "pod", "--sort-by=cpu")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "NAME CPU(cores) MEMORY(bytes)" || len(lines) != 2 || strings.Fields(lines[1])[0] != "busy" {
		t.Errorf("podward top pod:\n%s", out)
	}
	if mi, _ := strconv.Atoi(strings.TrimSuffix(strings.Fields(lines[1])[2], "Mi")); mi < 64 {
		t.Errorf("the pod's memory %dMi is below its container's 64Mi:\n%s", mi, out)
	}
	if _, err := a.cli("top", "pod", "nope"); err == nil || !strings.Contains(err.Error(), `Error from server (NotFound): podmetrics.metrics.k8s.io "default/nope" not found`) {
		t.Errorf("top pod nope: %v, want metrics-server's NotFound", err)
	}
	a.mustCLI("delete", "pod", "busy", "--timeout", "20s")
}
