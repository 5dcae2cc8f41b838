package process

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podspec"
	"github.com/podward/podward/internal/runtime/process/launch"
	"github.com/podward/podward/internal/runtime/process/shim"
	"github.com/podward/podward/internal/runtime/volumes"
)

// PreparePod creates the pod's directories and its volumes: a directory for
// each emptyDir (a tmpfs for medium Memory, when root), for each hostPath
// the check or creation its type asks for, and the files of each
// configMap, secret, downwardAPI and projected volume (volumes.Setup; a
// tmpfs each for secrets and projected ones), as the kubelet does. An
// object such a volume needs that is missing is a *runtime.VolumeError.
// It is idempotent. It stops, with ctx.Err(), between volumes once ctx is
// done.
func (r *Runtime) PreparePod(ctx context.Context, pod *model.Pod) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := hostfs.CheckUID(pod.UID); err != nil {
		return fmt.Errorf("prepare pod %s: %w", pod.Key(), err)
	}
	for _, dir := range []string{"volumes", "logs"} {
		if err := os.MkdirAll(filepath.Join(r.podDir(pod.UID), dir), 0o750); err != nil {
			return fmt.Errorf("prepare pod %s: %w", pod.Key(), err)
		}
	}
	if r.cgroups != nil {
		if err := r.cgroups.preparePod(pod); err != nil {
			return fmt.Errorf("prepare pod %s: %w", pod.Key(), err)
		}
	}
	if err := r.writeNetworkFiles(pod); err != nil {
		return fmt.Errorf("prepare pod %s: %w", pod.Key(), err)
	}
	for i := range pod.Spec.Volumes {
		if err := ctx.Err(); err != nil {
			return err
		}
		vol := &pod.Spec.Volumes[i]
		if err := podspec.CheckVolume(vol, i, r.objects.Tokens != nil); err != nil {
			return fmt.Errorf("prepare pod %s: %w", pod.Key(), err)
		}
		var err error
		switch {
		case vol.EmptyDir != nil:
			err = r.prepareEmptyDir(pod, vol)
		case vol.HostPath != nil:
			err = prepareHostPath(vol.HostPath)
		case volumes.Managed(vol):
			err = volumes.Setup(ctx, r.volumeInput(pod), r.volumeHost(pod.UID), vol)
		}
		if err != nil {
			return fmt.Errorf("prepare pod %s: volume %q: %w", pod.Key(), vol.Name, err)
		}
	}
	return nil
}

var _ runtime.VolumeRefresher = (*Runtime)(nil)

// volumeInput is what the pod's configMap, secret, downwardAPI and
// projected volumes are computed from.
func (r *Runtime) volumeInput(pod *model.Pod) volumes.Input {
	return volumes.Input{Pod: pod, Objects: r.objects, Allocatable: r.allocatable}
}

// volumeHost is where the pod's volumes are kept: tmpfs ones only as root.
func (r *Runtime) volumeHost(uid types.UID) volumes.Host {
	return volumes.Host{
		Dir:      func(vol *v1.Volume) string { return r.volumeDir(uid, vol.Name) },
		CanMount: r.euid() == 0,
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
	if err := volumes.Refresh(ctx, r.volumeInput(pod), r.volumeHost(pod.UID)); err != nil {
		return fmt.Errorf("refresh volumes of pod %s: %w", pod.Key(), err)
	}
	return nil
}

func (r *Runtime) prepareEmptyDir(pod *model.Pod, vol *v1.Volume) error {
	var fsGroup *int64
	if sc := pod.Spec.SecurityContext; sc != nil {
		fsGroup = sc.FSGroup
	}
	// Without root no container can mount a tmpfs anyway (Check rejects
	// volumeMounts), so a plain directory does; nor has a fsGroup (Check
	// rejects it).
	return hostfs.PrepareEmptyDir(r.volumeDir(pod.UID, vol.Name), hostfs.EmptyDir{
		Tmpfs:     vol.EmptyDir.Medium == v1.StorageMediumMemory && r.euid() == 0,
		SizeLimit: vol.EmptyDir.SizeLimit,
		FSGroup:   fsGroup,
	})
}

// prepareHostPath checks, or creates, a hostPath volume's path as its type
// says (hostfs.PrepareHostPath). Unlike the kubelet and the CRI runtime,
// the process runtime also refuses a hostPath without a type whose path it
// cannot look at for another reason than that nothing is there (a path
// through a file, a symlink loop, a path too long).
func prepareHostPath(hp *v1.HostPathVolumeSource) error {
	if hp.Type == nil || *hp.Type == v1.HostPathUnset {
		if _, err := os.Stat(hp.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	return hostfs.PrepareHostPath(hp.Path, *hp.Type)
}

// CleanupPod removes the pod's volumes (hostPaths are left alone), the
// mountpoints created for it that no other pod uses, the state
// directories of its container instances and its cgroups, and forgets the
// instances; it keeps the logs. It is idempotent, and works for a pod the runtime knows
// only from disk (ListPods): only pod.UID is needed then. It must only be
// called when no container of the pod runs; it fails without removing
// anything when one of the pod's instances has not exited yet.
func (r *Runtime) CleanupPod(ctx context.Context, pod *model.Pod) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := hostfs.CheckUID(pod.UID); err != nil {
		return fmt.Errorf("clean up pod %s: %w", pod.Key(), err)
	}
	var running []string
	r.mu.Lock()
	for _, in := range r.byPod[pod.UID] {
		if in.exitStatus() == nil {
			running = append(running, in.container)
		}
	}
	if len(running) == 0 {
		for id := range r.byPod[pod.UID] {
			delete(r.instances, id)
		}
		delete(r.byPod, pod.UID)
	}
	r.mu.Unlock()
	if len(running) > 0 {
		slices.Sort(running)
		return fmt.Errorf("clean up pod %s: containers %s still run", pod.Key(), strings.Join(running, ", "))
	}

	var errs []error
	for _, dir := range []string{r.orderDir(pod.UID), r.instancesDir(pod.UID), r.resolvConfFile(pod.UID), r.hostsFile(pod.UID)} {
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, err)
		}
	}
	if err := hostfs.RemoveVolumes(filepath.Join(r.podDir(pod.UID), "volumes")); err != nil {
		errs = append(errs, err)
	}
	if err := r.mountpoints.release(pod.UID); err != nil {
		errs = append(errs, err)
	}
	if r.cgroups != nil {
		// Last: what is left in them (a container's orphan that left its
		// process group) is killed with them.
		if err := r.cgroups.removePod(pod.UID); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clean up pod %s: %w", pod.Key(), err)
	}
	return nil
}

