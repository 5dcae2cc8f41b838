package agent

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/wire"
)

// ErrNoStats is returned when the runtime reports no resource usage: it
// has no runtime.StatsProvider, or its own is runtime.ErrNoStats.
var ErrNoStats = runtime.ErrNoStats

// UsageWindow is the shortest time between the two CPU samples a rate is
// computed from. metrics-server computes it between two scrapes of the
// kubelet (15 s apart by default); the agent keeps the last sample of each
// running container instead, so that a `podward top` after another gets
// the rate since that one, and the first waits this long for a second.
const UsageWindow = time.Second

// PodStats is the runtime's usage of every pod with a running container
// (runtime.StatsProvider): counters, for the kubelet's stats endpoints.
// ErrNoStats when the runtime has none.
func (a *Agent) PodStats(ctx context.Context) ([]runtime.PodStats, error) {
	sp, ok := a.cfg.Runtime.(runtime.StatsProvider)
	if !ok {
		return nil, ErrNoStats
	}
	return sp.PodStats(ctx)
}

// PodMetrics is the usage of the running containers of the pods of ns
// ("" for all namespaces), or of the pod ns/name only when name is set, as
// the resource metrics API serves it: each container's CPU rate over the
// window since the sample before, and its memory working set now. A pod
// unknown to the runtime's stats (not running, or no container has a rate
// yet) is left out; for name it is ErrNotFound. When a container has no
// earlier sample, it waits UsageWindow (or until ctx is done) for a second
// one.
func (a *Agent) PodMetrics(ctx context.Context, ns, name string) ([]wire.PodMetrics, error) {
	stats, err := a.PodStats(ctx)
	if err != nil {
		return nil, err
	}
	if a.usage.observe(stats) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-a.cfg.Clock.After(UsageWindow):
		}
		if stats, err = a.PodStats(ctx); err != nil {
			return nil, err
		}
		a.usage.observe(stats)
	}
	var out []wire.PodMetrics
	for _, ps := range stats {
		if (ns != "" && ps.Namespace != ns) || (name != "" && ps.Name != name) {
			continue
		}
		if pm, ok := a.usage.podMetrics(ps); ok {
			out = append(out, pm)
		}
	}
	if name != "" && len(out) == 0 {
		return nil, fmt.Errorf("%w: %s/%s has no metrics", ErrNotFound, ns, name)
	}
	return out, nil
}

// cpuSamples are a container instance's last two CPU samples at least
// UsageWindow apart; prev is zero until there are two.
type cpuSamples struct {
	prev, last runtime.CPUUsage
}

// usageSamples keeps the CPU samples of the running container instances,
// by instance ID: bounded by them, since each observe drops the instances
// that no longer run. Safe for concurrent use; the zero value is ready.
type usageSamples struct {
	mu   sync.Mutex
	byID map[string]cpuSamples
}

// observe records the samples of stats, the usage of every running pod,
// and forgets the instances it does not list. A sample less than
// UsageWindow after the last one kept is not kept (the rate stays the one
// over the full window). It says whether an instance still has no rate.
func (u *usageSamples) observe(stats []runtime.PodStats) (missing bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	seen := make(map[string]cpuSamples)
	for _, ps := range stats {
		for _, c := range ps.Containers {
			s, ok := u.byID[c.ID]
			switch {
			case !ok:
				s = cpuSamples{last: c.CPU}
			case c.CPU.Time.Sub(s.last.Time) >= UsageWindow:
				s = cpuSamples{prev: s.last, last: c.CPU}
			}
			if s.prev.Time.IsZero() {
				missing = true
			}
			seen[c.ID] = s
		}
	}
	u.byID = seen
	return missing
}

// podMetrics is the metrics of ps's containers that have a rate, false
// when none has.
func (u *usageSamples) podMetrics(ps runtime.PodStats) (wire.PodMetrics, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	pm := wire.PodMetrics{
		TypeMeta:   metav1.TypeMeta{Kind: "PodMetrics", APIVersion: wire.MetricsGroupVersion},
		ObjectMeta: metav1.ObjectMeta{Name: ps.Name, Namespace: ps.Namespace},
	}
	for _, c := range ps.Containers {
		s, ok := u.byID[c.ID]
		if !ok {
			continue
		}
		nano, window, ok := CPURate(s.prev, s.last)
		if !ok {
			continue
		}
		if s.last.Time.After(pm.Timestamp.Time) {
			pm.Timestamp, pm.Window = metav1.NewTime(s.last.Time), metav1.Duration{Duration: window}
		}
		pm.Containers = append(pm.Containers, wire.ContainerMetrics{Name: c.Name, Usage: v1.ResourceList{
			v1.ResourceCPU:    *resource.NewScaledQuantity(int64(nano), resource.Nano),
			v1.ResourceMemory: *resource.NewQuantity(int64(c.Memory.WorkingSetBytes), resource.BinarySI),
		}})
	}
	return pm, len(pm.Containers) > 0
}

// CPURate is the CPU used between prev and last, in nanocores (1e9 is one
// core), and the window between them, as metrics-server computes it from
// two scrapes: the counter's increase over the time between them. It is
// false when there is no rate: prev is missing or not before last, or the
// counter went back (a new cgroup under the same name).
func CPURate(prev, last runtime.CPUUsage) (nanoCores uint64, window time.Duration, ok bool) {
	window = last.Time.Sub(prev.Time)
	if prev.Time.IsZero() || window <= 0 || last.UsageCoreNanoSeconds < prev.UsageCoreNanoSeconds {
		return 0, 0, false
	}
	used := last.UsageCoreNanoSeconds - prev.UsageCoreNanoSeconds
	return uint64(float64(used) / window.Seconds()), window, true
}
