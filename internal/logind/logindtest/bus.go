package logindtest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// RequireEnv, set to 1, makes a test without dbus-daemon fail rather than
// skip (.ci/run sets it).
const RequireEnv = "PODWARD_REQUIRE_DBUS"

// WaitTimeout bounds every wait of this package on a condition; a passing
// test never waits for it to expire.
const WaitTimeout = 10 * time.Second

// busConfig is a system-like bus that lets anyone own and call anything.
const busConfig = `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=%s</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
</busconfig>
`

// Bus is a dbus-daemon of the test's own, on a socket in a temporary
// directory.
type Bus struct {
	t       testing.TB
	daemon  string
	config  string
	socket  string
	address string
	cmd     *exec.Cmd
	exited  chan struct{}
	stderr  syncBuffer
}

// syncBuffer is what the daemon writes on stderr, shown when a test fails.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// NeedDaemon finds dbus-daemon, or skips the test (fails it when required:
// RequireEnv, or CI=true).
func NeedDaemon(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("dbus-daemon")
	if err == nil {
		return path
	}
	msg := "dbus-daemon is not installed (Debian package dbus; .ci/run installs it): " + err.Error()
	if os.Getenv(RequireEnv) == "1" || os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// StartBus starts a private bus; the test's cleanup stops it (and shows its
// stderr if the test failed). It does not touch the environment: point a
// client at it with SystemBusAddress.
func StartBus(t testing.TB) *Bus {
	t.Helper()
	daemon := NeedDaemon(t)
	dir := t.TempDir()
	b := &Bus{t: t, daemon: daemon, config: filepath.Join(dir, "bus.conf"), socket: filepath.Join(dir, "bus")}
	if len(b.socket) > 100 { // a unix socket path must fit in 108 bytes
		short, err := os.MkdirTemp("", "pwbus-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(short) })
		b.socket = filepath.Join(short, "bus")
	}
	if err := os.WriteFile(b.config, []byte(fmt.Sprintf(busConfig, b.socket)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.Start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dbus-daemon's stderr:\n%s", b.stderr.String())
		}
	})
	t.Cleanup(b.Stop)
	return b
}

// SystemBusAddress is the bus's address for DBUS_SYSTEM_BUS_ADDRESS: by
// its path, not the printed address and its GUID, so that it stays right
// when the daemon is started again (another GUID).
func (b *Bus) SystemBusAddress() string { return "unix:path=" + b.socket }

// Start runs the daemon (again, after Stop) and waits for the address it
// prints.
func (b *Bus) Start() {
	b.t.Helper()
	_ = os.Remove(b.socket) // a killed daemon's
	cmd := exec.Command(b.daemon, "--config-file="+b.config, "--nofork", "--nopidfile", "--print-address")
	cmd.Stderr = &b.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.t.Fatal(err)
	}
	b.cmd, b.exited = cmd, make(chan struct{})
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
		close(b.exited)
	}()
	select {
	case b.address = <-lines:
		if b.address == "" {
			b.t.Fatal("dbus-daemon printed no address")
		}
	case <-time.After(WaitTimeout):
		b.t.Fatal("dbus-daemon printed no address in time")
	}
}

// Stop kills the daemon and waits for it: every connection to it closes.
func (b *Bus) Stop() {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Kill()
	<-b.exited
	b.cmd = nil
}

// Connect is a client of the bus, closed by the test's cleanup.
func (b *Bus) Connect() *dbus.Conn {
	b.t.Helper()
	conn, err := dbus.Connect(b.address)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = conn.Close() })
	return conn
}
