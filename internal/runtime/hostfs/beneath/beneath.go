package beneath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// OpenSubPath opens sub (relative, clean, no "..", without a symlink) in
// the directory volume as an O_PATH file, refusing a symlink anywhere
// below volume: what it returns is the file that was checked, or it fails
// (with ELOOP, EXDEV or ENOTDIR) because a component was swapped since.
// The file is close-on-exec; the caller owns it and mounts it through
// /proc/self/fd/N (hostfs.BindSubPath, or the process runtime's init
// helper).
func OpenSubPath(volume, sub string) (*os.File, error) {
	path := filepath.Join(volume, sub)
	fd, err := Open(volume, sub)
	if err != nil {
		return nil, fmt.Errorf("open subPath %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), path), nil
}

// ForceWalk makes Open use the openat walk from now on, as on a kernel
// without openat2, and returns what undoes it: for tests of the walk.
func ForceWalk() (undo func()) {
	was := noOpenat2.Swap(true)
	return func() { noOpenat2.Store(was) }
}

// HasOpenat2 reports whether Open still uses openat2: false once the
// kernel refused it (or ForceWalk).
func HasOpenat2() bool { return !noOpenat2.Load() }

// noOpenat2 is set once the kernel says it has no openat2 (before 5.6,
// or a seccomp filter that refuses it); tests set it (ForceWalk) to
// exercise the walk.
var noOpenat2 atomic.Bool

// Open opens rel (relative, clean, no "..") beneath the directory
// dir as an O_PATH descriptor, never following a symlink below dir:
// openat2 with RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS where the kernel has
// it, else a walk of openat(O_NOFOLLOW), one component at a time, as the
// kubelet's doSafeOpen does. dir itself is opened following symlinks.
func Open(dir, rel string) (int, error) {
	dirFD, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	if rel == "." || rel == "" {
		return dirFD, nil
	}
	defer unix.Close(dirFD)
	var fd int
	if !noOpenat2.Load() {
		fd, err = openat2Beneath(dirFD, rel)
		if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EPERM) {
			noOpenat2.Store(true)
		}
	}
	if !!noOpenat2.Load() {
		fd, err = walkBeneath(dirFD, rel)
	}
	if err != nil {
		return -1, &fs.PathError{Op: "open beneath " + dir, Path: rel, Err: err}
	}
	return fd, nil
}

func openat2Beneath(dirFD int, rel string) (int, error) {
	how := &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
	}
	for range 16 {
		fd, err := unix.Openat2(dirFD, rel, how)
		// EAGAIN: a rename raced the lookup and the kernel could not rule
		// out an escape; trying again is what it asks for.
		if !errors.Is(err, unix.EINTR) && !errors.Is(err, unix.EAGAIN) {
			return fd, err
		}
	}
	return -1, unix.EAGAIN
}

func walkBeneath(dirFD int, rel string) (int, error) {
	elems := strings.Split(rel, "/")
	cur := -1 // owned; dirFD is not
	for i, name := range elems {
		at := dirFD
		if cur >= 0 {
			at = cur
		}
		next, err := unix.Openat(at, name, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if cur >= 0 {
			unix.Close(cur)
		}
		if err != nil {
			return -1, err
		}
		var st unix.Stat_t
		if err := unix.Fstat(next, &st); err != nil {
			unix.Close(next)
			return -1, err
		}
		switch kind := st.Mode & unix.S_IFMT; {
		case kind == unix.S_IFLNK:
			unix.Close(next)
			return -1, unix.ELOOP
		case i < len(elems)-1 && kind != unix.S_IFDIR:
			unix.Close(next)
			return -1, unix.ENOTDIR
		}
		cur = next
	}
	return cur, nil
}
