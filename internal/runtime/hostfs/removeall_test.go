package hostfs

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestRemoveAllUnmountedKeepsWhatABindShows: a bind mount under the tree
// is unmounted before the tree goes, so the data it showed survives;
// os.RemoveAll would have deleted it through the mount.
func TestRemoveAllUnmountedKeepsWhatABindShows(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("bind mounts need root")
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "host")
	root := filepath.Join(dir, "root")
	target := filepath.Join(root, "pods", "p", "volume-subpaths", "v", "c", "0")
	for _, d := range []string{data, target} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	precious := filepath.Join(data, "precious")
	if err := os.WriteFile(precious, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(data, target, "", unix.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })

	if err := RemoveAllUnmounted(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(root); !os.IsNotExist(err) {
		t.Errorf("the tree is still there: %v", err)
	}
	if b, err := os.ReadFile(precious); err != nil || string(b) != "keep" {
		t.Errorf("the data behind the bind mount: %q, %v", b, err)
	}
}
