package cri

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podspec"
	"github.com/podward/podward/internal/runtime/volumes"
)

var _ runtime.VolumeRefresher = (*Runtime)(nil)

// prepareVolume creates an emptyDir's directory (a tmpfs for medium
// Memory, owned by the pod's fsGroup), checks (and for the *OrCreate
// types creates) a hostPath's path as its type says, or writes a
// configMap, secret, downwardAPI or projected volume's files (a tmpfs each
// for secret and projected ones; volumes.Setup), as the kubelet does.
func (r *Runtime) prepareVolume(ctx context.Context, pod *model.Pod, vol *v1.Volume) error {
	switch {
	case volumes.Managed(vol):
		return volumes.Setup(ctx, r.volumeInput(pod), r.volumeHost(pod), vol)
	case vol.EmptyDir != nil:
		opts := hostfs.EmptyDir{Tmpfs: vol.EmptyDir.Medium == v1.StorageMediumMemory, SizeLimit: vol.EmptyDir.SizeLimit}
		if sc := pod.Spec.SecurityContext; sc != nil {
			opts.FSGroup = sc.FSGroup
		}
		return hostfs.PrepareEmptyDir(r.volumeDir(pod.UID, vol.Name), opts)
	case vol.HostPath != nil:
		return prepareHostPath(vol.HostPath)
	}
	return fmt.Errorf("volume %q: unsupported type", vol.Name)
}

// volumeInput is what the pod's configMap, secret, downwardAPI and
// projected volumes are computed from.
func (r *Runtime) volumeInput(pod *model.Pod) volumes.Input {
	return volumes.Input{Pod: pod, Objects: r.objects, Allocatable: r.allocatable}
}

// volumeHost is where the pod's volumes are kept (the agent runs as root
// with a CRI runtime: tmpfs for the in-memory ones).
func (r *Runtime) volumeHost(pod *model.Pod) volumes.Host {
	return volumes.Host{
		Dir:      func(vol *v1.Volume) string { return r.volumeDir(pod.UID, vol.Name) },
		CanMount: true,
		Now:      r.clock.Now,
	}
}

// RefreshVolumes implements runtime.VolumeRefresher: it rewrites each
// configMap, secret, downwardAPI and projected volume of the prepared pod
// whose payload changed (volumes.Refresh).
func (r *Runtime) RefreshVolumes(ctx context.Context, pod *model.Pod) error {
	if err := hostfs.CheckUID(pod.UID); err != nil {
		return fmt.Errorf("refresh volumes of pod %s: %w", pod.Key(), err)
	}
	if err := volumes.Refresh(ctx, r.volumeInput(pod), r.volumeHost(pod)); err != nil {
		return fmt.Errorf("refresh volumes of pod %s: %w", pod.Key(), err)
	}
	return nil
}

// prepareHostPath is hostfs.PrepareHostPath. Unlike the kubelet and the
// process runtime, the CRI runtime also refuses a FileOrCreate path that
// exists but that the agent cannot open for reading.
func prepareHostPath(hp *v1.HostPathVolumeSource) error {
	typ := v1.HostPathUnset
	if hp.Type != nil {
		typ = *hp.Type
	}
	if err := hostfs.PrepareHostPath(hp.Path, typ); err != nil {
		return err
	}
	if typ != v1.HostPathFileOrCreate {
		return nil
	}
	f, err := os.Open(hp.Path)
	if err != nil {
		return fmt.Errorf("hostPath type check failed: %w", err)
	}
	return f.Close()
}

// containerMounts resolves the container's volumeMounts to CRI mounts,
// creating missing subPath directories. vars are the container's variables
// for subPathExpr. A subPath is bind-mounted, as opened once checked, on a
// path of the pod's own, which is what the CRI runtime gets
// (hostfs.BindSubPath), as the kubelet does: the CRI runtime resolves the
// host path it is given, and a container could have swapped a component
// of the subPath for a symlink by then. The mounts stay until CleanupPod.
func (r *Runtime) containerMounts(pod *model.Pod, c *v1.Container, vars podspec.Vars) ([]*runtimeapi.Mount, error) {
	mounts := make([]*runtimeapi.Mount, 0, len(c.VolumeMounts))
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		src, sub, err := podspec.MountSource(pod, c.Name, m, vars, r.volumesDir(pod.UID))
		if err != nil {
			return nil, err
		}
		if sub != nil {
			src = r.subPathTarget(pod.UID, m.Name, c.Name, i)
			if err := hostfs.BindSubPath(*sub, src); err != nil {
				return nil, podspec.SubPathError(m, c.Name, true, err)
			}
		}
		mount := &runtimeapi.Mount{
			ContainerPath: m.MountPath,
			HostPath:      src,
			// A projected volume is the agent's to write: read-only, as
			// the kubelet mounts them.
			Readonly: m.ReadOnly || volumes.Managed(pod.Volume(m.Name)),
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

// subPathTarget is where the index-th volumeMount of container, of volume,
// has its subPath bind-mounted: the kubelet's layout,
// <pod>/volume-subpaths/<volume>/<container>/<index>.
func (r *Runtime) subPathTarget(uid types.UID, volume, container string, index int) string {
	return filepath.Join(r.subPathsDir(uid), volume, container, strconv.Itoa(index))
}

func (r *Runtime) subPathsDir(uid types.UID) string {
	return filepath.Join(r.podDir(uid), "volume-subpaths")
}
