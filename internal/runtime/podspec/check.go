package podspec

import (
	"fmt"
	"path"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// CheckVolume refuses the volume vol, the i-th of the pod's, unless podward
// can set it up: an emptyDir of the default medium or Memory, or a hostPath
// of a type hostfs.PrepareHostPath knows. The error wraps
// runtime.ErrUnsupported and names the field.
func CheckVolume(vol *v1.Volume, i int) error {
	switch {
	case vol.EmptyDir != nil:
		switch vol.EmptyDir.Medium {
		case v1.StorageMediumDefault, v1.StorageMediumMemory:
			return nil
		}
		return runtime.Unsupported("spec.volumes[%d].emptyDir.medium: Unsupported value: %q (volume %q): podward supports only the default medium and Memory", i, vol.EmptyDir.Medium, vol.Name)
	case vol.HostPath != nil:
		if vol.HostPath.Type != nil && !hostfs.SupportsHostPathType(*vol.HostPath.Type) {
			return runtime.Unsupported("spec.volumes[%d].hostPath.type: Unsupported value: %q (volume %q)", i, *vol.HostPath.Type, vol.Name)
		}
		return nil
	}
	return runtime.Unsupported("spec.volumes[%d]: Unsupported value: volume %q: podward supports only emptyDir and hostPath volumes", i, vol.Name)
}

// CheckContainer refuses what no podward runtime can do for container ref
// of pod, c (pod.Container(ref)): a c that is nil (runtime.ErrNotFound),
// an env source CheckEnv refuses, volumeDevices, and a
// volumeMount that names no volume of the pod, mounts over the root, is
// recursively read-only (Enabled; IfPossible falls back to a read-only
// mount) or has a subPath that could leave its volume. It returns the
// first problem, which wraps runtime.ErrUnsupported and names the field. A
// runtime's Check calls it before its own refusals. It has no side
// effects.
func CheckContainer(pod *model.Pod, ref model.ContainerRef, c *v1.Container) error {
	if c == nil {
		return fmt.Errorf("pod %s has no %s container %q: %w", pod.Key(), ref.Role, ref.Name, runtime.ErrNotFound)
	}
	p := ref.SpecPath()
	if err := CheckEnv(c, p); err != nil {
		return err
	}
	if len(c.VolumeDevices) > 0 {
		return runtime.Unsupported("%s.volumeDevices: Unsupported value: podward has no block devices to give", p)
	}
	for i := range c.VolumeMounts {
		if err := checkMount(pod, &c.VolumeMounts[i], fmt.Sprintf("%s.volumeMounts[%d]", p, i)); err != nil {
			return err
		}
	}
	return nil
}

// checkMount is CheckContainer for one volumeMount, m, at field path mp.
func checkMount(pod *model.Pod, m *v1.VolumeMount, mp string) error {
	if pod.Volume(m.Name) == nil {
		return runtime.Unsupported("%s.name: Not found: %q", mp, m.Name)
	}
	if path.Clean("/"+m.MountPath) == "/" {
		return runtime.Unsupported("%s.mountPath: Invalid value: %q: cannot mount over the container's root", mp, m.MountPath)
	}
	if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled {
		return runtime.Unsupported("%s.recursiveReadOnly: Unsupported value: %q: supported values: %q, %q", mp, *m.RecursiveReadOnly, v1.RecursiveReadOnlyDisabled, v1.RecursiveReadOnlyIfPossible)
	}
	if err := hostfs.CheckSubPath(m.SubPath); err != nil {
		return runtime.Unsupported("%s.subPath: Invalid value: %q: %v", mp, m.SubPath, err)
	}
	return nil
}
