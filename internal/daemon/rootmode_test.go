package daemon

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// lockedBuffer is a log output written from any goroutine.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

const openRootWarning = "the state directory is open to other users"

// mkdirMode makes dir with mode, whatever the umask.
func mkdirMode(t *testing.T, dir string, mode os.FileMode) {
	t.Helper()
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
}

// TestWarnOpenRoot: a state directory its group or others may read or
// enter is named in a warning, with its mode; one only its owner may is
// not, nor one that is not there.
func TestWarnOpenRoot(t *testing.T) {
	for _, tc := range []struct {
		mode os.FileMode
		want string // the mode warned about; "" for no warning
	}{
		{0o700, ""},
		{0o750, "0750"}, // the kubelet's usual mode: the group reads the pods' secrets
		{0o755, "0755"},
		{0o701, "0701"}, // others may open what they can name
		{0o710, "0710"},
	} {
		dir := filepath.Join(t.TempDir(), "state")
		mkdirMode(t, dir, tc.mode)
		var out bytes.Buffer
		warnOpenRoot(dir, slog.New(slog.NewTextHandler(&out, nil)))
		got := out.String()
		if tc.want == "" {
			if got != "" {
				t.Errorf("%#o: warned %q", tc.mode, got)
			}
			continue
		}
		if !strings.Contains(got, "level=WARN") || !strings.Contains(got, openRootWarning) ||
			!strings.Contains(got, "path="+dir+" mode="+tc.want) {
			t.Errorf("%#o: %q, want a warning naming path=%s mode=%s", tc.mode, got, dir, tc.want)
		}
	}
	var out bytes.Buffer
	warnOpenRoot(filepath.Join(t.TempDir(), "missing"), slog.New(slog.NewTextHandler(&out, nil)))
	if out.Len() != 0 {
		t.Errorf("missing root: %q", out.String())
	}
}

// TestDaemonsWarnOfAnOpenRoot: serve (NewAgent) and run (NewForeground)
// warn at startup of a --root open to others, and not of one they make.
func TestDaemonsWarnOfAnOpenRoot(t *testing.T) {
	dir := shortDir(t)
	open := filepath.Join(dir, "open")
	mkdirMode(t, open, 0o755)
	made := filepath.Join(dir, "made")

	for _, tc := range []struct {
		name, root string
		warn       bool
	}{
		{"serve, an open root", open, true},
		{"serve, a root it made", made, false},
	} {
		var out lockedBuffer
		o := options(tc.root)
		o.LogOutput = &out
		a, err := NewAgent(context.Background(), AgentOptions{Options: o, Socket: filepath.Join(dir, "pw.sock")})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		a.Close()
		if got := warned(out.String(), tc.root, ""); got != tc.warn {
			t.Errorf("%s: warned %v, want %v: %q", tc.name, got, tc.warn, out.String())
		}
	}
	if fi, err := os.Stat(made); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("the root serve made: %v, %v; want 0700", fi.Mode().Perm(), err)
	}

	runRoot := filepath.Join(dir, "run")
	mkdirMode(t, runRoot, 0o750)
	var out lockedBuffer
	o := options(runRoot)
	o.LogOutput = &out
	f, err := NewForeground(context.Background(), o, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !warned(out.String(), runRoot, "0750") {
		t.Errorf("run with an open root: %q", out.String())
	}
}

// warned says whether log has the warning about root (with mode, unless
// "").
func warned(log, root, mode string) bool {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, openRootWarning) && strings.Contains(line, " path="+root+" mode="+mode) {
			return true
		}
	}
	return false
}
