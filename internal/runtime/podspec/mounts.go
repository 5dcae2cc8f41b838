package podspec

import (
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// MountSource is what volumeMount m of a container of pod mounts: for an
// emptyDir, configMap, secret, downwardAPI or projected volume its
// directory, emptyDirs/<volume name>; for a hostPath its path. A subPath
// of a configMap, secret, downwardAPI or projected volume is taken in the
// data it holds now (hostfs.DataPath): it is not updated, as in Kubernetes.
// When m has a subPath (or a subPathExpr, expanded with vars by
// ExpandSubPath, whose errors are runtime.ContainerConfigErrors), sub is that
// path inside the volume, checked and created as a directory when missing
// (hostfs.PrepareSubPath), and path is only sub.HostPath(), for messages:
// the runtime mounts what sub.Open opens, never the path. emptyDirs is the
// runtime's directory of the pod's emptyDirs. It fails for a volume the pod
// does not have or of a kind podward does not mount, and for a subPath
// that leaves its volume.
func MountSource(pod *model.Pod, m *v1.VolumeMount, vars Vars, emptyDirs string) (path string, sub *hostfs.SubPath, err error) {
	vol := pod.Volume(m.Name)
	if vol == nil {
		return "", nil, fmt.Errorf("volume %q not found", m.Name)
	}
	var src string
	switch {
	case vol.EmptyDir != nil, ObjectVolume(vol):
		src = filepath.Join(emptyDirs, vol.Name)
	case vol.HostPath != nil:
		src = vol.HostPath.Path
	default:
		return "", nil, fmt.Errorf("volume %q: unsupported type", vol.Name)
	}
	subPath := m.SubPath
	if m.SubPathExpr != "" {
		expanded, err := ExpandSubPath(m, vars)
		if err != nil {
			return "", nil, err
		}
		subPath = expanded
	}
	if subPath == "" {
		return src, nil, nil
	}
	if ObjectVolume(vol) {
		subPath = hostfs.DataPath(src, subPath)
	}
	s, err := hostfs.PrepareSubPath(src, subPath)
	if err != nil {
		return "", nil, fmt.Errorf("volume mount %q: %w", m.MountPath, err)
	}
	return s.HostPath(), &s, nil
}
