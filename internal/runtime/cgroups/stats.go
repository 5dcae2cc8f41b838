package cgroups

import (
	"path/filepath"
)

// Memory is a cgroup's memory as the kubelet's stats report it.
type Memory struct {
	// Usage is memory.current on v2, memory.usage_in_bytes on v1.
	Usage uint64
	// WorkingSet is Usage minus the inactive file cache (memory.stat's
	// inactive_file, total_inactive_file on v1), never below zero: cAdvisor's
	// working set, which metrics-server serves and kubectl top shows.
	WorkingSet uint64
	// RSS is memory.stat's anon on v2, total_rss on v1.
	RSS uint64
}

// MemoryStats reads p's memory usage and its working set.
func (p Placement) MemoryStats() (Memory, error) {
	usage, err := p.MemoryUsage()
	if err != nil {
		return Memory{}, err
	}
	inactive, rss := "total_inactive_file", "total_rss"
	if p.Unified != "" {
		inactive, rss = "inactive_file", "anon"
	}
	stat := filepath.Join(p.memoryDir(), "memory.stat")
	in, err := readKey(stat, inactive)
	if err != nil {
		return Memory{}, err
	}
	m := Memory{Usage: usage, WorkingSet: usage - min(in, usage)}
	if m.RSS, err = readKey(stat, rss); err != nil {
		return Memory{}, err
	}
	return m, nil
}
