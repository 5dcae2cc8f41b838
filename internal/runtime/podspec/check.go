package podspec

import (
	"fmt"
	"path"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/capabilities"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// CheckVolume refuses the volume vol, the i-th of the pod's, unless podward
// can set it up: an emptyDir of the default medium or Memory, a hostPath
// of a type hostfs.PrepareHostPath knows, or a configMap, secret,
// downwardAPI or projected volume whose paths stay in it, whose fieldRefs
// a volume may project and whose sources podward can give (a
// serviceAccountToken only when canMintTokens: the runtime has an
// objects.Tokens; never a clusterTrustBundle or podCertificate). The error wraps
// runtime.ErrUnsupported and names the field.
func CheckVolume(vol *v1.Volume, i int, canMintTokens bool) error {
	switch {
	case ObjectVolume(vol):
		return checkObjectVolume(vol, i, canMintTokens)
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
	return runtime.Unsupported("spec.volumes[%d]: Unsupported value: volume %q: podward supports only emptyDir, hostPath, configMap, secret, downwardAPI and projected volumes", i, vol.Name)
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
	return checkCapabilities(c.SecurityContext, p)
}

// checkCapabilities refuses a capability Linux does not have, which a
// container runtime would silently skip (runc does).
func checkCapabilities(sc *v1.SecurityContext, p string) error {
	if sc == nil || sc.Capabilities == nil {
		return nil
	}
	for _, list := range []struct {
		field string
		caps  []v1.Capability
	}{{"add", sc.Capabilities.Add}, {"drop", sc.Capabilities.Drop}} {
		for i, c := range list.caps {
			if n := CapabilityName(c); n != "ALL" {
				if _, ok := capabilities.Number(n); !ok {
					return runtime.Unsupported("%s.securityContext.capabilities.%s[%d]: Unsupported value: %q: not a Linux capability", p, list.field, i, c)
				}
			}
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
