package cri

import (
	"fmt"

	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/cgroups"
	"github.com/podward/podward/internal/runtime/podspec"
)

// The pod's cgroup, as the kubelet's pod container manager has it
// (pkg/kubelet/cm/pod_container_manager_linux.go): with Config.Cgroups,
// the runtime makes <CgroupParent>/<qos>/pod<UID> itself, with the pod's
// limits and pid limit, before the sandbox runs, and passes it as the
// sandbox's cgroup parent: the CRI runtime puts the sandbox's and each
// container's cgroups inside it (as children: their own limits are the
// containers'), so that what the pod's containers use together is held to
// the pod's limits. The rules are the process runtime's
// (podspec.PodCgroupResources, package cgroups), without its shims: the
// CRI runtime's shims are not in the pod's cgroup. CleanupPod removes it
// (removePodCgroups) once the sandbox is gone; ListPods finds a pod whose
// removal failed by its cgroup.
//
//	PreparePod ─▶ ensurePodCgroup ─▶ RunPodSandbox(cgroup_parent) ─▶ containers ...
//	CleanupPod ─▶ containers and sandbox removed ─▶ removePodCgroups

// ensurePodCgroup makes the pod's cgroup with the limits its spec gives it
// now, or sets them again on the one that exists (made before an agent
// restart, or by the CRI runtime, which makes a parent it is given without
// limits). It is idempotent; without Config.Cgroups it does nothing.
func (r *Runtime) ensurePodCgroup(pod *model.Pod) error {
	if r.cgroups == nil {
		return nil
	}
	if err := r.cgroups.Create(podspec.PodCgroup(r.cgroupParent, pod), podspec.PodCgroupResources(pod, r.podPidsLimit)); err != nil {
		return fmt.Errorf("the pod's cgroup: %w", err)
	}
	return nil
}

// hasPodCgroup says whether the pod has a cgroup left under the cgroup
// parent (only known with Config.Cgroups).
func (r *Runtime) hasPodCgroup(uid types.UID) bool {
	if r.cgroups == nil {
		return false
	}
	for _, p := range cgroups.PodPaths(r.cgroupParent, string(uid)) {
		if r.cgroups.Exists(p) {
			return true
		}
	}
	return false
}
