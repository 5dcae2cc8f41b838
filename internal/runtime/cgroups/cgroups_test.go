package cgroups

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeV1 is a v1 cgroup file system in a test directory: one directory
// per controller, cpu and cpuacct co-mounted as on most hosts.
func fakeV1(t *testing.T) (*Hierarchy, string) {
	t.Helper()
	dir := t.TempDir()
	cpu := filepath.Join(dir, "cpu,cpuacct")
	mounts := map[string]string{
		"memory": filepath.Join(dir, "memory"), "cpu": cpu, "cpuacct": cpu, "pids": filepath.Join(dir, "pids"),
	}
	return V1At(mounts), dir
}

// fakeV2 is a unified hierarchy in a test directory whose cgroups along
// paths offer every controller, as the kernel's cgroup.controllers would.
func fakeV2(t *testing.T, paths ...string) (*Hierarchy, string) {
	t.Helper()
	dir := t.TempDir()
	levels := []string{dir}
	for _, p := range paths {
		d := dir
		for _, part := range strings.Split(strings.Trim(p, "/"), "/") {
			d = filepath.Join(d, part)
			levels = append(levels, d)
		}
	}
	for _, d := range levels {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "cgroup.controllers"), []byte("cpuset cpu io memory pids\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return V2At(dir), dir
}

func readTrim(t *testing.T, p string) string {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(raw))
}

func wantFiles(t *testing.T, dir string, want map[string]string) {
	t.Helper()
	for name, v := range want {
		if got := readTrim(t, filepath.Join(dir, name)); got != v {
			t.Errorf("%s/%s = %q, want %q", dir, name, got, v)
		}
	}
}

// The kubelet's cgroupfs layout: Guaranteed pods right under the root,
// the others under burstable/ and besteffort/ (pkg/kubelet/cm,
// qos_container_manager_linux.go, pod_container_manager_linux.go).
func TestPodPath(t *testing.T) {
	for q, want := range map[QoS]string{
		Guaranteed: "/podward/podabc",
		Burstable:  "/podward/burstable/podabc",
		BestEffort: "/podward/besteffort/podabc",
	} {
		if got := PodPath("podward", q, "abc"); got != want {
			t.Errorf("PodPath(%s) = %q, want %q", q, got, want)
		}
	}
}

func TestCreateV1(t *testing.T) {
	h, dir := fakeV1(t)
	pod := PodPath("/podward", Burstable, "u1")
	if err := h.Create(pod, Resources{CPUShares: 204, CPUQuota: 20000, Memory: 64 << 20, Pids: 50}); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, filepath.Join(dir, "memory", pod), map[string]string{"memory.limit_in_bytes": "67108864"})
	wantFiles(t, filepath.Join(dir, "cpu,cpuacct", pod), map[string]string{
		"cpu.shares": "204", "cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "20000",
	})
	wantFiles(t, filepath.Join(dir, "pids", pod), map[string]string{"pids.max": "50"})

	// Update resets what res leaves out: it is how a limit goes away.
	if err := h.Update(pod, Resources{CPUShares: 2}); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, filepath.Join(dir, "memory", pod), map[string]string{"memory.limit_in_bytes": "-1"})
	wantFiles(t, filepath.Join(dir, "cpu,cpuacct", pod), map[string]string{"cpu.shares": "2", "cpu.cfs_quota_us": "-1"})
	wantFiles(t, filepath.Join(dir, "pids", pod), map[string]string{"pids.max": "max"})
	if !h.Exists(pod) {
		t.Error("Exists says the pod's cgroup is not there")
	}
}

func TestCreateV2(t *testing.T) {
	pod := PodPath("/podward", Burstable, "u1")
	h, dir := fakeV2(t, pod)
	if err := h.Init("/podward"); err != nil {
		t.Fatal(err)
	}
	if err := h.Create(pod, Resources{CPUShares: 204, CPUQuota: 20000, Memory: 64 << 20, Pids: 50, OOMGroup: true}); err != nil {
		t.Fatal(err)
	}
	// Every level down to the pod's parent hands the controllers on.
	for _, d := range []string{dir, filepath.Join(dir, "podward"), filepath.Join(dir, "podward", "burstable")} {
		wantFiles(t, d, map[string]string{"cgroup.subtree_control": "+cpu +memory +pids"})
	}
	wantFiles(t, filepath.Join(dir, pod), map[string]string{
		"memory.max": "67108864", "cpu.weight": "8", "cpu.max": "20000 100000", "pids.max": "50", "memory.oom.group": "1",
	})
	if err := h.Update(pod, Resources{}); err != nil {
		t.Fatal(err)
	}
	wantFiles(t, filepath.Join(dir, pod), map[string]string{"memory.max": "max", "cpu.weight": "100", "cpu.max": "max 100000", "pids.max": "max"})
}