// containerMounts resolves the container's volumeMounts to bind mounts,
// parents before children, creating missing subPath directories and the
// mountpoints on the host. vars are the container's variables for
// subPathExpr. termFile, when not "", is bind-mounted at the container's
// terminationMessagePath too: a file on a file, hiding nothing else; so
// are the pod's network files (networkMounts). It also returns the created
// mountpoints the pod now counts as a user of.
func (r *Runtime) containerMounts(pod *model.Pod, c *v1.Container, vars podspec.Vars, termFile string) ([]launch.Mount, []shim.Mountpoint, error) {
	mounts := make([]launch.Mount, 0, len(c.VolumeMounts))
	var created []shim.Mountpoint
	for i := range c.VolumeMounts {
		m := &c.VolumeMounts[i]
		src, sub, err := podspec.MountSource(pod, c.Name, m, vars, r.volumesDir(pod.UID))
		if err != nil {
			return nil, nil, err
		}
		isDir, err := sourceIsDir(src, sub)
		if err != nil && sub != nil {
			return nil, nil, podspec.SubPathError(m, c.Name, true, err)
		}
		if err != nil {
			return nil, nil, fmt.Errorf("volume mount %q: %w", m.MountPath, err)
		}
		target := filepath.Join("/", m.MountPath)
		used, err := r.mountpoints.ensure(pod.UID, target, isDir)
		if err != nil {
			return nil, nil, fmt.Errorf("volume mount %q: mountpoint: %w", m.MountPath, err)
		}
		created = append(created, used...)
		// A projected volume is the agent's to write: read-only, as the
		// kubelet mounts them.
		mount := launch.Mount{Source: src, Target: target, ReadOnly: m.ReadOnly || volumes.Managed(pod.Volume(m.Name))}
		if sub != nil {
			// The init helper opens the subPath again, refusing symlinks,
			// and mounts what it opened.
			mount.Source, mount.SubPath = sub.Volume, sub.Path
		}
		mounts = append(mounts, mount)
	}
	if termFile != "" {
		target := podspec.TerminationMessagePath(c)
		if err := messageMountpoint(target, mounts); err != nil {
			return nil, nil, fmt.Errorf("terminationMessagePath %q: mountpoint: %w", c.TerminationMessagePath, err)
		}
		mounts = append(mounts, launch.Mount{Source: termFile, Target: target})
	}
	netMounts, used, err := r.networkMounts(pod, mounts)
	if err != nil {
		return nil, nil, err
	}
	mounts, created = append(mounts, netMounts...), append(created, used...)
	// Parents first, so that a mount inside another one is not hidden by it.
	slices.SortStableFunc(mounts, func(a, b launch.Mount) int {
		return strings.Count(a.Target, "/") - strings.Count(b.Target, "/")
	})
	return mounts, created, nil
}

