package cri

import (
	"context"
	"testing"
	"time"

	"github.com/podward/podward/internal/runtime"
)

// The CRI runtime's usage, from containerd's ListContainerStats and
// ListPodSandboxStats, as the kubelet's CRI stats provider reads it
// (pkg/kubelet/stats/cri_stats_provider.go): a container spinning on a CPU
// has a CPU counter that grows, one holding 64 MiB a working set of at
// least that, and the pod its sandbox's usage.
func TestIntegrationStats(t *testing.T) {
	r := realRuntime(t, t.TempDir(), nil)
	pod := realPod(t, "stats", map[string]string{
		"spin": "while :; do :; done",
		"hold": "dd if=/dev/zero bs=64M count=1 2>/dev/null | sleep 600",
	}, "spin", "hold")
	setUp(t, r, pod)
	startIn(t, r, pod, "spin", 0)
	startIn(t, r, pod, "hold", 0)

	find := func() (spin, hold runtime.ContainerStats, p runtime.PodStats) {
		t.Helper()
		pods, err := r.PodStats(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, ps := range pods {
			if ps.UID != pod.UID {
				continue
			}
			p = ps
			for _, c := range ps.Containers {
				switch c.Name {
				case "spin":
					spin = c
				case "hold":
					hold = c
				}
			}
		}
		return spin, hold, p
	}
	deadline := time.After(60 * time.Second)
	// containerd refreshes its stats now and then: read them at each tick.
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	first, _, _ := find()
	for {
		spin, hold, p := find()
		if spin.CPU.UsageCoreNanoSeconds > first.CPU.UsageCoreNanoSeconds && spin.CPU.Time.After(first.CPU.Time) &&
			hold.Memory.WorkingSetBytes >= 64<<20 {
			t.Logf("spin %+v, hold %+v, pod cpu %v memory %v", spin, hold, p.CPU, p.Memory)
			if p.Name != "stats" || p.Namespace != "podward-test" || spin.StartedAt.IsZero() {
				t.Errorf("pod %s/%s, spin started %v: want the pod's names and the containers' creation times", p.Namespace, p.Name, spin.StartedAt)
			}
			if p.Memory != nil && p.Memory.WorkingSetBytes < 64<<20 {
				t.Errorf("the pod's working set %d is below its container's", p.Memory.WorkingSetBytes)
			}
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("no usage moved: spin %+v (first %+v), hold %+v", spin, first, hold)
		}
	}
}
