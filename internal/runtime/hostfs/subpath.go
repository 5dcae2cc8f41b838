package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/runtime/hostfs/beneath"
)

// ErrLeavesVolume is the error of a subPath that a symlink leads out of its
// volume.
var ErrLeavesVolume = errors.New("leads out of its volume")

// ContentError is why PrepareSubPath or SubPath.Open refused a subPath for
// what its volume holds, which the pod's containers write: a symlink out of
// the volume (ErrLeavesVolume) or to nothing, a file where a directory is
// wanted (ENOTDIR), a symlink loop or one swapped in since the check
// (ELOOP, EXDEV), a component removed meanwhile (ENOENT), a name too long.
// The kubelet's makeMounts refuses these too (safeOpenSubPath,
// doSafeMakeDir) and the container waits in CreateContainerConfigError.
// What else they return is the host failing (EIO, ENOSPC, EROFS, a
// volume directory gone, a permission the agent lacks): not a
// ContentError, so that it is not taken for the pod's doing.
type ContentError struct{ Err error }

func (e *ContentError) Error() string { return e.Err.Error() }

func (e *ContentError) Unwrap() error { return e.Err }

// contentErrnos are the errors the content of a volume can cause.
var contentErrnos = []error{unix.ENOTDIR, unix.ELOOP, unix.EXDEV, unix.ENOENT, unix.ENAMETOOLONG, ErrLeavesVolume}

// content is err as a ContentError when the volume's content caused it,
// else err.
func content(err error) error {
	for _, e := range contentErrnos {
		if errors.Is(err, e) {
			return &ContentError{Err: err}
		}
	}
	return err
}

// SubPath is a volumeMount's subPath that PrepareSubPath checked and made
// exist. Path names it inside Volume with every symlink resolved, so that
// it can be opened refusing any symlink on the way (Open).
//
// A runtime mounts what Open opened, never the path as a string: a
// container that can write to the volume can swap a component of the path
// for a symlink to anywhere on the host at any time, between a check and a
// mount that resolves the string again (CVE-2017-1002101).
type SubPath struct {
	// Volume is the volume's directory, its symlinks resolved.
	Volume string
	// Path is the subPath inside Volume, relative and without a symlink:
	// "." for Volume itself.
	Path string
}

// HostPath is where s was when it was checked: for messages, not to mount.
func (s SubPath) HostPath() string { return filepath.Join(s.Volume, s.Path) }

// PrepareSubPath checks that sub, a volumeMount's subPath (relative, no
// ".."), stays inside the volume whose directory is volume once its
// symlinks are resolved as the host resolves them, and then creates what of
// it is missing as directories, as the kubelet does
// (pkg/volume/util/subpath/subpath_linux.go, doSafeMakeDir): the check
// comes first, so a subPath that leaves its volume creates nothing, and
// each directory is made with mkdirat in its parent opened without
// following a symlink, so a symlink swapped in meanwhile makes it fail
// instead of creating outside. A symlink on the way to nothing is refused.
// Each directory it creates gets the mode of the volume's own directory,
// setuid, setgid and sticky bits included, whatever the umask (the
// kubelet's makeMounts passes GetMode(volumePath) to SafeMakeDir): an
// emptyDir's 0777 (01777 on a tmpfs), with the setgid bit of a pod's
// fsGroup; its group is the parent's when the parent is setgid. A
// directory that exists already is left as it is. It is idempotent. The
// volume's own path is trusted: its symlinks are followed. A refusal for
// what the volume holds is a *ContentError.
func PrepareSubPath(volume, sub string) (SubPath, error) {
	if err := CheckSubPath(sub); err != nil {
		return SubPath{}, fmt.Errorf("subPath %q: %w", sub, err)
	}
	realVolume, err := filepath.EvalSymlinks(volume)
	if err != nil {
		return SubPath{}, fmt.Errorf("subPath %q: volume: %w", sub, err)
	}
	s := SubPath{Volume: realVolume}
	existing, missing, err := resolveExisting(realVolume, sub)
	if errors.Is(err, ErrLeavesVolume) {
		return SubPath{}, content(fmt.Errorf("subPath %q %w", sub, err))
	}
	if err != nil {
		return SubPath{}, content(fmt.Errorf("subPath %q: %w", sub, err))
	}
	s.Path = existing
	if len(missing) == 0 {
		return s, nil
	}
	var volSt unix.Stat_t
	if err := unix.Stat(realVolume, &volSt); err != nil {
		return SubPath{}, fmt.Errorf("subPath %q: volume: %w", sub, &fs.PathError{Op: "stat", Path: realVolume, Err: err})
	}
	mode := volSt.Mode & modeBits
	fd, err := beneath.Open(realVolume, existing)
	if err != nil {
		return SubPath{}, content(fmt.Errorf("subPath %q: %w", sub, err))
	}
	defer func() { unix.Close(fd) }()
	for _, name := range missing {
		child, err := mkdirBeneath(fd, name, mode)
		if err != nil {
			return SubPath{}, content(fmt.Errorf("subPath %q: %w", sub, &fs.PathError{Op: "mkdir", Path: filepath.Join(s.HostPath(), name), Err: err}))
		}
		unix.Close(fd)
		fd = child
		s.Path = filepath.Join(s.Path, name)
	}
	return s, nil
}

