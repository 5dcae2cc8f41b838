package bintest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
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

// TestTicksCheck: Check finds a replayed line, a lost one and a late one.
func TestTicksCheck(t *testing.T) {
	now := float64(time.Now().UnixMicro()) / 1e6
	line := func(n int, ago float64) string { return fmt.Sprintf("out-%d %.6f\n", n, now-ago) }
	for name, tc := range map[string]struct {
		text string
		want string // in the error; "" for none
	}{
		"streamed":  {line(4, 0.3) + "other\n" + line(5, 0.2) + line(6, 0.1), ""},
		"replayed":  {line(1, 0.3) + line(2, 0.2), "printed before the stream began"},
		"lost":      {line(4, 0.3) + line(6, 0.1), `after out-4, want out-5`},
		"late":      {line(4, 30) + line(5, 0.1), "arrived 30"},
		"no line":   {"other\n", "no out- line"},
		"part line": {line(4, 0.1) + "out-5", ""},
	} {
		t.Run(name, func(t *testing.T) {
			var k Ticks
			_, _ = k.Write([]byte(tc.text))
			err := k.Check("out-", 3, 1, 5*time.Second)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Check: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Check: %v, want %q", err, tc.want)
			}
		})
	}
}
