package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// DetectMachine describes this host: CPUs the process may use, MemTotal of
// /proc/meminfo, the size of rootDir's filesystem, the machine ID, the
// system UUID (readable by root only; empty otherwise), the boot ID, the
// kernel release and the OS's PRETTY_NAME. Capacity that cannot be read is
// an error; a missing identifier is left empty.
func DetectMachine(rootDir string) (Machine, error) {
	m := Machine{CPUs: runtime.NumCPU()}
	var err error
	if m.MemoryBytes, err = memTotal("/proc/meminfo"); err != nil {
		return m, fmt.Errorf("detect memory: %w", err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(rootDir, &st); err != nil {
		return m, fmt.Errorf("detect storage of %s: %w", rootDir, err)
	}
	m.StorageBytes = int64(st.Blocks) * int64(st.Bsize)
	var uts unix.Utsname
	if err := unix.Uname(&uts); err != nil {
		return m, fmt.Errorf("detect kernel version: %w", err)
	}
	m.KernelVersion = unix.ByteSliceToString(uts.Release[:])
	m.MachineID = firstFile("/etc/machine-id", "/var/lib/dbus/machine-id")
	m.SystemUUID = strings.ToLower(firstFile("/sys/class/dmi/id/product_uuid"))
	m.BootID = firstFile("/proc/sys/kernel/random/boot_id")
	m.OSImage = prettyName("/etc/os-release", "/usr/lib/os-release")
	return m, nil
}

// memTotal reads MemTotal, in bytes, from a meminfo file.
func memTotal(path string) (int64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	for line := range bytes.Lines(b) {
		rest, ok := bytes.CutPrefix(line, []byte("MemTotal:"))
		if !ok {
			continue
		}
		f := strings.Fields(string(rest))
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: MemTotal: %w", path, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("%s: no MemTotal", path)
}

// firstFile is the trimmed content of the first of paths that can be read.
func firstFile(paths ...string) string {
	for _, p := range paths {
		if b, err := os.ReadFile(p); err == nil {
			if s := strings.TrimSpace(string(b)); s != "" {
				return s
			}
		}
	}
	return ""
}

// prettyName is PRETTY_NAME of the first os-release file of paths that
// exists.
func prettyName(paths ...string) string {
	for _, p := range paths {
		f, err := os.Open(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return ""
		}
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME=")
			if !ok {
				continue
			}
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return strings.Trim(v, `"'`)
		}
		return ""
	}
	return ""
}
