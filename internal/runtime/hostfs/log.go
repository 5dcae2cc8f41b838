package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// PrepareLog makes the directory of a new container instance's log at
// path, and returns the log's size: the offset where this instance's
// output begins, past what an earlier start of the same attempt left in the
// file. Whoever writes the log (a shim, the CRI runtime) appends to it.
func PrepareLog(path string) (offset int64, err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return 0, err
	}
	return FileSize(path)
}

// FileSize is the size of the file at path, 0 when there is none.
func FileSize(path string) (int64, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
