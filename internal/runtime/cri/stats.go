package cri

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/runtime"
)

var _ runtime.StatsProvider = (*Runtime)(nil)

// PodStats reads the usage of this Runtime's running containers from the
// CRI runtime (ListContainerStats) and of their pods' sandboxes
// (ListPodSandboxStats, where the runtime serves it: a pod's own usage
// is left out otherwise), as the kubelet's CRI stats provider does
// (pkg/kubelet/stats/cri_stats_provider.go): a container's start time is
// its creation time, its counters are the runtime's, stamped with the
// runtime's times.
func (r *Runtime) PodStats(ctx context.Context) ([]runtime.PodStats, error) {
	cctx, cancel := r.call(ctx)
	ctrs, err := r.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: r.selector(),
	}})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("pod stats: list containers: %w", err)
	}
	cctx, cancel = r.call(ctx)
	cstats, err := r.rt.ListContainerStats(cctx, &runtimeapi.ListContainerStatsRequest{Filter: &runtimeapi.ContainerStatsFilter{
		LabelSelector: r.selector(),
	}})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("pod stats: list container stats: %w", err)
	}
	byID := make(map[string]*runtimeapi.ContainerStats, len(cstats.GetStats()))
	for _, s := range cstats.GetStats() {
		byID[s.GetAttributes().GetId()] = s
	}
	sandboxes, err := r.sandboxStats(ctx)
	if err != nil {
		return nil, err
	}

	pods := map[types.UID]*runtime.PodStats{}
	for _, c := range ctrs.GetContainers() {
		s, ok := byID[c.Id]
		if !ok {
			continue // gone meanwhile
		}
		id := identify(c.Labels, c.Metadata)
		p, ok := pods[id.podUID]
		if !ok {
			p = &runtime.PodStats{UID: id.podUID, Namespace: id.podNamespace, Name: id.podName}
			if sb, ok := sandboxes[id.podUID]; ok {
				cpu, mem := criUsage(sb.GetLinux().GetCpu(), sb.GetLinux().GetMemory())
				p.CPU, p.Memory = &cpu, &mem
			}
			pods[id.podUID] = p
		}
		cpu, mem := criUsage(s.GetCpu(), s.GetMemory())
		p.Containers = append(p.Containers, runtime.ContainerStats{
			Name: id.container, ID: c.Id, StartedAt: time.Unix(0, c.CreatedAt), CPU: cpu, Memory: mem,
		})
	}
	out := make([]runtime.PodStats, 0, len(pods))
	for _, p := range pods {
		slices.SortFunc(p.Containers, func(a, b runtime.ContainerStats) int { return cmp.Compare(a.Name, b.Name) })
		out = append(out, *p)
	}
	slices.SortFunc(out, func(a, b runtime.PodStats) int { return cmp.Compare(a.UID, b.UID) })
	return out, nil
}

// sandboxStats are the usage of this Runtime's sandboxes, by pod UID;
// none when the CRI runtime does not serve ListPodSandboxStats.
func (r *Runtime) sandboxStats(ctx context.Context) (map[types.UID]*runtimeapi.PodSandboxStats, error) {
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ListPodSandboxStats(cctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: &runtimeapi.PodSandboxStatsFilter{
		LabelSelector: r.selector(),
	}})
	cancel()
	if status.Code(err) == codes.Unimplemented {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("pod stats: list sandbox stats: %w", err)
	}
	out := make(map[types.UID]*runtimeapi.PodSandboxStats, len(resp.GetStats()))
	for _, s := range resp.GetStats() {
		uid := types.UID(s.GetAttributes().GetLabels()[LabelPodUID])
		if uid == "" {
			uid = types.UID(s.GetAttributes().GetMetadata().GetUid())
		}
		out[uid] = s
	}
	return out, nil
}

// criUsage is the CRI's CPU and memory usage in the runtime's terms.
func criUsage(cpu *runtimeapi.CpuUsage, mem *runtimeapi.MemoryUsage) (runtime.CPUUsage, runtime.MemoryUsage) {
	return runtime.CPUUsage{Time: time.Unix(0, cpu.GetTimestamp()), UsageCoreNanoSeconds: cpu.GetUsageCoreNanoSeconds().GetValue()},
		runtime.MemoryUsage{
			Time:            time.Unix(0, mem.GetTimestamp()),
			UsageBytes:      mem.GetUsageBytes().GetValue(),
			WorkingSetBytes: mem.GetWorkingSetBytes().GetValue(),
			RSSBytes:        mem.GetRssBytes().GetValue(),
		}
}
