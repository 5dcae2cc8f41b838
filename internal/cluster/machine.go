package cluster

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Machine describes the host, as the Node reports it: its capacity and
// status.nodeInfo's system fields.
type Machine struct {
	CPUs        int
	MemoryBytes int64
	// StorageBytes is the size of the filesystem of podward's root
	// (ephemeral-storage).
	StorageBytes  int64
	MachineID     string
	SystemUUID    string
	BootID        string
	KernelVersion string
	// OSImage is the distribution's PRETTY_NAME ("Debian GNU/Linux 13
	// (trixie)").
	OSImage string
}

// Capacity is the machine's capacity, status.capacity of the Node.
func (m Machine) Capacity(maxPods int64) v1.ResourceList {
	return v1.ResourceList{
		v1.ResourceCPU:              *resource.NewQuantity(int64(m.CPUs), resource.DecimalSI),
		v1.ResourceMemory:           *resource.NewQuantity(m.MemoryBytes, resource.BinarySI),
		v1.ResourceEphemeralStorage: *resource.NewQuantity(m.StorageBytes, resource.BinarySI),
		v1.ResourcePods:             *resource.NewQuantity(maxPods, resource.DecimalSI),
	}
}

// Allocatable is what the machine's pods may be given, status.allocatable
// of the Node, and what the agent admits resizes against: the whole capacity,
// as podward reserves nothing for the system and does not evict (the
// kubelet subtracts its reservations and its hard eviction thresholds).
func (m Machine) Allocatable(maxPods int64) v1.ResourceList {
	return m.Capacity(maxPods)
}
