package process

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/podward/podward/internal/model"
)

// The shim binary is the one configured, else podward-shim beside the
// executable, else in PATH, else none: this binary re-executed.
func TestShimBinaryFound(t *testing.T) {
	exec := func(t *testing.T, path string, mode os.FileMode) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t.Run("configured", func(t *testing.T) {
		dir := t.TempDir()
		bin := exec(t, filepath.Join(dir, "my-shim"), 0o755)
		got, fallback, err := shimBinary(bin, filepath.Join(dir, "podward"))
		if got != bin || fallback || err != nil {
			t.Errorf("shimBinary = %q, %v, %v; want %q", got, fallback, err, bin)
		}
	})
	t.Run("configured but not executable", func(t *testing.T) {
		bin := exec(t, filepath.Join(t.TempDir(), "my-shim"), 0o644)
		if _, _, err := shimBinary(bin, ""); err == nil || !strings.Contains(err.Error(), "not an executable file") {
			t.Errorf("shimBinary of a file nobody may execute: %v, want it refused", err)
		}
		if _, _, err := shimBinary(filepath.Join(t.TempDir(), "none"), ""); err == nil {
			t.Error("shimBinary of a missing file: no error")
		}
	})
	t.Run("beside the executable, before PATH", func(t *testing.T) {
		dir, path := t.TempDir(), t.TempDir()
		beside := exec(t, filepath.Join(dir, ShimBinaryName), 0o755)
		exec(t, filepath.Join(path, ShimBinaryName), 0o755)
		t.Setenv("PATH", path)
		got, fallback, err := shimBinary("", filepath.Join(dir, "podward"))
		if got != beside || fallback || err != nil {
			t.Errorf("shimBinary = %q, %v, %v; want %q", got, fallback, err, beside)
		}
	})
	t.Run("in PATH", func(t *testing.T) {
		path := t.TempDir()
		inPath := exec(t, filepath.Join(path, ShimBinaryName), 0o755)
		exec(t, filepath.Join(t.TempDir(), ShimBinaryName), 0o644) // beside, not executable
		t.Setenv("PATH", path)
		got, fallback, err := shimBinary("", filepath.Join(t.TempDir(), "podward"))
		if got != inPath || fallback || err != nil {
			t.Errorf("shimBinary = %q, %v, %v; want %q", got, fallback, err, inPath)
		}
	})
	t.Run("none: this binary", func(t *testing.T) {
		t.Setenv("PATH", t.TempDir())
		got, fallback, err := shimBinary("", filepath.Join(t.TempDir(), "podward"))
		if got != "" || !fallback || err != nil {
			t.Errorf("shimBinary = %q, %v, %v; want this binary (\"\"), as a fallback", got, fallback, err)
		}
	})
}

// The runtime runs Config.ShimBinary as each container's shim and as each
// Exec's init helper, not this binary: here a script that says so on its
// stderr (a shim's shim.log, an exec's output) and execs this binary,
// which so is the shim or the helper in the same process.
func TestShimBinaryRunsShimsAndExecs(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(t.TempDir(), "wrapped-shim")
	script := "#!/bin/sh\necho 'the wrapped shim binary' >&2\nexec '" + self + "' \"$@\"\n"
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, Config{Root: t.TempDir(), ShimBinary: bin})
	pod := newPod(t, shell("app", "echo ready; exec sleep 100"))
	h.prepare(pod)
	c := h.start(pod, 0)
	h.waitOutput("app", "ready")
	shimLog, err := os.ReadFile(filepath.Join(h.r.instanceDir(pod.UID, c.ID), "shim.log"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(shimLog), "the wrapped shim binary") {
		t.Errorf("shim.log %q: the shim was not the configured binary", shimLog)
	}
	ref := model.ContainerRef{Name: "app", Role: model.RoleMain}
	out, code, err := h.r.Exec(context.Background(), pod, ref, []string{"echo", "hi"})
	if err != nil || code != 0 {
		t.Fatalf("Exec = %q, %d, %v", out, code, err)
	}
	if want := "the wrapped shim binary\nhi\n"; string(out) != want {
		t.Errorf("Exec output %q, want %q: the init helper was not the configured binary", out, want)
	}
	if err := h.r.Signal(context.Background(), c.ID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.waitExit(c.ID)
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}
