package hostfs

import (
	"io"
	"os"
	"path/filepath"
)

// CreateMessageFile creates an instance's termination-message file at
// path, and its missing parents: empty, and writable by every user, as the
// kubelet creates it whatever the umask (a container may run as any
// user). An existing file is emptied.
func CreateMessageFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Chmod(path, 0o666)
}

// ReadFileTail returns the last limit bytes of the file at path, all of it
// when it is shorter, reading no more than that (the kubelet's
// tail.ReadAtMost): a container may have written any amount.
func ReadFileTail(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	offset := max(fi.Size()-int64(limit), 0)
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	return io.ReadAll(io.LimitReader(f, int64(limit)))
}
