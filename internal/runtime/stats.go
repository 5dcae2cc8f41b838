package runtime

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// ErrNoStats is a StatsProvider's answer when it cannot read the usage at
// all (the process runtime without cgroups), rather than no pod running.
var ErrNoStats = errors.New("the runtime reports no resource usage")

// CPUUsage is the CPU time a cgroup's processes used up to Time, as the
// CRI's CpuUsage and the kubelet's stats API report it: cumulative, so a
// rate (cores) needs two of them.
type CPUUsage struct {
	// Time is when it was read.
	Time time.Time
	// UsageCoreNanoSeconds is the CPU time used since the cgroup was
	// made, in core-nanoseconds.
	UsageCoreNanoSeconds uint64
}

// MemoryUsage is a cgroup's memory at Time.
type MemoryUsage struct {
	// Time is when it was read.
	Time time.Time
	// UsageBytes is all the memory charged to it, the page cache
	// included.
	UsageBytes uint64
	// WorkingSetBytes is the usage minus the inactive file cache (the
	// pages the kernel takes back first), as cAdvisor computes it and
	// metrics-server reports it: what kubectl top shows.
	WorkingSetBytes uint64
	// RSSBytes is its anonymous memory (and swap cache).
	RSSBytes uint64
}

// ContainerStats is the usage of the running instance of one container.
type ContainerStats struct {
	// Name is the container's name in its pod.
	Name string
	// ID is the instance's.
	ID string
	// StartedAt is when the instance started.
	StartedAt time.Time
	CPU       CPUUsage
	Memory    MemoryUsage
}

// PodStats is the usage of one pod with a running container: the pod's
// own (its cgroup, all its containers and what the runtime runs for it)
// and each running container's.
type PodStats struct {
	UID             types.UID
	Namespace, Name string
	// CPU and Memory are the pod's; nil when the runtime cannot read
	// them (a pod without a cgroup of its own).
	CPU    *CPUUsage
	Memory *MemoryUsage
	// Containers are the running instances, by name.
	Containers []ContainerStats
}
