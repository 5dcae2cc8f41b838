package daemon

import (
	"log/slog"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/cluster"
)

// machineAllocatable detects the machine podward runs on
// (cluster.DetectMachine; root's filesystem is its ephemeral storage) and
// returns it with its allocatable resources for maxPods pods, the Node's
// status.allocatable: what the runtimes read for a resourceFieldRef to a
// limit a container does not set (their Config.Allocatable, as the
// kubelet's defaultPodLimitsForDownwardAPI), and what the agent admits
// resizes against. When the machine cannot be read, that is logged and
// both are nil: such a value is then 0, and resizes are not checked.
func machineAllocatable(root string, maxPods int, log *slog.Logger) (v1.ResourceList, *cluster.Machine) {
	m, err := cluster.DetectMachine(root)
	if err != nil {
		log.Warn("cannot read the machine's capacity: resizes are not checked against it, and a resourceFieldRef to a missing limit reads 0", "err", err)
		return nil, nil
	}
	return m.Allocatable(int64(maxPods)), &m
}
