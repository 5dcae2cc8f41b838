package hostfs

import (
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
