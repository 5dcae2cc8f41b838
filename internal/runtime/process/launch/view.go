package launch

import (
	"github.com/podward/podward/internal/runtime/hostfs/mountinfo"

	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The container's view of the host's filesystem, built by the init helper
// in its private mount namespace: what Security asks for around the bind
// mounts of the volumes. baseView comes before them (a /proc and a /dev
// of the container's own, where volumes such as the termination log may be
// mounted), restrictView after (what is masked, read-only or hidden, which
// the volumes' sources must not be when they are opened and mounted).

// devices are the device nodes a container gets in its /dev, as container
// runtimes give them (runc's default devices).
var devices = []string{"null", "zero", "full", "random", "urandom", "tty"}

// devSymlinks are the symbolic links of a container's /dev.
var devSymlinks = [][2]string{
	{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"},
	{"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"}, {"/proc/kcore", "core"},
}

// baseView mounts, as sec asks, a /proc of the calling process's PID
// namespace (it is that namespace's init) and a /dev of the container's
// own, where the targets of mounts under /dev are then made, after the
// kind of their sources, opened before (a source under the host's /dev,
// such as /dev/shm, is out of sight once the container's /dev is).
func baseView(sec *Security, mounts []Mount, sources []*os.File) error {
	if sec == nil {
		return nil
	}
	if sec.needsMountNamespace() {
		// A namespace made by clone (not unshare) is not private yet:
		// nothing mounted from here on may show on the host.
		if err := unix.Mount("none", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make the mount namespace private: %w", os.NewSyscallError("mount", err))
		}
	}
	if sec.PIDNamespace {
		if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("mount the container's /proc: %w", os.NewSyscallError("mount", err))
		}
	}
	if sec.Devices {
		return mountDev(mounts, sources)
	}
	return nil
}

// mountDev covers /dev with a tmpfs holding the container's devices (bind
// mounts of the host's nodes, opened before), a devpts of its own, a
// /dev/shm of its own and the usual links; then the targets of the mounts
// under /dev (a termination log at /dev/termination-log).
func mountDev(mounts []Mount, sources []*os.File) error {
	nodes := make([]*os.File, 0, len(devices))
	defer func() {
		for _, f := range nodes {
			f.Close()
		}
	}()
	for _, d := range devices {
		f, err := os.OpenFile("/dev/"+d, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("container's /dev: %w", err)
		}
		nodes = append(nodes, f)
	}
	if err := unix.Mount("tmpfs", "/dev", "tmpfs", unix.MS_NOSUID|unix.MS_STRICTATIME, "mode=755,size=65536k"); err != nil {
		return fmt.Errorf("mount the container's /dev: %w", os.NewSyscallError("mount", err))
	}
	for i, d := range devices {
		if err := bindNode(nodes[i], "/dev/"+d); err != nil {
			return err
		}
	}
	if err := mountAt("devpts", "/dev/pts", "devpts", unix.MS_NOSUID|unix.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620"); err != nil {
		return err
	}
	if err := mountAt("shm", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=1777,size=65536k"); err != nil {
		return err
	}
	for _, l := range devSymlinks {
		if err := os.Symlink(l[0], "/dev/"+l[1]); err != nil {
			return fmt.Errorf("container's /dev: %w", err)
		}
	}
	return makeTargets(mounts, sources, "/dev")
}

// bindNode bind-mounts the device node opened as f on a new file at path.
func bindNode(f *os.File, path string) error {
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		return fmt.Errorf("container's /dev: %w", err)
	}
	src := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := unix.Mount(src, path, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("container's %s: %w", path, os.NewSyscallError("mount", err))
	}
	return nil
}

// mountAt makes the directory path and mounts a file system of fstype on it.
func mountAt(source, path, fstype string, flags uintptr, data string) error {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("container's %s: %w", path, err)
	}
	if err := unix.Mount(source, path, fstype, flags, data); err != nil {
		return fmt.Errorf("mount the container's %s: %w", path, os.NewSyscallError("mount", err))
	}
	return nil
}

