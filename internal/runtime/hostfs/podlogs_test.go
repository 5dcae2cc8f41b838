package hostfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestPodLogs: ListPodLogs finds the pods with a logs directory and their
// newest write; RemovePodLogs removes the logs, and the pod's directory
// only once nothing else is left in it.
func TestPodLogs(t *testing.T) {
	pods := t.TempDir()
	write := func(rel string, mtime time.Time) {
		t.Helper()
		p := filepath.Join(pods, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o640); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	write("a/logs/app/0.log", old)
	write("a/logs/app/1.log", old.Add(time.Hour))
	// b has volumes left besides its logs (a clean-up that failed).
	write("b/logs/app/0.log", old)
	write("b/volumes/data/file", old)
	write("c/volumes/data/file", old) // no logs
	// The directories' own times are now: set them back, so that the
	// newest write is the files'.
	for _, d := range []string{"a/logs", "a/logs/app", "b/logs", "b/logs/app"} {
		if err := os.Chtimes(filepath.Join(pods, d), old, old); err != nil {
			t.Fatal(err)
		}
	}
	logs, err := ListPodLogs(pods)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 2 || !logs["a"].Equal(old.Add(time.Hour)) || !logs["b"].Equal(old) {
		t.Fatalf("ListPodLogs = %v, want a at %v and b at %v", logs, old.Add(time.Hour), old)
	}
	for _, pod := range []string{"a", "b", "never"} {
		if err := RemovePodLogs(filepath.Join(pods, pod)); err != nil {
			t.Fatalf("RemovePodLogs(%s): %v", pod, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(pods, "a")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("pod a's directory is left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(pods, "b/volumes/data/file")); err != nil {
		t.Errorf("pod b's volumes were removed with its logs: %v", err)
	}
	if logs, err := ListPodLogs(pods); err != nil || len(logs) != 0 {
		t.Errorf("ListPodLogs after the removals = %v, %v", logs, err)
	}
	if logs, err := ListPodLogs(filepath.Join(pods, "missing")); err != nil || len(logs) != 0 {
		t.Errorf("ListPodLogs of a missing directory = %v, %v", logs, err)
	}
}
