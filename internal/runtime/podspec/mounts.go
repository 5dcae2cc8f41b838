package podspec

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
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
// does not have or of a kind podward does not mount (which Check refuses
// before: the API server and CheckVolume), and for a subPath that leaves
// its volume or cannot be made for what the volume holds: the latter is a
// runtime.ContainerConfigError with the kubelet's message (SubPathError).
// container is the name of m's container, for that message.
func MountSource(pod *model.Pod, container string, m *v1.VolumeMount, vars Vars, emptyDirs string) (path string, sub *hostfs.SubPath, err error) {
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
		// The kubelet creates a subPath that does not exist (SafeMakeDir)
		// and then opens it (PrepareSafeSubpath), with a message for each.
		_, statErr := os.Stat(filepath.Join(src, subPath))
		return "", nil, SubPathError(m, container, !errors.Is(statErr, fs.ErrNotExist), err)
	}
	return s.HostPath(), &s, nil
}

// SubPathError is err, why the subPath of m, a volumeMount of container,
// could not be prepared (hostfs.PrepareSubPath) or opened to be mounted
// (hostfs.SubPath.Open), as the start of the container returns it. A
// refusal for what the volume holds (a *hostfs.ContentError: a symlink
// out of the volume or to nothing, a file where a directory is wanted, a
// component swapped or removed since the check) is the pod's doing and
// can be undone by it: it is a runtime.ContainerConfigError with the
// kubelet's makeMounts message, which names no host path (the cause
// stays in Err, for the agent's log). existed says whether the subPath
// existed, for the message: "failed to prepare subPath ..." if it did,
// else "failed to create subPath directory ...". Anything else is the
// host failing (EIO, ENOSPC, a mount that fails): unlike the kubelet,
// which makes every makeMounts error a CreateContainerConfigError, it
// stays a plain error naming m's mountPath, and the start fails
// (StartError), so that a broken machine is seen as one and not retried
// as if the pod had to change.
func SubPathError(m *v1.VolumeMount, container string, existed bool, err error) error {
	err = fmt.Errorf("volume mount %q: %w", m.MountPath, err)
	var ce *hostfs.ContentError
	if !errors.As(err, &ce) {
		return err
	}
	msg := fmt.Sprintf("failed to prepare subPath for volumeMount %q of container %q", m.Name, container)
	if !existed {
		msg = fmt.Sprintf("failed to create subPath directory for volumeMount %q of container %q", m.Name, container)
	}
	return &runtime.ContainerConfigError{Message: msg, Err: err}
}