// resolveExisting walks sub inside volume (whose symlinks are resolved)
// as far as it exists, resolving each symlink it meets and checking that
// it stays inside. It returns the existing part, relative to volume with
// no symlink left ("." for volume), and the names that are missing after
// it. A symlink out of volume is ErrLeavesVolume.
func resolveExisting(volume, sub string) (string, []string, error) {
	var elems []string
	for _, e := range strings.Split(filepath.Clean(sub), "/") {
		if e != "." && e != "" {
			elems = append(elems, e)
		}
	}
	cur := volume
	for i, name := range elems {
		next := filepath.Join(cur, name)
		real, err := filepath.EvalSymlinks(next)
		if errors.Is(err, fs.ErrNotExist) {
			if _, lerr := os.Lstat(next); !errors.Is(lerr, fs.ErrNotExist) {
				return "", nil, fmt.Errorf("goes through %s, a symlink to nothing: %w", next, err)
			}
			return relTo(volume, cur), elems[i:], nil
		}
		if err != nil {
			return "", nil, err
		}
		if !within(volume, real) {
			return "", nil, ErrLeavesVolume
		}
		cur = real
	}
	return relTo(volume, cur), nil, nil
}

// within says whether p is dir or below it; both are clean and absolute.
func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

func relTo(dir, p string) string {
	rel, err := filepath.Rel(dir, p)
	if err != nil {
		return "." // unreachable: p is within dir
	}
	return rel
}

// Open opens the subPath as an O_PATH file, refusing a symlink anywhere
// below Volume: what it returns is the file that was checked, or it fails
// (with ELOOP, EXDEV or ENOTDIR) because a component was swapped since.
// The file is close-on-exec; the caller owns it and mounts it through
// /proc/self/fd/N (BindSubPath, or the process runtime's init helper).
// Such a failure is a *ContentError.
func (s SubPath) Open() (*os.File, error) {
	f, err := beneath.OpenSubPath(s.Volume, s.Path)
	if err != nil {
		return nil, content(err)
	}
	return f, nil
}

// modeBits are the bits of a file's mode that chmod sets: the permissions
// and the setuid, setgid and sticky bits.
const modeBits = unix.S_ISUID | unix.S_ISGID | unix.S_ISVTX | 0o777

