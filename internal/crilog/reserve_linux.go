package crilog

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// errReserveUnsupported: the filesystem cannot reserve room ahead.
var errReserveUnsupported = errors.New("fallocate not supported")

// freeSpace is how many bytes the filesystem of f has left for its owner.
func freeSpace(f *os.File) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Fstatfs(int(f.Fd()), &st); err != nil {
		return 0, os.NewSyscallError("fstatfs", err)
	}
	return int64(st.Bavail) * st.Bsize, nil
}

// reserveRoom allocates n bytes of f at offset off without changing its
// size, so that writing them cannot fail for want of room.
func reserveRoom(f *os.File, off, n int64) error {
	for {
		err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, off, n)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ENOSPC), errors.Is(err, unix.EDQUOT):
			return &os.PathError{Op: "fallocate", Path: f.Name(), Err: err}
		default:
			// EOPNOTSUPP, ENOSYS, ENODEV...: this file cannot have room
			// reserved; it is written without.
			return errReserveUnsupported
		}
	}
}