// A v2 hierarchy that does not hand a controller down cannot hold
// podward's cgroups: Init says so, for the agent to run without them.
func TestInitV2MissingController(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cgroup.controllers"), []byte("cpu io\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := V2At(dir).Init("/podward")
	if err == nil || !strings.Contains(err.Error(), "memory controller is not available") {
		t.Fatalf("Init = %v, want the missing memory controller", err)
	}
}

// The kubelet's conversion of shares to weight
// (pkg/kubelet/cm/cgroup_manager_linux.go, getCPUWeight).
func TestCPUWeight(t *testing.T) {
	for shares, want := range map[uint64]uint64{2: 1, 1024: 39, 204: 8, 262144: 10000, 1 << 20: 10000} {
		if got := CPUWeight(shares); got != want {
			t.Errorf("CPUWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}

func TestPlacement(t *testing.T) {
	h1, dir := fakeV1(t)
	pl := h1.Placement("/podward/podu1/c1")
	if got, want := pl.dirs(), []string{
		filepath.Join(dir, "cpu,cpuacct/podward/podu1/c1"),
		filepath.Join(dir, "memory/podward/podu1/c1"),
		filepath.Join(dir, "pids/podward/podu1/c1"),
	}; strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("v1 dirs = %v, want %v", got, want)
	}
	// The shims: in the pod's memory and CPU cgroups, not its pids one.
	shims := h1.ShimPlacement("/podward/podu1")
	if _, ok := shims.V1["pids"]; ok || shims.V1["memory"].Path != "/podward/podu1/shims" {
		t.Errorf("v1 shim placement = %+v", shims)
	}
	h2, dir2 := fakeV2(t)
	if got := h2.ShimPlacement("/podward/podu1"); got.Unified != filepath.Join(dir2, "podward/podu1/shims") {
		t.Errorf("v2 shim placement = %+v", got)
	}
}

// OOMKills reads the counter runc and containerd read: memory.events on
// v2, memory.oom_control on v1.
func TestOOMKillsAndUsage(t *testing.T) {
	h1, dir := fakeV1(t)
	pl := h1.Placement("/c")
	if err := h1.Create("/c", Resources{}); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string) {
		t.Helper()
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dir, "memory/c/memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
	write(filepath.Join(dir, "cpu,cpuacct/c/cpuacct.usage"), "1500000000\n")
	if n, err := pl.OOMKills(); err != nil || n != 2 {
		t.Errorf("v1 OOMKills = %d, %v; want 2", n, err)
	}
	if u, err := pl.CPUUsage(); err != nil || u != 1500*time.Millisecond {
		t.Errorf("v1 CPUUsage = %v, %v; want 1.5s", u, err)
	}

	h2, dir2 := fakeV2(t, "/c")
	pl2 := h2.Placement("/c")
	write(filepath.Join(dir2, "c/memory.events"), "low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n")
	write(filepath.Join(dir2, "c/cpu.stat"), "usage_usec 250000\nuser_usec 200000\n")
	if n, err := pl2.OOMKills(); err != nil || n != 1 {
		t.Errorf("v2 OOMKills = %d, %v; want 1", n, err)
	}
	if u, err := pl2.CPUUsage(); err != nil || u != 250*time.Millisecond {
		t.Errorf("v2 CPUUsage = %v, %v; want 250ms", u, err)
	}
}

// Remove takes the pod's tree away, children first, in every hierarchy;
// a cgroup already gone is fine.
func TestRemove(t *testing.T) {
	h, dir := fakeV1(t)
	pod := PodPath("/podward", BestEffort, "u1")
	for _, p := range []string{pod, pod + "/c1", pod + "/" + ShimsDir} {
		if err := h.Create(p, Resources{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := h.Remove(pod); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{"memory", "cpu,cpuacct", "pids"} {
		if _, err := os.Stat(filepath.Join(dir, c, pod)); !os.IsNotExist(err) {
			t.Errorf("%s: the pod's cgroup is still there (%v)", c, err)
		}
		if _, err := os.Stat(filepath.Join(dir, c, "podward", "besteffort")); err != nil {
			t.Errorf("%s: the QoS level went with the pod: %v", c, err)
		}
	}
	if err := h.Remove(pod); err != nil {
		t.Errorf("second Remove = %v", err)
	}
}

func TestParseMountinfo(t *testing.T) {
	const info = `25 30 0:22 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755
26 25 0:23 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw
27 25 0:24 / /sys/fs/cgroup/cpu,cpuacct rw shared:9 - cgroup cgroup rw,cpu,cpuacct
28 25 0:25 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
29 25 0:26 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids
30 25 0:25 / /var/lib/other/memory rw - cgroup cgroup rw,memory
`
	got, err := parseMountinfo(bufio.NewScanner(strings.NewReader(info)))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct",
		"memory": "/sys/fs/cgroup/memory", "pids": "/sys/fs/cgroup/pids",
	}
	for c, w := range want {
		if got[c] != w {
			t.Errorf("%s mounted at %q, want %q", c, got[c], w)
		}
	}
}
