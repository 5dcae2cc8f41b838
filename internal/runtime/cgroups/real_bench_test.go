package cgroups

import (
	"fmt"
	"os"
	"testing"
)

// BenchmarkCreateRemove measures a pod's cgroups on the host's real
// hierarchy (root only): the pod's, its shims', one instance's, then their
// removal — the cgroup work a pod's start and cleanup add.
func BenchmarkCreateRemove(b *testing.B) {
	if os.Geteuid() != 0 {
		b.Skip("needs root")
	}
	h, err := Detect()
	if err != nil {
		b.Skip(err)
	}
	root := fmt.Sprintf("/podward-bench-%d", os.Getpid())
	if err := h.Init(root); err != nil {
		b.Skip(err)
	}
	defer h.Remove(root)
	for i := 0; b.Loop(); i++ {
		pod := PodPath(root, Burstable, fmt.Sprint(i))
		if err := h.Create(pod, Resources{CPUShares: 102, Memory: 64 << 20}); err != nil {
			b.Fatal(err)
		}
		if err := h.Create(pod+"/"+ShimsDir, Resources{}); err != nil {
			b.Fatal(err)
		}
		if err := h.Create(pod+"/c", Resources{CPUShares: 102, Memory: 32 << 20}); err != nil {
			b.Fatal(err)
		}
		if err := h.Remove(pod); err != nil {
			b.Fatal(err)
		}
	}
}
