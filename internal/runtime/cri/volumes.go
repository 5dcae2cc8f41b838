package cri

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// prepareVolume creates an emptyDir's directory (a tmpfs for medium
// Memory), or checks (and for the *OrCreate types creates) a hostPath's
// path as its type says, as the kubelet does.
func (r *Runtime) prepareVolume(pod *model.Pod, vol *v1.Volume) error {
	switch {
	case vol.EmptyDir != nil:
		return r.prepareEmptyDir(pod, vol)
	case vol.HostPath != nil:
		typ := v1.HostPathUnset
		if vol.HostPath.Type != nil {
			typ = *vol.HostPath.Type
		}
		check, ok := hostPathChecks[typ]
		if !ok {
			return fmt.Errorf("hostPath type %q is not supported", typ)
		}
		return check(vol.HostPath.Path)
	}
	return fmt.Errorf("volume %q: unsupported type", vol.Name)
}

func (r *Runtime) prepareEmptyDir(pod *model.Pod, vol *v1.Volume) error {
	dir := r.volumeDir(pod.UID, vol.Name)
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if vol.EmptyDir.Medium == v1.StorageMediumMemory {
		mounted, err := hostfs.IsMountpoint(dir)
		if err != nil {
			return err
		}
		if !mounted {
			opts := "mode=0777"
			if limit := vol.EmptyDir.SizeLimit; limit != nil && limit.Sign() > 0 {
				opts += fmt.Sprintf(",size=%d", limit.Value())
			}
			if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
				return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
			}
		}
	}
	// Like the kubelet's: writable by any user of the pod, umask or not,
	// and owned by the fsGroup, which new files inherit.
	mode := os.FileMode(0o777)
	if sc := pod.Spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		if err := os.Lchown(dir, -1, int(*sc.FSGroup)); err != nil {
			return err
		}
		mode |= os.ModeSetgid
	}
	return os.Chmod(dir, mode)
}

// hostPathChecks checks, or creates, a hostPath volume's path, by type.
var hostPathChecks = map[v1.HostPathType]func(p string) error{
	v1.HostPathUnset: func(string) error { return nil },
	v1.HostPathDirectoryOrCreate: func(p string) error {
		if err := os.MkdirAll(p, 0o755); err != nil {
			return fmt.Errorf("hostPath type check failed: %w", err)
		}
		return nil
	},
	v1.HostPathDirectory: statIs("a directory", func(m fs.FileMode) bool { return m.IsDir() }),
	v1.HostPathFileOrCreate: func(p string) error {
		// Like the kubelet, create the file but not its parent.
		f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE, 0o644)
		if err == nil {
			err = f.Close()
		}
		if err != nil && !errors.Is(err, unix.EISDIR) {
			return fmt.Errorf("hostPath type check failed: %w", err)
		}
		return statIs("a file", fs.FileMode.IsRegular)(p)
	},
	v1.HostPathFile:     statIs("a file", fs.FileMode.IsRegular),
	v1.HostPathSocket:   statIs("a socket file", func(m fs.FileMode) bool { return m.Type() == fs.ModeSocket }),
	v1.HostPathCharDev:  statIs("a character device", func(m fs.FileMode) bool { return m.Type() == fs.ModeDevice|fs.ModeCharDevice }),
	v1.HostPathBlockDev: statIs("a block device", func(m fs.FileMode) bool { return m.Type() == fs.ModeDevice }),
}

func statIs(what string, ok func(fs.FileMode) bool) func(string) error {
	return func(p string) error {
		fi, err := os.Stat(p)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		if err != nil || !ok(fi.Mode()) {
			return fmt.Errorf("hostPath type check failed: %s is not %s", p, what)
		}
		return nil
	}
}

// containerMounts resolves the container's volumeMounts to CRI mounts,
// creating missing subPath directories. vars are the container's variables
// for subPathExpr.
func (r *Runtime) containerMounts(pod *model.Pod, c *v1.Container, vars map[string]string) ([]*runtimeapi.Mount, error) {
	mounts := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts))
	for _, m := range c.VolumeMounts {
		vol := pod.Volume(m.Name)
		if vol == nil {
			return nil, fmt.Errorf("volume %q not found", m.Name)
		}
		var src string
		switch {
		case vol.EmptyDir != nil:
			src = r.volumeDir(pod.UID, vol.Name)
		case vol.HostPath != nil:
			src = vol.HostPath.Path
		default:
			return nil, fmt.Errorf("volume %q: unsupported type", vol.Name)
		}
		sub := m.SubPath
		if m.SubPathExpr != "" {
			sub = expandVars(m.SubPathExpr, vars)
		}
		if sub != "" {
			var err error
			if src, err = hostfs.SubPathSource(src, sub); err != nil {
				return nil, fmt.Errorf("volume mount %q: %w", m.MountPath, err)
			}
		}
		mount := &runtimeapi.Mount{
			ContainerPath: m.MountPath,
			HostPath:      src,
			Readonly:      m.ReadOnly,
		}
		if m.MountPropagation != nil {
			switch *m.MountPropagation {
			case v1.MountPropagationHostToContainer:
				mount.Propagation = runtimeapi.MountPropagation_PROPAGATION_HOST_TO_CONTAINER
			case v1.MountPropagationBidirectional:
				mount.Propagation = runtimeapi.MountPropagation_PROPAGATION_BIDIRECTIONAL
			}
		}
		mounts = append(mounts, mount)
	}
	return mounts, nil
}
