package hostfs

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The message file is created empty and writable by all whatever the
// umask, as the kubelet's (kuberuntime_container.go, makeMounts), and a
// leftover of an earlier try is emptied.
func TestCreateMessageFile(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	path := filepath.Join(t.TempDir(), "containers", "app", "0-1a2b3c4d")
	if err := CreateMessageFile(path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("left over"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := CreateMessageFile(path); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != 0 || fi.Mode().Perm() != 0o666 {
		t.Errorf("message file: size %d, mode %v; want empty, 0666", fi.Size(), fi.Mode().Perm())
	}
}
