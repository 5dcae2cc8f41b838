package process

import (
	"fmt"
	"slices"
	"strings"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/process/launch"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// shareTarget gives an ephemeral container with a targetContainerName
// (kubectl debug --target) the mounts of its target: the target's volumes
// at the target's paths, with the ephemeral container's own mounts winning
// where both mount a path, in a mount namespace of its own. So the debug
// container sees the target's volumes, though not what the target mounted
// itself, which an Exec in the target sees (it joins the target's
// namespace); the host name is the pod's for every container already. Any other container's
// mounts and mountpoints are returned as they are.
func (r *Runtime) shareTarget(pod *model.Pod, ref model.ContainerRef, mounts []launch.Mount, created []shim.Mountpoint) ([]launch.Mount, []shim.Mountpoint, error) {
	if ref.Role != model.RoleEphemeral || ref.Index >= len(pod.Spec.EphemeralContainers) {
		return mounts, created, nil
	}
	name := pod.Spec.EphemeralContainers[ref.Index].TargetContainerName
	if name == "" {
		return mounts, created, nil
	}
	i := slices.IndexFunc(pod.Containers(), func(t model.ContainerRef) bool {
		return t.Name == name && t.Role != model.RoleEphemeral && t.Role != model.RoleDefer
	})
	if i < 0 {
		return nil, nil, fmt.Errorf("targetContainerName %q: no such container", name)
	}
	target := pod.Containers()[i]
	tc := pod.Container(target)
	_, vars, err := containerEnv(pod, tc, target.SpecPath())
	if err != nil {
		return nil, nil, fmt.Errorf("targetContainerName %q: %w", name, err)
	}
	theirs, more, err := r.containerMounts(pod, tc, vars, "")
	if err != nil {
		return nil, nil, fmt.Errorf("targetContainerName %q: %w", name, err)
	}
	own := make(map[string]bool, len(mounts))
	for _, m := range mounts {
		own[m.Target] = true
	}
	for _, m := range theirs {
		if !own[m.Target] {
			mounts = append(mounts, m)
		}
	}
	// Parents first, as containerMounts orders them.
	slices.SortStableFunc(mounts, func(a, b launch.Mount) int {
		return strings.Count(a.Target, "/") - strings.Count(b.Target, "/")
	})
	return mounts, append(created, more...), nil
}
