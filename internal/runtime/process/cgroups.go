package process

import (
	"errors"
	"fmt"
	"path"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/cgroups"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podspec"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// CgroupConfig is how the runtime enforces resource limits with cgroups
// (package cgroups has the layout).
type CgroupConfig struct {
	// Hierarchy is the host's cgroup file system (cgroups.Detect).
	Hierarchy *cgroups.Hierarchy
	// Root is podward's cgroup, from each hierarchy's root ("/podward").
	Root string
	// PodPidsLimit, when above zero, is each pod's limit of processes
	// (the kubelet's podPidsLimit, --pod-max-pids).
	PodPidsLimit int64
}

// ErrMemoryBelowUsage is a resize refused because the new memory limit
// is below what the container uses now.
var ErrMemoryBelowUsage = errors.New("memory limit below usage")

// podCgroups is the runtime's side of the cgroups: nil when the runtime
// runs without them.
type podCgroups struct {
	CgroupConfig
	// memoryCapacity is the machine's memory, for the containers'
	// oom_score_adj.
	memoryCapacity int64
}

func newPodCgroups(cfg *CgroupConfig) (*podCgroups, error) {
	if cfg == nil {
		return nil, nil
	}
	if cfg.Hierarchy == nil || cfg.Root == "" {
		return nil, errors.New("cgroups: Config.Cgroups needs a Hierarchy and a Root")
	}
	if err := cfg.Hierarchy.Init(cfg.Root); err != nil {
		return nil, err
	}
	mem, err := hostfs.MemoryCapacity()
	if err != nil {
		return nil, err
	}
	return &podCgroups{CgroupConfig: *cfg, memoryCapacity: mem}, nil
}

// podPath is the pod's cgroup.
func (c *podCgroups) podPath(pod *model.Pod) string {
	return podspec.PodCgroup(c.Root, pod)
}

// preparePod creates the pod's cgroup with the pod's limits and its pid
// limit, and its shims' cgroup. Idempotent: a pod's cgroup that exists
// (made before an agent restart) is the pod's, with its limits set again.
func (c *podCgroups) preparePod(pod *model.Pod) error {
	p := c.podPath(pod)
	if err := c.Hierarchy.Create(p, c.podLimits(pod)); err != nil {
		return err
	}
	return c.Hierarchy.CreateShims(p)
}

// podLimits is what the pod's cgroup is given: the pod's resources and pid
// limit (podspec.PodCgroupResources, as on the CRI runtime), with room for
// its shims.
func (c *podCgroups) podLimits(pod *model.Pod) cgroups.Resources {
	res := podspec.PodCgroupResources(pod, c.PodPidsLimit)
	if res.Memory > 0 {
		res.Memory += cgroups.ShimMemory * int64(len(pod.Containers()))
	}
	if res.Pids > 0 && c.Hierarchy.Version() == cgroups.V2 {
		res.Pids += cgroups.ShimPids * int64(len(pod.Containers()))
	}
	return res
}

// prepareInstance creates the cgroup of the instance id of container c
// with c's limits, and sets where the instance's shim and container go in
// its spec. The caller removes it (cgroups.Placement.Remove) if the
// instance does not start.
func (c *podCgroups) prepareInstance(pod *model.Pod, ctr *v1.Container, id string, spec *shim.Spec) error {
	p := path.Join(c.podPath(pod), id)
	if err := c.Hierarchy.Create(p, c.containerLimits(pod, ctr)); err != nil {
		return err
	}
	cg := c.Hierarchy.Placement(p)
	shimCg := c.Hierarchy.ShimPlacement(c.podPath(pod))
	adj := podspec.OOMScoreAdj(pod, ctr, c.memoryCapacity)
	spec.Process.Cgroup, spec.ShimCgroup, spec.OOMScoreAdj = &cg, &shimCg, &adj
	return nil
}

// containerLimits is what the cgroup of an instance of ctr, of pod, is
// given.
func (c *podCgroups) containerLimits(pod *model.Pod, ctr *v1.Container) cgroups.Resources {
	r := podspec.ContainerResources(pod, ctr)
	return cgroups.Resources{
		CPUShares: uint64(r.CPUShares), CPUQuota: r.CPUQuota, Memory: r.Memory,
		OOMGroup: c.Hierarchy.Version() == cgroups.V2,
	}
}

// resize sets the limits of the instance id of ctr, and the pod's, to
// what pod's spec gives them now. The pod's go first, so that a container
// whose limit grows has room in its pod; when that write fails (a pod
// limit below what the pod uses: a shrink), the container's go first and
// the pod's are written again after.
func (c *podCgroups) resize(pod *model.Pod, ctr *v1.Container, id string) error {
	p := c.podPath(pod)
	inst := path.Join(p, id)
	// A memory limit below what the container uses is not set, as the
	// kubelet does not set it (pkg/kubelet/kuberuntime/kuberuntime_manager.go,
	// doPodResizeAction): the kernel would reclaim or OOM-kill to get there.
	if lim := c.containerLimits(pod, ctr).Memory; lim > 0 {
		if used, err := c.Hierarchy.Placement(inst).MemoryUsage(); err == nil && used > uint64(lim) {
			return fmt.Errorf("%w: attempting to set container memory limit (%d) below current usage (%d)", ErrMemoryBelowUsage, lim, used)
		}
	}
	if err := c.Hierarchy.Update(p, c.podLimits(pod)); err == nil {
		return c.Hierarchy.Update(inst, c.containerLimits(pod, ctr))
	}
	if err := c.Hierarchy.Update(inst, c.containerLimits(pod, ctr)); err != nil {
		return err
	}
	return c.Hierarchy.Update(p, c.podLimits(pod))
}

// removePod removes the pod's cgroups wherever they are under the root
// (a pod known only from disk has no QoS class), killing what is left in
// them. Idempotent.
func (c *podCgroups) removePod(uid types.UID) error {
	var errs []error
	for _, p := range cgroups.PodPaths(c.Root, string(uid)) {
		errs = append(errs, c.Hierarchy.Remove(p))
	}
	return errors.Join(errs...)
}

// hasPod says whether the pod has a cgroup left under the root.
func (c *podCgroups) hasPod(uid types.UID) bool {
	for _, p := range cgroups.PodPaths(c.Root, string(uid)) {
		if c.Hierarchy.Exists(p) {
			return true
		}
	}
	return false
}

// ExecCgroup is the cgroup an exec session in the running instance of
// the container of the pod must run in (its instance's), nil when the
// runtime has no cgroups or none runs. The exec path sets it as the
// process's launch.Spec.Cgroup, which moves the init helper into it
// before the command runs.
func (r *Runtime) ExecCgroup(uid types.UID, container string) *cgroups.Placement {
	r.mu.Lock()
	defer r.mu.Unlock()
	var cg *cgroups.Placement
	attempt := -1
	for _, in := range r.byPod[uid] {
		if in.container == container && in.attempt > attempt && in.exitStatus() == nil {
			cg, attempt = in.cgroup, in.attempt
		}
	}
	return cg
}
