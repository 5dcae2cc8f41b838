package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// hostPathTypes checks, or creates, a hostPath's path p by its type, as the
// kubelet does. fi is what os.Stat found at p, nil when nothing is there. A
// mismatch is an error that says what p is not.
var hostPathTypes = map[v1.HostPathType]func(p string, fi fs.FileInfo) error{
	v1.HostPathUnset: func(string, fs.FileInfo) error { return nil },
	v1.HostPathDirectoryOrCreate: func(p string, fi fs.FileInfo) error {
		if fi == nil {
			return os.MkdirAll(p, 0o755)
		}
		return is(p, fi, "a directory", fs.FileMode.IsDir)
	},
	v1.HostPathDirectory: func(p string, fi fs.FileInfo) error {
		return is(p, fi, "a directory", fs.FileMode.IsDir)
	},
	v1.HostPathFileOrCreate: func(p string, fi fs.FileInfo) error {
		if fi == nil {
			// Like the kubelet, create the file but not its parent.
			f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE, 0o644)
			if err != nil {
				return err
			}
			return f.Close()
		}
		return is(p, fi, "a file", fs.FileMode.IsRegular)
	},
	v1.HostPathFile: func(p string, fi fs.FileInfo) error {
		return is(p, fi, "a file", fs.FileMode.IsRegular)
	},
	v1.HostPathSocket: func(p string, fi fs.FileInfo) error {
		return is(p, fi, "a socket file", func(m fs.FileMode) bool { return m.Type() == fs.ModeSocket })
	},
	v1.HostPathCharDev: func(p string, fi fs.FileInfo) error {
		return is(p, fi, "a character device", func(m fs.FileMode) bool { return m.Type() == fs.ModeDevice|fs.ModeCharDevice })
	},
	v1.HostPathBlockDev: func(p string, fi fs.FileInfo) error {
		return is(p, fi, "a block device", func(m fs.FileMode) bool { return m.Type() == fs.ModeDevice })
	},
}

// is says that p, which os.Stat found as fi (nil: nothing there), is not
// what, unless ok holds for its mode.
func is(p string, fi fs.FileInfo, what string, ok func(fs.FileMode) bool) error {
	if fi == nil || !ok(fi.Mode()) {
		return fmt.Errorf("%s is not %s", p, what)
	}
	return nil
}

// SupportsHostPathType says whether PrepareHostPath knows typ: the empty
// type and the seven Kubernetes defines.
func SupportsHostPathType(typ v1.HostPathType) bool {
	_, ok := hostPathTypes[typ]
	return ok
}

// PrepareHostPath checks, or for DirectoryOrCreate and FileOrCreate
// creates, a hostPath volume's path p as its type says, as the kubelet
// does: the empty type checks nothing; DirectoryOrCreate creates the
// directory and its parents (0755), FileOrCreate an empty file (0644) but
// not its parent; every other type needs p to be there and to be of its
// kind. An existing path is only looked at (os.Stat, which follows
// symlinks), never opened. A failure is "hostPath type check failed: ...",
// naming p. It is idempotent.
func PrepareHostPath(p string, typ v1.HostPathType) error {
	check, ok := hostPathTypes[typ]
	if !ok {
		return fmt.Errorf("hostPath type %q is not supported", typ)
	}
	if typ == v1.HostPathUnset {
		return nil
	}
	fi, err := os.Stat(p)
	if errors.Is(err, fs.ErrNotExist) {
		fi, err = nil, nil
	}
	if err == nil {
		err = check(p, fi)
	}
	if err != nil {
		return fmt.Errorf("hostPath type check failed: %w", err)
	}
	return nil
}

// EmptyDir is how an emptyDir volume's directory is set up.
type EmptyDir struct {
	// Tmpfs mounts a tmpfs on the directory (medium Memory) unless one is
	// mounted there already.
	Tmpfs bool
	// SizeLimit, when positive, is the tmpfs's size.
	SizeLimit *resource.Quantity
	// FSGroup, when set, owns the directory, which gets the setgid bit so
	// that the files created in it inherit the group.
	FSGroup *int64
}

// PrepareEmptyDir creates an emptyDir volume's directory dir (its parent
// must exist), mounts a tmpfs on it if asked, and makes it writable by any
// user of the pod, umask or not, as the kubelet does: mode 0777, and the
// fsGroup's with setgid. A tmpfs is also sticky (01777), as the kubelet
// leaves it: it mounts the tmpfs without a mode, which a tmpfs's root then
// has, over the directory it made 0777; a subPath created in the volume
// has the same mode (PrepareSubPath). It is idempotent.
func PrepareEmptyDir(dir string, opts EmptyDir) error {
	if err := os.Mkdir(dir, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	mode := os.FileMode(0o777)
	if opts.Tmpfs {
		if err := mountTmpfsMode(dir, opts.SizeLimit, "1777"); err != nil {
			return err
		}
		mode |= os.ModeSticky
	}
	if opts.FSGroup != nil {
		if err := os.Lchown(dir, -1, int(*opts.FSGroup)); err != nil {
			return err
		}
		mode |= os.ModeSetgid
	}
	return os.Chmod(dir, mode)
}

// mountTmpfsMode mounts a tmpfs of mode (octal) and of size limit, when
// positive, on dir, unless dir is a mountpoint already.
func mountTmpfsMode(dir string, limit *resource.Quantity, mode string) error {
	mounted, err := IsMountpoint(dir)
	if err != nil || mounted {
		return err
	}
	opts := "mode=" + mode
	if limit != nil && limit.Sign() > 0 {
		opts += fmt.Sprintf(",size=%d", limit.Value())
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
	}
	return nil
}
