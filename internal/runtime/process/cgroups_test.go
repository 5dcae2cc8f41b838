package process

import (
	"context"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/cgroups"
)

// testCgroups is a cgroup root of the test's own on the host's real
// hierarchy, removed when the test ends; the test is skipped where
// cgroups cannot be used (not root, no hierarchy).
func testCgroups(t *testing.T, pids int64) *CgroupConfig {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("cgroups need root")
	}
	h, err := cgroups.Detect()
	if err != nil {
		t.Skipf("no cgroups: %v", err)
	}
	root := "/podward-test-" + randomSuffix(t)
	if err := h.Init(root); err != nil {
		t.Skipf("cgroups cannot be used: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Remove(root); err != nil {
			t.Errorf("remove the test's cgroups: %v", err)
		}
	})
	return &CgroupConfig{Hierarchy: h, Root: root, PodPidsLimit: pids}
}

func limited(c v1.Container, cpu, memory string) v1.Container {
	c.Resources.Limits = v1.ResourceList{}
	if cpu != "" {
		c.Resources.Limits[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		c.Resources.Limits[v1.ResourceMemory] = resource.MustParse(memory)
	}
	return c
}

// A container that allocates past its memory limit is killed by the OOM
// killer in its own cgroup, and its exit says so: OOMKilled, 137, as a
// CRI runtime reports it from the cgroup's OOM kill counter. Its shim,
// in the pod's cgroup, survives to record it; the pod's cgroups go with
// CleanupPod.
func TestCgroupsMemoryLimitOOMKilled(t *testing.T) {
	cg := testCgroups(t, 0)
	h := newHarnessWith(t, Config{Root: t.TempDir(), Cgroups: cg})
	// At most 128 MiB even if the limit did not hold.
	pod := newPod(t, limited(shell("hog", "head -c 128m /dev/zero | tail"), "", "16Mi"))
	h.prepare(pod)
	// A memory limit only, not defaulted into a request: Burstable.
	podCg := cgroups.PodPath(cg.Root, cgroups.Burstable, string(pod.UID))
	if !cg.Hierarchy.Exists(podCg) {
		t.Fatalf("no pod cgroup %s", podCg)
	}
	_, ev := h.run(pod, 0)
	if ev.Exit.Reason != runtime.ReasonOOMKilled || ev.Exit.ExitCode != 137 {
		t.Fatalf("exit = %+v, want OOMKilled, 137", ev.Exit)
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if cg.Hierarchy.Exists(podCg) {
		t.Error("the pod's cgroup is left after CleanupPod")
	}
}

// limits.cpu: 200m is a CFS quota: a busy loop gets about 0.2 of a core,
// measured from the cgroup's own usage counter over a few seconds.
func TestCgroupsCPULimit(t *testing.T) {
	cg := testCgroups(t, 0)
	h := newHarnessWith(t, Config{Root: t.TempDir(), Cgroups: cg})
	pod := newPod(t, limited(shell("spin", "while :; do :; done"), "200m", ""))
	h.prepare(pod)
	c := h.start(pod, 0)
	defer func() {
		_ = h.r.Signal(context.Background(), c.ID, 9)
		h.waitExit(c.ID)
	}()
	pl := h.r.ExecCgroup(pod.UID, "spin")
	if pl == nil {
		t.Fatal("no cgroup for the running container")
	}
	u0, err := pl.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	// A rate needs an interval: nothing happens at its end to wait for.
	<-time.After(3 * time.Second)
	u1, err := pl.CPUUsage()
	if err != nil {
		t.Fatal(err)
	}
	cores := float64(u1-u0) / float64(time.Since(t0))
	t.Logf("the busy loop used %.3f cores", cores)
	if cores < 0.05 || cores > 0.35 {
		t.Errorf("the busy loop used %.3f cores, want about 0.2", cores)
	}
}

// The pod's pid limit (--pod-max-pids) stops a fork bomb (bounded, in
// case it did not) in the pod's cgroup; the shim, outside the pod's pids
// cgroup on v1 and with room in it on v2, records its exit.
func TestCgroupsPodPidsLimit(t *testing.T) {
	cg := testCgroups(t, 20)
	h := newHarnessWith(t, Config{Root: t.TempDir(), Cgroups: cg})
	script := `n=0; while [ $n -lt 100 ]; do sleep 30 & n=$((n+1)); done; echo forked; exit 3`
	pod := newPod(t, shell("bomb", script))
	h.prepare(pod)
	_, ev := h.run(pod, 0)
	if ev.Exit.ExitCode == 3 {
		h.waitOutput("bomb", "forked")
	}
	h.mu.Lock()
	var out []string
	for _, l := range h.output {
		out = append(out, l.line)
	}
	h.mu.Unlock()
	if !strings.Contains(strings.Join(out, "\n"), "fork") || strings.Contains(strings.Join(out, "\n"), "forked") {
		t.Errorf("the fork bomb was not stopped: exit %+v, output %q", ev.Exit, out)
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// A Runtime that attaches after an agent restart finds the running
// instance's cgroup in its spec (exec sessions join it), PreparePod makes
// no second pod cgroup, and a pod left only on disk is listed and its
// cgroups removed by CleanupPod.
func TestCgroupsAdoptedAfterRestart(t *testing.T) {
	cg := testCgroups(t, 0)
	root := t.TempDir()
	h := newHarnessWith(t, Config{Root: root, Cgroups: cg})
	req := v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}
	ctr := shell("app", "sleep 30")
	ctr.Resources.Requests = req
	pod := newPod(t, ctr)
	h.prepare(pod)
	c := h.start(pod, 0)
	_ = h.r.Close()

	h2 := newHarnessWith(t, Config{Root: root, Cgroups: cg})
	pl := h2.r.ExecCgroup(pod.UID, "app")
	if pl == nil {
		t.Fatal("the restarted runtime has no cgroup for the running instance")
	}
	if procs, err := pl.Procs(); err != nil || len(procs) == 0 {
		t.Fatalf("the running container is not in its cgroup: %v, %v", procs, err)
	}
	h2.prepare(pod)
	var found []string
	for _, p := range cgroups.PodPaths(cg.Root, string(pod.UID)) {
		if cg.Hierarchy.Exists(p) {
			found = append(found, p)
		}
	}
	want := cgroups.PodPath(cg.Root, cgroups.Burstable, string(pod.UID))
	if len(found) != 1 || found[0] != want || !cg.Hierarchy.Exists(path.Join(want, c.ID)) {
		t.Errorf("pod cgroups %v, want only %s with the instance's in it", found, want)
	}
	uids, err := h2.r.ListPods()
	if err != nil || len(uids) != 1 || uids[0] != pod.UID {
		t.Fatalf("ListPods = %v, %v", uids, err)
	}
	if err := h2.r.Signal(context.Background(), c.ID, 9); err != nil {
		t.Fatal(err)
	}
	h2.waitExit(c.ID)
	stub := &model.Pod{Pod: &v1.Pod{}}
	stub.UID = pod.UID
	if err := h2.r.CleanupPod(context.Background(), stub); err != nil {
		t.Fatal(err)
	}
	for _, p := range cgroups.PodPaths(cg.Root, string(pod.UID)) {
		if cg.Hierarchy.Exists(p) {
			t.Errorf("cgroup %s is left after CleanupPod", p)
		}
	}
}
