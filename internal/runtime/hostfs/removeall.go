package hostfs

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
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
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		// ID parentID major:minor root mountpoint ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		p := unescapeMountinfo(fields[4])
		if strings.HasPrefix(p, root+"/") {
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read /proc/self/mountinfo: %w", err)
	}
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out, nil
}

// unescapeMountinfo undoes the kernel's octal escapes (\040 for a space)
// in a mountinfo path.
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
