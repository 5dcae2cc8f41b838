package hostfs

import (
	"github.com/podward/podward/internal/runtime/hostfs/mountinfo"

	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// RemoveAllUnmounted removes the directory tree root like os.RemoveAll,
// but first unmounts whatever is mounted under it (a subPath's bind
// target, a memory-backed emptyDir), deepest first: removing through a
// bind mount would delete the data it shows — a hostPath's, the host's.
// If a mount cannot be unmounted nothing is removed, and the error says
// which.
func RemoveAllUnmounted(root string) error {
	root = filepath.Clean(root)
	mounts, err := mountsUnder(root)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if err := unmountAll(m); err != nil {
			return fmt.Errorf("remove %s: %w", root, err)
		}
	}
	return os.RemoveAll(root)
}

// mountsUnder lists the mount points below root (root itself excluded),
// deepest first, from /proc/self/mountinfo.
func mountsUnder(root string) ([]string, error) {
	points, err := mountinfo.Points("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range points {
		if strings.HasPrefix(p, root+"/") {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}
