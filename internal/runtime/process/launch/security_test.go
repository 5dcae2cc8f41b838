package launch

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runSecured starts sh -c script with sec through Start, waits for it and
// returns its output (stdout and stderr) and exit code.
func runSecured(t *testing.T, sec *Security, script string, mounts ...Mount) (string, int) {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	spec := Spec{
		Argv:     []string{"sh", "-c", script},
		Env:      []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"},
		Dir:      "/",
		Mounts:   mounts,
		Security: sec,
	}
	cmd, err := Start(context.Background(), spec, out, out)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	_ = cmd.Wait()
	b, err := os.ReadFile(out.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b), ExitCode(cmd.ProcessState)
}

// statusField is the value of field in a /proc/PID/status text.
func statusField(status, field string) string {
	for _, l := range strings.Split(status, "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// defaultCaps are the container runtimes' default capabilities, as the
// process runtime passes them.
var defaultCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD",
	"CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP",
	"CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

// Each setting of Security, as the process sees it from inside: its
// /proc/self/status, id, a write to a read-only /, its /proc, its /dev.
func TestSecurityFromInside(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	hidden := t.TempDir()
	if err := os.WriteFile(filepath.Join(hidden, "state"), []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A socket in a directory others share is hidden alone.
	sock := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	vol := t.TempDir()
	target := t.TempDir()
	tests := map[string]struct {
		sec    *Security
		script string
		check  func(t *testing.T, out string)
	}{
		"default capabilities": {
			sec:    &Security{Capabilities: defaultCaps},
			script: "cat /proc/self/status",
			check: func(t *testing.T, out string) {
				for _, f := range []string{"CapEff", "CapPrm", "CapBnd"} {
					if got := statusField(out, f); got != "00000000a80425fb" {
						t.Errorf("%s %s, want the default set 00000000a80425fb", f, got)
					}
				}
				if got := statusField(out, "CapInh"); got != "0000000000000000" {
					t.Errorf("CapInh %s, want none", got)
				}
			},
		},
		"drop ALL, add NET_BIND_SERVICE": {
			sec:    &Security{Capabilities: []string{"CAP_NET_BIND_SERVICE"}},
			script: "cat /proc/self/status",
			check: func(t *testing.T, out string) {
				if got := statusField(out, "CapEff"); got != "0000000000000400" {
					t.Errorf("CapEff %s, want only CAP_NET_BIND_SERVICE", got)
				}
			},
		},
		"no_new_privs": {
			sec:    &Security{Capabilities: defaultCaps, NoNewPrivs: true},
			script: "cat /proc/self/status",
			check: func(t *testing.T, out string) {
				if got := statusField(out, "NoNewPrivs"); got != "1" {
					t.Errorf("NoNewPrivs %s, want 1", got)
				}
			},
		},
		"seccomp RuntimeDefault": {
			sec:    &Security{Capabilities: defaultCaps, Seccomp: SeccompRuntimeDefault},
			script: "grep Seccomp: /proc/self/status; unshare -U true && echo unshared",
			check: func(t *testing.T, out string) {
				if statusField(out, "Seccomp") != "2" || strings.Contains(out, "unshared") {
					t.Errorf("output %q, want Seccomp 2 and unshare refused", out)
				}
			},
		},
		"user and groups": {
			sec:    &Security{Capabilities: defaultCaps, User: &User{UID: 1234, GID: 2345, Groups: []uint32{3456, 4567}}},
			script: "id -u; id -g; id -G; grep CapEff /proc/self/status",
			check: func(t *testing.T, out string) {
				want := "1234\n2345\n2345 3456 4567\nCapEff:\t0000000000000000\n"
				if out != want {
					t.Errorf("output %q, want %q (another user has no capabilities)", out, want)
				}
			},
		},
		"own PID namespace": {
			sec:    &Security{Capabilities: defaultCaps, PIDNamespace: true},
			script: "echo $$; cd /proc && echo [0-9]*",
			check: func(t *testing.T, out string) {
				// Its init (the helper, PID 1) and itself: the shell
				// globs without a process of its own.
				if f := strings.Fields(out); len(f) != 3 || f[1] != "1" || f[2] != f[0] {
					t.Errorf("output %q, want its PID, then the processes 1 and its PID", out)
				}
			},
		},
		"read-only root, volume writable": {
			sec:    &Security{Capabilities: defaultCaps, ReadOnlyRoot: true},
			script: "touch " + filepath.Join(hidden, "x") + " || echo root-refused; touch " + target + "/ok && echo volume-written",
			check: func(t *testing.T, out string) {
				if !strings.Contains(out, "Read-only file system") || !strings.Contains(out, "root-refused") || !strings.Contains(out, "volume-written") {
					t.Errorf("output %q, want / refused and the volume written", out)
				}
			},
		},
		"masked, read-only and hidden paths": {
			sec: &Security{Capabilities: defaultCaps, PIDNamespace: true, Devices: true,
				MaskedPaths: []string{"/proc/timer_list"}, ReadonlyPaths: []string{"/proc/sys", "/sys"}, Hidden: []string{hidden, sock}},
			script: "wc -c < /proc/timer_list; echo 1 > /proc/sys/kernel/shm_rmid_forced || echo sys-refused; ls -A " + hidden + "; echo listed; [ -S " + sock + " ] && echo socket-seen; ls /dev | tr '\\n' ' '",
			check: func(t *testing.T, out string) {
				if !strings.HasPrefix(out, "0\n") || !strings.Contains(out, "sys-refused") || !strings.Contains(out, "\nlisted\n") || strings.Contains(out, "state") || strings.Contains(out, "socket-seen") {
					t.Errorf("output %q, want an empty timer_list, /proc/sys refused, the hidden directory empty, the socket no socket", out)
				}
				if !strings.Contains(out, "null") || strings.Contains(out, "sda") || strings.Contains(out, "kmsg") {
					t.Errorf("/dev in %q: want the container's few devices", out)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			out, code := runSecured(t, tc.sec, tc.script, Mount{Source: vol, Target: target})
			if code != 0 && !strings.Contains(name, "seccomp") {
				t.Logf("exit code %d", code)
			}
			tc.check(t, out)
		})
	}
}

// The init helper of a container of its own PID namespace passes on its
// command's exit code, and what kills the command.
func TestInitHelperExitCode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	sec := &Security{Capabilities: defaultCaps, PIDNamespace: true}
	if _, code := runSecured(t, sec, "exit 7"); code != 7 {
		t.Errorf("exit code %d, want 7", code)
	}
	if _, code := runSecured(t, sec, "kill -TERM $$"); code != 128+15 {
		t.Errorf("exit code %d, want 143 (SIGTERM)", code)
	}
}

// A file mounted under the container's /dev whose source is under the
// host's /dev (a state directory on /dev/shm) is found though the
// container's /dev covers the host's: its target is made after the
// source opened before.
func TestDevicesMountFromHostDev(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	dir, err := os.MkdirTemp("/dev/shm", "launch-test-")
	if err != nil {
		t.Skip("no /dev/shm:", err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	src := filepath.Join(dir, "termination-log")
	if err := os.WriteFile(src, []byte("from-the-host"), 0o666); err != nil {
		t.Fatal(err)
	}
	sec := &Security{Capabilities: defaultCaps, PIDNamespace: true, Devices: true}
	out, code := runSecured(t, sec, "cat /dev/termination-log", Mount{Source: src, Target: "/dev/termination-log"})
	if code != 0 || out != "from-the-host" {
		t.Errorf("output %q, exit code %d; want the host file's content", out, code)
	}
}
