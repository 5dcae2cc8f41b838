package cgroups

import (
	"os"
	"path/filepath"
	"testing"
)

// The working set is cAdvisor's: usage minus the inactive file cache
// (cadvisor container/libcontainer/handler.go, setMemoryStats), which
// metrics-server reports and kubectl top shows.
func TestMemoryStats(t *testing.T) {
	write := func(dir, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	v2 := t.TempDir()
	write(v2, "memory.current", "10000\n")
	write(v2, "memory.stat", "anon 6000\nfile 4000\ninactive_file 3000\nactive_file 1000\n")
	v1 := t.TempDir()
	write(v1, "memory.usage_in_bytes", "5000\n")
	write(v1, "memory.stat", "rss 1\ninactive_file 1\ntotal_rss 2000\ntotal_inactive_file 9000\n")
	for name, tc := range map[string]struct {
		p    Placement
		want Memory
	}{
		"v2": {p: Placement{Unified: v2}, want: Memory{Usage: 10000, WorkingSet: 7000, RSS: 6000}},
		// More inactive cache than usage (the counters are not read at
		// once): no working set, never an underflow.
		"v1": {p: Placement{V1: map[string]V1Dir{"memory": {Mount: v1, Path: "/"}}}, want: Memory{Usage: 5000, WorkingSet: 0, RSS: 2000}},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := tc.p.MemoryStats()
			if err != nil || got != tc.want {
				t.Errorf("MemoryStats = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
