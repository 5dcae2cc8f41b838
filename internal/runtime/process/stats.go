package process

import (
	"cmp"
	"context"
	"path"
	"path/filepath"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/cgroups"
)

var _ runtime.StatsProvider = (*Runtime)(nil)

// statTarget is a running instance whose cgroup is to be read, copied out
// of the runtime's lock so that the reads happen without it.
type statTarget struct {
	podUID          types.UID
	namespace, name string
	stats           runtime.ContainerStats
	cgroup          cgroups.Placement
}

// PodStats reads the usage of every running instance from its cgroup, and
// each pod's from the pod's cgroup (its instances' parent, which holds its
// shims too, as the kubelet's pod cgroup holds the sandbox). A runtime
// without cgroups has no usage to read: runtime.ErrNoStats. An instance whose cgroup is gone (it
// exited meanwhile) is left out.
func (r *Runtime) PodStats(ctx context.Context) ([]runtime.PodStats, error) {
	if r.cgroups == nil {
		return nil, runtime.ErrNoStats
	}
	var targets []statTarget
	r.mu.Lock()
	for _, in := range r.instances {
		if in.cgroup == nil || in.startedAt.IsZero() || in.exitStatus() != nil {
			continue
		}
		targets = append(targets, statTarget{
			podUID: in.podUID, namespace: in.pod.Namespace, name: in.pod.Name,
			stats:  runtime.ContainerStats{Name: in.container, ID: in.id, StartedAt: in.startedAt},
			cgroup: *in.cgroup,
		})
	}
	r.mu.Unlock()
	slices.SortFunc(targets, func(a, b statTarget) int {
		return cmp.Or(cmp.Compare(a.podUID, b.podUID), cmp.Compare(a.stats.Name, b.stats.Name))
	})
	var pods []runtime.PodStats
	for _, t := range targets {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cpu, mem, err := r.readUsage(t.cgroup)
		if err != nil {
			continue // it exited: its cgroup went with it
		}
		t.stats.CPU, t.stats.Memory = cpu, mem
		if n := len(pods); n == 0 || pods[n-1].UID != t.podUID {
			ps := runtime.PodStats{UID: t.podUID, Namespace: t.namespace, Name: t.name}
			if cpu, mem, err := r.readUsage(parentCgroup(t.cgroup)); err == nil {
				ps.CPU, ps.Memory = &cpu, &mem
			}
			pods = append(pods, ps)
		}
		p := &pods[len(pods)-1]
		// Two instances of one container run while a restart overlaps
		// its predecessor's end: keep the newer.
		if i := slices.IndexFunc(p.Containers, func(c runtime.ContainerStats) bool { return c.Name == t.stats.Name }); i >= 0 {
			if t.stats.StartedAt.After(p.Containers[i].StartedAt) {
				p.Containers[i] = t.stats
			}
			continue
		}
		p.Containers = append(p.Containers, t.stats)
	}
	return pods, nil
}

// readUsage reads the CPU and memory counters of cg, stamped with the
// runtime's clock.
func (r *Runtime) readUsage(cg cgroups.Placement) (runtime.CPUUsage, runtime.MemoryUsage, error) {
	cpu, err := cg.CPUUsage()
	if err != nil {
		return runtime.CPUUsage{}, runtime.MemoryUsage{}, err
	}
	mem, err := cg.MemoryStats()
	if err != nil {
		return runtime.CPUUsage{}, runtime.MemoryUsage{}, err
	}
	now := r.clock.Now()
	return runtime.CPUUsage{Time: now, UsageCoreNanoSeconds: uint64(cpu)},
		runtime.MemoryUsage{Time: now, UsageBytes: mem.Usage, WorkingSetBytes: mem.WorkingSet, RSSBytes: mem.RSS}, nil
}

// parentCgroup is the cgroup above cg: an instance's pod cgroup.
func parentCgroup(cg cgroups.Placement) cgroups.Placement {
	if cg.Unified != "" {
		return cgroups.Placement{Unified: filepath.Dir(cg.Unified)}
	}
	p := cgroups.Placement{V1: make(map[string]cgroups.V1Dir, len(cg.V1))}
	for c, d := range cg.V1 {
		p.V1[c] = cgroups.V1Dir{Mount: d.Mount, Path: path.Dir(d.Path)}
	}
	return p
}
