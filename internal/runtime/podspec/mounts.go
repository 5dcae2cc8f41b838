package podspec

import (
	"fmt"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// MountSource is the host path that volumeMount m of a container of pod
// mounts: for an emptyDir its directory, emptyDirs/<volume name>; for a
// hostPath its path; then, when m has a subPath (or a subPathExpr, expanded
// with vars), the path inside the volume, created as a directory when
// missing (hostfs.SubPathSource). emptyDirs is the runtime's directory of
// the pod's emptyDirs. It fails for a volume the pod does not have or of a
// kind podward does not mount.
func MountSource(pod *model.Pod, m *v1.VolumeMount, vars Vars, emptyDirs string) (string, error) {
	vol := pod.Volume(m.Name)
	if vol == nil {
		return "", fmt.Errorf("volume %q not found", m.Name)
	}
	var src string
	switch {
	case vol.EmptyDir != nil:
		src = filepath.Join(emptyDirs, vol.Name)
	case vol.HostPath != nil:
		src = vol.HostPath.Path
	default:
		return "", fmt.Errorf("volume %q: unsupported type", vol.Name)
	}
	sub := m.SubPath
	if m.SubPathExpr != "" {
		sub = vars.Expand(m.SubPathExpr)
	}
	if sub == "" {
		return src, nil
	}
	src, err := hostfs.SubPathSource(src, sub)
	if err != nil {
		return "", fmt.Errorf("volume mount %q: %w", m.MountPath, err)
	}
	return src, nil
}