// sourceIsDir says whether what a volumeMount mounts is a directory: the
// host path src, or when the mount has one, the subPath sub, opened as the
// init helper opens it.
func sourceIsDir(src string, sub *hostfs.SubPath) (bool, error) {
	if sub == nil {
		fi, err := os.Stat(src)
		if err != nil {
			return false, err
		}
		return fi.IsDir(), nil
	}
	f, err := sub.Open()
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// messageMountpoint makes the mountpoint of a termination-message file at
// target exist: an empty file, and its missing parent directories. Inside
// one of the container's volumes (a mount of volumes), it is made in that
// volume, where the container finds it once the volume is mounted, and left
// there as a container runtime leaves the mountpoints it makes in a
// container's filesystem. Anywhere else it is made on the host and left
// there too, unlike a volume's mountpoint: every container of every
// podward on the host mounts its own file on the same path (by default
// /dev/termination-log), and removing the path would detach the file of a
// container of another root that still runs (the kernel lazily unmounts
// what is mounted on a removed file, in every mount namespace).
func messageMountpoint(target string, volumes []launch.Mount) error {
	var in *launch.Mount
	for i := range volumes {
		v := &volumes[i]
		if strings.HasPrefix(target, v.Target+"/") && (in == nil || len(v.Target) > len(in.Target)) {
			in = v
		}
	}
	if in == nil {
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		return createEmpty(unix.AT_FDCWD, target, target)
	}
	// The volume's own subPath rules: no symlink leads out of it, and the
	// file is made in the directory as it was checked.
	rel := strings.TrimPrefix(target, in.Target+"/")
	dir, err := hostfs.PrepareSubPath(in.Source, filepath.Join(in.SubPath, filepath.Dir(rel)))
	if err != nil {
		return err
	}
	f, err := dir.Open()
	if err != nil {
		return err
	}
	defer f.Close()
	return createEmpty(int(f.Fd()), filepath.Base(target), filepath.Join(dir.HostPath(), filepath.Base(target)))
}

// createEmpty creates the empty file name in the directory dirFD, unless
// something is there already, never through a symlink. p names the file in
// an error.
func createEmpty(dirFD int, name, p string) error {
	fd, err := unix.Openat(dirFD, name, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o644)
	if errors.Is(err, unix.EEXIST) {
		return nil
	}
	if err != nil {
		return &fs.PathError{Op: "create", Path: p, Err: err}
	}
	return unix.Close(fd)
}

// mountpoints counts the pods that use each path the runtime created on the
// host to mount a volume on. The counts live in memory; each instance's
// spec records the paths its pod uses, so that a runtime that attaches to
// the instances of an earlier one counts them again (adopt).
type mountpoints struct {
	// mu is held across the mkdir and rmdir calls on the host so that a pod
	// never counts on a path another pod's cleanup is removing. These are
	// local metadata operations; no process start or channel send happens
	// under it.
	mu      sync.Mutex
	created map[string]*createdPath
}

type createdPath struct {
	dir   bool // else an empty file, the mountpoint of a file
	users map[types.UID]struct{}
}

// ensure makes target, and every missing parent, exist for pod uid: a
// directory, or an empty file when dir is false. Paths that existed before
// are not the runtime's and are never counted. It returns the runtime's
// paths on the way to target, which uid now counts as a user of.
func (m *mountpoints) ensure(uid types.UID, target string, dir bool) ([]shim.Mountpoint, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var used []shim.Mountpoint
	elems := strings.Split(strings.TrimPrefix(target, "/"), "/")
	p := "/"
	for i, elem := range elems {
		p = filepath.Join(p, elem)
		if c, ok := m.created[p]; ok {
			c.users[uid] = struct{}{}
			used = append(used, shim.Mountpoint{Path: p, Dir: c.dir})
			continue
		}
		_, err := os.Lstat(p)
		if err == nil {
			continue
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return used, err
		}
		isDir := dir || i < len(elems)-1
		if isDir {
			err = os.Mkdir(p, 0o755)
		} else {
			var f *os.File
			if f, err = os.OpenFile(p, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o644); err == nil {
				err = f.Close()
			}
		}
		if err != nil {
			return used, err
		}
		m.created[p] = &createdPath{dir: isDir, users: map[types.UID]struct{}{uid: {}}}
		used = append(used, shim.Mountpoint{Path: p, Dir: isDir})
	}
	return used, nil
}

// adopt counts pod uid again as a user of paths, which an earlier runtime
// created for it, as an instance's spec recorded them. Paths that are gone
// are skipped.
func (m *mountpoints) adopt(uid types.UID, paths []shim.Mountpoint) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, mp := range paths {
		if c, ok := m.created[mp.Path]; ok {
			c.users[uid] = struct{}{}
			continue
		}
		if _, err := os.Lstat(mp.Path); err != nil {
			continue
		}
		m.created[mp.Path] = &createdPath{dir: mp.Dir, users: map[types.UID]struct{}{uid: {}}}
	}
}

// release drops pod uid's use of the created paths and removes those that no
// pod uses any more, children first, when they are still empty. A path that
// is not empty any more is left alone and forgotten.
func (m *mountpoints) release(uid types.UID) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var unused []string
	for p, c := range m.created {
		if _, ok := c.users[uid]; !ok {
			continue
		}
		delete(c.users, uid)
		if len(c.users) == 0 {
			unused = append(unused, p)
		}
	}
	// A child's path is longer than its parent's.
	slices.SortFunc(unused, func(a, b string) int { return len(b) - len(a) })
	var errs []error
	for _, p := range unused {
		c := m.created[p]
		delete(m.created, p)
		if err := removeIfEmpty(p, c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func removeIfEmpty(p string, dir bool) error {
	if dir {
		err := unix.Rmdir(p)
		if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
			return nil
		}
		return &fs.PathError{Op: "rmdir", Path: p, Err: err}
	}
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || fi.Size() != 0 {
		return nil
	}
	return os.Remove(p)
}
