package process

import (
	"errors"
	"fmt"
	"os"
	"path"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// Check says whether this runtime can run pod as written, before anything
// of it starts. It reports every problem it finds, joined; each wraps
// runtime.ErrUnsupported. It has no side effects and may be called at any
// time.
func (r *Runtime) Check(pod *model.Pod) error {
	var errs []error
	for i := range pod.Spec.Volumes {
		if err := checkVolume(&pod.Spec.Volumes[i], i); err != nil {
			errs = append(errs, err)
		}
	}
	for _, ref := range pod.Containers() {
		if err := r.checkContainer(pod, ref, pod.Container(ref)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func checkVolume(vol *v1.Volume, i int) error {
	switch {
	case vol.EmptyDir != nil:
		switch vol.EmptyDir.Medium {
		case v1.StorageMediumDefault, v1.StorageMediumMemory:
			return nil
		}
		return runtime.Unsupported("spec.volumes[%d].emptyDir.medium: Unsupported value: %q (volume %q): the process runtime supports only the default medium and Memory", i, vol.EmptyDir.Medium, vol.Name)
	case vol.HostPath != nil:
		if vol.HostPath.Type != nil {
			switch *vol.HostPath.Type {
			case v1.HostPathUnset, v1.HostPathDirectoryOrCreate, v1.HostPathDirectory, v1.HostPathFileOrCreate,
				v1.HostPathFile, v1.HostPathSocket, v1.HostPathCharDev, v1.HostPathBlockDev:
			default:
				return runtime.Unsupported("spec.volumes[%d].hostPath.type: Unsupported value: %q (volume %q)", i, *vol.HostPath.Type, vol.Name)
			}
		}
		return nil
	}
	return runtime.Unsupported("spec.volumes[%d]: Unsupported value: volume %q: the process runtime supports only emptyDir and hostPath volumes", i, vol.Name)
}

// checkContainer is Check for one container; StartContainer and Exec check
// again, so that they never run what Check would reject.
func (r *Runtime) checkContainer(pod *model.Pod, ref model.ContainerRef, c *v1.Container) error {
	if c == nil {
		return fmt.Errorf("pod %s has no %s container %q: %w", pod.Key(), ref.Role, ref.Name, runtime.ErrNotFound)
	}
	p := ref.SpecPath()
	if len(c.Command) == 0 {
		return runtime.Unsupported("%s.command: Required value: the process runtime runs the command itself and has no image to take it from", p)
	}
	if _, _, err := containerEnv(pod, c, p); err != nil {
		return err
	}
	if len(c.VolumeDevices) > 0 {
		return runtime.Unsupported("%s.volumeDevices: Unsupported value: the process runtime has no block devices to give", p)
	}
	if c.Stdin || c.TTY {
		return runtime.Unsupported("%s.stdin: Unsupported value: the process runtime gives containers no stdin or terminal", p)
	}
	// Identity settings would be silently ignored: the container would run
	// as the agent's user. Refuse them rather than run with more rights
	// than asked.
	if err := checkIdentity(pod.Spec.SecurityContext, c.SecurityContext, p); err != nil {
		return err
	}
	if len(c.VolumeMounts) > 0 && r.euid() != 0 {
		return runtime.Unsupported("%s.volumeMounts: Forbidden: the process runtime needs root to give the container a private mount namespace for its volumes, and podward is not running as root", p)
	}
	for i, m := range c.VolumeMounts {
		mp := fmt.Sprintf("%s.volumeMounts[%d]", p, i)
		if pod.Volume(m.Name) == nil {
			return runtime.Unsupported("%s.name: Not found: %q", mp, m.Name)
		}
		if path.Clean("/"+m.MountPath) == "/" {
			return runtime.Unsupported("%s.mountPath: Invalid value: %q: the process runtime shares the host's root and cannot mount over it", mp, m.MountPath)
		}
		if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
			return runtime.Unsupported("%s.mountPropagation: Unsupported value: %q: the process runtime supports only None", mp, *m.MountPropagation)
		}
		if m.RecursiveReadOnly != nil && *m.RecursiveReadOnly == v1.RecursiveReadOnlyEnabled {
			return runtime.Unsupported("%s.recursiveReadOnly: Unsupported value: %q", mp, *m.RecursiveReadOnly)
		}
		if err := hostfs.CheckSubPath(m.SubPath); err != nil {
			return runtime.Unsupported("%s.subPath: Invalid value: %q: %v", mp, m.SubPath, err)
		}
	}
	return nil
}

// checkIdentity rejects the user and group settings the process runtime
// does not apply (runAsUser, runAsGroup, supplementalGroups, fsGroup,
// runAsNonRoot while the agent runs as root).
func checkIdentity(pod *v1.PodSecurityContext, c *v1.SecurityContext, p string) error {
	if c != nil {
		switch {
		case c.RunAsUser != nil:
			return runtime.Unsupported("%s.securityContext.runAsUser: Unsupported value: the process runtime runs containers as the agent's user", p)
		case c.RunAsGroup != nil:
			return runtime.Unsupported("%s.securityContext.runAsGroup: Unsupported value: the process runtime runs containers as the agent's group", p)
		case c.RunAsNonRoot != nil && *c.RunAsNonRoot && os.Geteuid() == 0:
			return runtime.Unsupported("%s.securityContext.runAsNonRoot: Forbidden: the process runtime would run the container as root", p)
		}
	}
	if pod != nil {
		switch {
		case pod.RunAsUser != nil:
			return runtime.Unsupported("spec.securityContext.runAsUser: Unsupported value: the process runtime runs containers as the agent's user")
		case pod.RunAsGroup != nil:
			return runtime.Unsupported("spec.securityContext.runAsGroup: Unsupported value: the process runtime runs containers as the agent's group")
		case len(pod.SupplementalGroups) > 0:
			return runtime.Unsupported("spec.securityContext.supplementalGroups: Unsupported value: the process runtime does not set groups")
		case pod.FSGroup != nil:
			return runtime.Unsupported("spec.securityContext.fsGroup: Unsupported value: the process runtime does not change volume ownership")
		case pod.RunAsNonRoot != nil && *pod.RunAsNonRoot && os.Geteuid() == 0:
			return runtime.Unsupported("spec.securityContext.runAsNonRoot: Forbidden: the process runtime would run the containers as root")
		}
	}
	return nil
}