// makeTargets makes, for each mount under dir, its target: a directory
// when its source (opened as sources[i]) is one, else an empty file.
func makeTargets(mounts []Mount, sources []*os.File, dir string) error {
	for i, m := range mounts {
		if !under(m.Target, dir) {
			continue
		}
		fi, err := sources[i].Stat()
		if err != nil {
			return fmt.Errorf("volume mount %s: %w", m.Target, err)
		}
		if fi.IsDir() {
			err = os.MkdirAll(m.Target, 0o755)
		} else if err = os.MkdirAll(filepath.Dir(m.Target), 0o755); err == nil {
			err = os.WriteFile(m.Target, nil, 0o644)
		}
		if err != nil {
			return fmt.Errorf("volume mount %s: %w", m.Target, err)
		}
	}
	return nil
}

// under says whether path is dir or below it.
func under(path, dir string) bool {
	path, dir = filepath.Clean(path), filepath.Clean(dir)
	return path == dir || strings.HasPrefix(path, dir+"/") || dir == "/"
}

// restrictView masks, makes read-only and hides what sec says, and then
// makes the rest of the view read-only when asked: every mount but the
// volumes', /proc's and /dev's.
func restrictView(sec *Security, mounts []Mount) error {
	if sec == nil {
		return nil
	}
	for _, p := range sec.MaskedPaths {
		if err := mask(p); err != nil {
			return err
		}
	}
	for _, p := range sec.ReadonlyPaths {
		if err := readOnlyBind(p); err != nil {
			return err
		}
	}
	for _, p := range sec.Hidden {
		if err := mask(p); err != nil {
			return err
		}
	}
	if sec.ReadOnlyRoot {
		return readOnlyRoot(mounts)
	}
	return nil
}

// mask covers p: a directory with an empty read-only tmpfs, anything else
// with /dev/null. A p that does not exist is left alone, as runc does.
func mask(p string) error {
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mask %s: %w", p, err)
	}
	if fi.IsDir() {
		return cover(p)
	}
	if err := unix.Mount("/dev/null", p, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("mask %s: %w", p, os.NewSyscallError("mount", err))
	}
	return nil
}

// cover mounts an empty, read-only tmpfs on the directory p, when there
// is one.
func cover(p string) error {
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := unix.Mount("tmpfs", p, "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=4k,mode=755"); err != nil {
		return fmt.Errorf("cover %s: %w", p, os.NewSyscallError("mount", err))
	}
	return nil
}

// readOnlyBind makes p, and everything mounted below it, read-only: a
// recursive bind mount of p on itself, made read-only as a whole.
func readOnlyBind(p string) error {
	if _, err := os.Stat(p); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("read-only %s: %w", p, os.NewSyscallError("mount", err))
	}
	return setReadOnly(p, unix.AT_RECURSIVE)
}

// setReadOnly makes the mount at p (and with AT_RECURSIVE, those below it)
// read-only, keeping its other flags.
func setReadOnly(p string, flags uint) error {
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, p, flags|unix.AT_NO_AUTOMOUNT, &attr); err != nil {
		return fmt.Errorf("make %s read-only: %w", p, os.NewSyscallError("mount_setattr", err))
	}
	return nil
}

// readOnlyRoot makes every mount of the namespace read-only but those of
// the volumes (and below them), /proc and /dev: readOnlyRootFilesystem
// for a container whose root is the host's.
func readOnlyRoot(mounts []Mount) error {
	points, err := mountinfo.Points("/proc/thread-self/mountinfo")
	if err != nil {
		return err
	}
	keep := []string{"/proc", "/dev"}
	for _, m := range mounts {
		keep = append(keep, m.Target)
	}
	for _, p := range points {
		if underAny(p, keep) {
			continue
		}
		err := setReadOnly(p, 0)
		// A mount point hidden by another mount, or under one that is
		// gone from the view, resolves to no mount of its own.
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EACCES) {
			return err
		}
	}
	return nil
}

func underAny(p string, dirs []string) bool {
	for _, d := range dirs {
		if under(p, d) {
			return true
		}
	}
	return false
}
