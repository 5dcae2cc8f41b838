package hostfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
)

// Both runtimes keep a pod's logs in the logs directory of the pod's own,
// <pods dir>/<pod UID>/logs/<container>/<attempt>.log (the CRI runtime's
// LogDirectory), which outlives the pod's clean-up until RemovePodLogs.
const podLogsDir = "logs"

// RemovePodLogs removes the logs directory of podDir, then podDir itself if
// nothing else is left in it. Missing directories are not an error.
func RemovePodLogs(podDir string) error {
	if err := os.RemoveAll(filepath.Join(podDir, podLogsDir)); err != nil {
		return err
	}
	err := unix.Rmdir(podDir)
	if err == nil || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTEMPTY) || errors.Is(err, unix.EEXIST) {
		return nil
	}
	return &fs.PathError{Op: "rmdir", Path: podDir, Err: err}
}

// ListPodLogs returns the pods of podsDir (directories named by UID) that
// have a logs directory, each with the newest modification time in it:
// when its logs were last written.
func ListPodLogs(podsDir string) (map[types.UID]time.Time, error) {
	entries, err := os.ReadDir(podsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	logs := map[types.UID]time.Time{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		last, ok, err := newestModTime(filepath.Join(podsDir, e.Name(), podLogsDir))
		if err != nil {
			return nil, fmt.Errorf("logs of pod %s: %w", e.Name(), err)
		}
		if ok {
			logs[types.UID(e.Name())] = last
		}
	}
	return logs, nil
}

// newestModTime is the newest modification time of dir and everything in
// it; false when dir does not exist.
func newestModTime(dir string) (time.Time, bool, error) {
	var newest time.Time
	found := false
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone meanwhile
		}
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		found = true
		if fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
		return nil
	})
	return newest, found, err
}
