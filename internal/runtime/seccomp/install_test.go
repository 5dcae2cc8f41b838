//go:build linux

package seccomp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// childEnv, set, makes this test binary a child that installs the filter
// (its value says with which capabilities, or "off" for none), tries
// syscalls and prints what each returned, as JSON; childDirEnv is a
// directory it may write in.
const (
	childEnv    = "PODWARD_SECCOMP_TEST_CHILD"
	childDirEnv = "PODWARD_SECCOMP_TEST_DIR"
)

func TestMain(m *testing.M) {
	if mode, ok := os.LookupEnv(childEnv); ok {
		out := child(mode, os.Getenv(childDirEnv))
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is the filtered process: on one locked thread, as the init helper
// will be, it sets no_new_privs, installs RuntimeDefault for the mode's
// capabilities and tries what the test asks of it.
func child(mode, dir string) map[string]string {
	runtime.LockOSThread() // for good: the filtered thread is this one
	out := make(map[string]string)
	if mode != "off" {
		var caps []string
		if mode != "" {
			caps = strings.Split(mode, ",")
		}
		if err := install(caps); err != nil {
			out["install"] = err.Error()
			return out
		}
	}
	out["seccomp"] = statusField("/proc/thread-self/status", "Seccomp")
	out["mount"] = result(unix.Mount("none", filepath.Join(dir, "missing"), "tmpfs", 0, ""))
	out["unshare"] = result(unix.Unshare(unix.CLONE_NEWUTS))
	_, err := unix.KeyctlGetKeyringID(unix.KEY_SPEC_SESSION_KEYRING, false)
	out["keyctl"] = result(err)
	_, err = unix.AddKey("user", "podward-seccomp-test", []byte("x"), unix.KEY_SPEC_PROCESS_KEYRING)
	out["add_key"] = result(err)
	fd, err := unix.Socket(unix.AF_VSOCK, unix.SOCK_STREAM, 0)
	if err == nil {
		unix.Close(fd)
	}
	out["vsock"] = result(err)
	out["file"] = result(fileRoundTrip(filepath.Join(dir, "file")))
	sh, err := exec.Command("/bin/sh", "-c", "grep Seccomp: /proc/self/status").Output()
	out["exec"] = strings.TrimSpace(string(sh))
	if err != nil {
		out["exec"] = err.Error()
	}
	return out
}

func install(caps []string) error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	f, err := RuntimeDefault(caps)
	if err != nil {
		return err
	}
	return f.Install()
}

// result names err's errno, "ok" for none.
func result(err error) string {
	var errno unix.Errno
	switch {
	case err == nil:
		return "ok"
	case errors.As(err, &errno):
		return unix.ErrnoName(errno)
	}
	return err.Error()
}

func fileRoundTrip(path string) error {
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		return err
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if string(b) != "data" {
		return fmt.Errorf("read %q back", b)
	}
	return os.Remove(path)
}

func statusField(path, field string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "no " + field
}

// runChild runs this binary as a child of mode and returns what it saw.
func runChild(t *testing.T, mode string) map[string]string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childDirEnv+"="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("child %q: %v\n%s", mode, err, stderr.Bytes())
	}
	var out map[string]string
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("child %q printed %q: %v", mode, b, err)
	}
	if out["install"] != "" {
		t.Fatalf("child %q: install: %s", mode, out["install"])
	}
	return out
}

// A process that installed RuntimeDefault is filtered, its exec'd program
// too; what the profile denies fails with EPERM, what it allows for the
// capabilities given works, and so does ordinary work. A child without the
// filter is the control: each denial is the filter's.
func TestInstallInAChild(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the control's mount and unshare need root")
	}
	if statusField("/proc/self/status", "Seccomp") == "no Seccomp" {
		t.Skip("this kernel has no seccomp")
	}
	want := map[string]map[string]string{
		"off": {"seccomp": "0", "mount": "ENOENT", "unshare": "ok", "file": "ok", "exec": "Seccomp:\t0"},
		"": {"seccomp": "2", "mount": "EPERM", "unshare": "EPERM", "keyctl": "EPERM", "add_key": "EPERM",
			"vsock": "EPERM", "file": "ok", "exec": "Seccomp:\t2"},
		"CAP_SYS_ADMIN": {"seccomp": "2", "mount": "ENOENT", "unshare": "ok", "keyctl": "EPERM",
			"add_key": "EPERM", "vsock": "EPERM", "file": "ok", "exec": "Seccomp:\t2"},
	}
	for mode, w := range want {
		t.Run("caps="+mode, func(t *testing.T) {
			got := runChild(t, mode)
			for k, v := range w {
				if got[k] != v {
					t.Errorf("%s: got %q, want %q", k, got[k], v)
				}
			}
			for _, k := range []string{"keyctl", "add_key", "vsock"} {
				if mode == "off" && got[k] == "EPERM" {
					t.Errorf("without a filter %s gave EPERM: the filtered children prove nothing", k)
				}
			}
		})
	}
}
