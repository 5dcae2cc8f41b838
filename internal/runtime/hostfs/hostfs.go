package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
)

// LockRoot takes the lock of a runtime's root, which the kernel releases
// when the process dies. A root another runtime holds gives inUse, wrapped
// with the root's path; what is the root's is said by what.
func LockRoot(root, what string, inUse error) (*os.File, error) {
	p := filepath.Join(root, "runtime.lock")
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s root: %w", what, err)
	}
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s", inUse, root)
		}
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	return f, nil
}

// CheckUID rejects a pod UID that cannot name a directory.
func CheckUID(uid types.UID) error {
	s := string(uid)
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\x00") {
		return fmt.Errorf("pod UID %q is not usable as a directory name", s)
	}
	return nil
}

// CheckSubPath rejects a subPath that could leave its volume.
func CheckSubPath(sub string) error {
	if sub == "" {
		return nil
	}
	if path.IsAbs(sub) {
		return errors.New("must be a relative path")
	}
	for _, elem := range strings.Split(sub, "/") {
		if elem == ".." {
			return errors.New("must not contain '..'")
		}
	}
	return nil
}

// IsTmpfs says whether dir is on a tmpfs, as the volumes kept in memory
// (a Secret's, a token's, a medium: Memory emptyDir) are.
func IsTmpfs(dir string) (bool, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return false, os.NewSyscallError("statfs", err)
	}
	return st.Type == unix.TMPFS_MAGIC, nil
}

// IsMountpoint says whether dir is the root of a mount, by comparing its
// device with its parent's.
func IsMountpoint(dir string) (bool, error) {
	var st, parent unix.Stat_t
	if err := unix.Lstat(dir, &st); err != nil {
		return false, os.NewSyscallError("lstat", err)
	}
	if err := unix.Lstat(filepath.Dir(dir), &parent); err != nil {
		return false, os.NewSyscallError("lstat", err)
	}
	return st.Dev != parent.Dev, nil
}

// RemoveVolumes unmounts the tmpfs emptyDirs in dir and removes dir.
func RemoveVolumes(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		p := filepath.Join(dir, e.Name())
		mounted, err := IsMountpoint(p)
		if err != nil {
			return err
		}
		if mounted {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil {
				return fmt.Errorf("unmount %s: %w", p, err)
			}
		}
	}
	return os.RemoveAll(dir)
}
