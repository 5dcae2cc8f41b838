package cluster

import (
	"os"
	"path/filepath"
	"testing"
)

func TestDetectMachine(t *testing.T) {
	m, err := DetectMachine(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if m.CPUs < 1 || m.MemoryBytes < 1<<20 || m.StorageBytes < 1<<20 || m.KernelVersion == "" || m.BootID == "" {
		t.Errorf("DetectMachine = %+v", m)
	}
	if _, err := DetectMachine("/does/not/exist"); err == nil {
		t.Error("no error for a root that does not exist")
	}
}

func TestMachineFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	meminfo := write("meminfo", "MemFree:         1024 kB\nMemTotal:       16318672 kB\n")
	if n, err := memTotal(meminfo); err != nil || n != 16318672*1024 {
		t.Errorf("memTotal = %d, %v", n, err)
	}
	if _, err := memTotal(write("bad", "MemFree: 1 kB\n")); err == nil {
		t.Error("no error without MemTotal")
	}
	osRelease := write("os-release", "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nID=debian\n")
	if got := prettyName(filepath.Join(dir, "missing"), osRelease); got != "Debian GNU/Linux 13 (trixie)" {
		t.Errorf("prettyName = %q", got)
	}
	if got := prettyName(write("plain", "PRETTY_NAME=Alpine\n")); got != "Alpine" {
		t.Errorf("prettyName unquoted = %q", got)
	}
	if got := firstFile(filepath.Join(dir, "missing"), write("id", "abc\n")); got != "abc" {
		t.Errorf("firstFile = %q", got)
	}
}
