package hostfs

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestCheckSubPath(t *testing.T) {
	for sub, ok := range map[string]bool{"": true, "a": true, "a/b": true, "/a": false, "..": false, "a/../b": false, "a..b": true} {
		if err := CheckSubPath(sub); (err == nil) != ok {
			t.Errorf("CheckSubPath(%q) = %v, want ok=%v", sub, err, ok)
		}
	}
}

func TestCheckUID(t *testing.T) {
	for uid, ok := range map[string]bool{"6b2f0a": true, "": false, ".": false, "..": false, "a/b": false} {
		if err := CheckUID(types.UID(uid)); (err == nil) != ok {
			t.Errorf("CheckUID(%q) = %v, want ok=%v", uid, err, ok)
		}
	}
}

func TestLockRoot(t *testing.T) {
	root := t.TempDir()
	inUse := errors.New("in use")
	f, err := LockRoot(root, "test runtime", inUse)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LockRoot(root, "test runtime", inUse); !errors.Is(err, inUse) {
		t.Fatalf("second lock: %v, want the in-use error", err)
	}
	f.Close()
	g, err := LockRoot(root, "test runtime", inUse)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	g.Close()
}
