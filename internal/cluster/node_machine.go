package cluster

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
