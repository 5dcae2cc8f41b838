// Package mountinfo reads the mount points of a mountinfo file
// (/proc/self/mountinfo, /proc/thread-self/mountinfo). It imports only the
// standard library: the process runtime's init helper, which the shim
// binary links, reads its own namespace's with it, and hostfs the agent's.
package mountinfo

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Points are the mount points that path (a mountinfo file) lists, in its
// order.
func Points(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var points []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// ID parentID major:minor root mountpoint ...
		fields := strings.Fields(sc.Text())
		if len(fields) < 5 {
			continue
		}
		points = append(points, unescape(fields[4]))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return points, nil
}

// unescape undoes the kernel's octal escapes (\040 for a space) in a
// mountinfo path.
func unescape(s string) string {
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
