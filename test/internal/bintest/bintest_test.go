package bintest

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestScanLinesDrainsWhatALongLineLeaves(t *testing.T) {
	in := "a\nb\n" + strings.Repeat("x", maxLine+1) + "\nafter\n"
	var lines []string
	var rest strings.Builder
	ScanLines(strings.NewReader(in), &rest, func(l string) { lines = append(lines, l) })
	if want := []string{"a", "b"}; !slices.Equal(lines, want) {
		t.Errorf("lines %q, want %q", lines, want)
	}
	if !strings.HasSuffix(rest.String(), "\nafter\n") {
		t.Errorf("rest ends with %q, want what came after the long line", rest.String()[max(rest.Len()-20, 0):])
	}
}

func TestProcessRuns(t *testing.T) {
	self := os.Getpid()
	state, ppid, ok := ProcStat(self)
	if !ok || state == 'Z' || ppid != os.Getppid() {
		t.Errorf("ProcStat(self) = %q, %d, %v; want a live process whose parent is %d", state, ppid, ok, os.Getppid())
	}
	if !ProcessRuns(self, filepath.Base(os.Args[0])) {
		t.Errorf("ProcessRuns(self, %q) = false; command line %q", filepath.Base(os.Args[0]), Cmdline(self))
	}
	if ProcessRuns(self, "no such command line") {
		t.Error("ProcessRuns matched a command line the process does not have")
	}
}