// mkdirBeneath makes the directory name in the directory dirFD, of mode
// (chmod's bits, umask or not), unless it exists, and opens it without
// following a symlink. A directory that exists is opened as it is. One it
// makes is made 0700, so that nobody else enters it before it has its
// mode, and opened for reading to be given it with fchmod (an O_PATH file
// cannot be); the returned file is only ever a parent for mkdirat and
// openat.
func mkdirBeneath(dirFD int, name string, mode uint32) (int, error) {
	err := unix.Mkdirat(dirFD, name, 0o700)
	if err != nil && !errors.Is(err, unix.EEXIST) {
		return -1, err
	}
	created := err == nil
	flags := unix.O_PATH | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_CLOEXEC
	if created {
		flags = unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_DIRECTORY | unix.O_CLOEXEC
	}
	fd, err := unix.Openat(dirFD, name, flags, 0)
	if err != nil {
		return -1, err
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFDIR {
		unix.Close(fd)
		if err == nil {
			err = unix.ENOTDIR
		}
		return -1, err
	}
	if created {
		if err := unix.Fchmod(fd, mode); err != nil {
			unix.Close(fd)
			return -1, fmt.Errorf("chmod: %w", err)
		}
	}
	return fd, nil
}

// maxUnmounts bounds the mounts stacked on one target that unmountAll
// takes off.
const maxUnmounts = 16

// BindSubPath bind-mounts what s.Open opens on target, the runtime's own
// path (under its root, which no container writes to), as the kubelet's
// doBindSubPath does: the runtime then hands target, not the subPath, to
// whatever mounts it in the container (a CRI runtime resolves the string
// it gets). target and its missing parents are created (0750): a
// directory for a directory, an empty file for anything else. A target on
// which that very file is mounted already is kept, so that a container's
// next instance reuses it; anything else mounted there is unmounted first.
// It needs CAP_SYS_ADMIN. The mount stays until RemoveSubPaths.
func BindSubPath(s SubPath, target string) error {
	f, err := s.Open()
	if err != nil {
		return err
	}
	defer f.Close()
	var src, cur unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &src); err != nil {
		return &fs.PathError{Op: "fstat", Path: f.Name(), Err: err}
	}
	if unix.Stat(target, &cur) == nil && cur.Dev == src.Dev && cur.Ino == src.Ino {
		return nil
	}
	if err := unmountAll(target); err != nil {
		return err
	}
	if err := makeTarget(target, src.Mode&unix.S_IFMT == unix.S_IFDIR); err != nil {
		return fmt.Errorf("subPath mount target: %w", err)
	}
	proc := "/proc/self/fd/" + strconv.Itoa(int(f.Fd()))
	if err := unix.Mount(proc, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount subPath %s on %s: %w", s.HostPath(), target, err)
	}
	return nil
}

// makeTarget makes target a directory (dir) or an empty file, replacing an
// empty one of the other kind.
func makeTarget(target string, dir bool) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o750); err != nil {
		return err
	}
	if fi, err := os.Lstat(target); err == nil && fi.IsDir() != dir {
		// Remove never empties a directory: only an empty one goes.
		if err := os.Remove(target); err != nil {
			return err
		}
	}
	if dir {
		if err := os.Mkdir(target, 0o750); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
		return nil
	}
	f, err := os.OpenFile(target, os.O_RDONLY|os.O_CREATE|unix.O_NOFOLLOW, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}

// unmountAll lazily unmounts whatever is mounted on p, however many mounts
// are stacked there (up to maxUnmounts). Nothing mounted, or no p, is
// fine.
func unmountAll(p string) error {
	for range maxUnmounts {
		err := unix.Unmount(p, unix.MNT_DETACH|unix.UMOUNT_NOFOLLOW)
		switch {
		case errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT):
			return nil
		case err != nil:
			return &fs.PathError{Op: "unmount", Path: p, Err: err}
		}
	}
	return fmt.Errorf("unmount %s: still mounted after %d unmounts", p, maxUnmounts)
}

// RemoveSubPaths unmounts and removes the subPath targets under dir, laid
// out as dir/<volume>/<container>/<index> (the kubelet's volume-subpaths
// directory), and then dir. It only ever removes what is empty once
// unmounted: a target it could not unmount stays, with the volume's data
// behind it, and the error says so. A missing dir is fine. It is
// idempotent; call it only once no container uses the targets.
func RemoveSubPaths(dir string) error {
	return removeSubPathLevel(dir, 2)
}

// removeSubPathLevel removes the directory dir after its entries: below
// depth 0 these are directories of the same layout, at depth 0 targets.
func removeSubPathLevel(dir string, depth int) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		if depth > 0 {
			errs = append(errs, removeSubPathLevel(p, depth-1))
			continue
		}
		if err := unmountAll(p); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, os.Remove(p))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	if err := os.Remove(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
