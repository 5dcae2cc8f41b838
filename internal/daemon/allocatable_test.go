package daemon

import (
	"io"
	"log/slog"
	goruntime "runtime"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The runtimes get the machine's allocatable: its CPUs, memory, root
// filesystem and the pod count, the Node's status.allocatable.
func TestMachineAllocatable(t *testing.T) {
	alloc, m := machineAllocatable(t.TempDir(), 7, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if m == nil || alloc == nil {
		t.Skip("the machine cannot be read here")
	}
	if cpu := alloc[v1.ResourceCPU]; cpu.Value() != int64(goruntime.NumCPU()) {
		t.Errorf("cpu = %s, want %d", cpu.String(), goruntime.NumCPU())
	}
	if mem := alloc[v1.ResourceMemory]; mem.Value() != m.MemoryBytes || mem.Value() <= 0 {
		t.Errorf("memory = %s, want %d", mem.String(), m.MemoryBytes)
	}
	if st := alloc[v1.ResourceEphemeralStorage]; st.Value() != m.StorageBytes || st.Value() <= 0 {
		t.Errorf("ephemeral-storage = %s, want %d", st.String(), m.StorageBytes)
	}
	if pods := alloc[v1.ResourcePods]; pods.Value() != 7 {
		t.Errorf("pods = %s, want 7", pods.String())
	}
}
