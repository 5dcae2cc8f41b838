package logind

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"golang.org/x/sys/unix"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// The logind tests run a real dbus-daemon on a private socket, with a
// stand-in org.freedesktop.login1 (and the org.freedesktop.systemd1 that
// reloads it) written here. The daemon comes from Debian's dbus package,
// which .ci/run installs: without it the tests skip, but not in CI or with
// PODWARD_REQUIRE_DBUS=1, where they fail.
const requireDBusEnv = "PODWARD_REQUIRE_DBUS"

// waitTimeout bounds every wait on a condition; a passing test never waits
// for it to expire.
const waitTimeout = 10 * time.Second

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

// testBus is a dbus-daemon of the test's own.
type testBus struct {
	t       *testing.T
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

// needDaemon finds dbus-daemon, or skips the test (fails it when required).
func needDaemon(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("dbus-daemon")
	if err == nil {
		return path
	}
	msg := "dbus-daemon is not installed (Debian package dbus; .ci/run installs it): " + err.Error()
	if os.Getenv(requireDBusEnv) == "1" || os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// startBus starts a private bus and points DBUS_SYSTEM_BUS_ADDRESS at it.
func startBus(t *testing.T) *testBus {
	t.Helper()
	daemon := needDaemon(t)
	dir := t.TempDir()
	b := &testBus{t: t, daemon: daemon, config: filepath.Join(dir, "bus.conf"), socket: filepath.Join(dir, "bus")}
	if err := os.WriteFile(b.config, []byte(fmt.Sprintf(busConfig, b.socket)), 0o644); err != nil {
		t.Fatal(err)
	}
	b.start()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("dbus-daemon's stderr:\n%s", b.stderr.String())
		}
	})
	// By its path, not the printed address and its GUID: a restarted
	// daemon has another.
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+b.socket)
	t.Cleanup(b.stop)
	return b
}

// start runs the daemon and waits for the address it prints.
func (b *testBus) start() {
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
	case <-time.After(waitTimeout):
		b.t.Fatal("dbus-daemon printed no address in time")
	}
}

// stop kills the daemon and waits for it: every connection to it closes.
func (b *testBus) stop() {
	if b.cmd == nil {
		return
	}
	_ = b.cmd.Process.Kill()
	<-b.exited
	b.cmd = nil
}

// connect is a client of the bus.
func (b *testBus) connect() *dbus.Conn {
	b.t.Helper()
	conn, err := dbus.Connect(b.address)
	if err != nil {
		b.t.Fatal(err)
	}
	b.t.Cleanup(func() { _ = conn.Close() })
	return conn
}

// standIn is org.freedesktop.login1 for the tests: Inhibit hands out the
// write end of a pipe whose read end the test keeps (a read sees EOF once
// every copy of the write end is closed, as logind sees a lock released),
// InhibitDelayMaxUSec and PreparingForShutdown are what the test sets, and
// org.freedesktop.systemd1's KillUnit reloads it from the drop-in
// directory, as SIGHUP makes logind read its drop-ins.
type standIn struct {
	t         *testing.T
	conn      *dbus.Conn
	dropInDir string // "": KillUnit leaves InhibitDelayMaxUSec alone

	maxDelayUSec atomic.Uint64
	preparing    atomic.Bool // PreparingForShutdown
	inhibits     chan *heldLock
	reloads      chan string
}

// heldLock is one lock Inhibit handed out.
type heldLock struct {
	args   []string // what, who, why, mode
	sender string   // the watcher's unique name
	r      *os.File
	w      *os.File // the stand-in's copy, until the watcher has its own
}

// newStandIn owns logind's and systemd's names on b.
func newStandIn(t *testing.T, b *testBus, maxDelay time.Duration, dropInDir string) *standIn {
	t.Helper()
	s := &standIn{t: t, conn: b.connect(), dropInDir: dropInDir, inhibits: make(chan *heldLock, 8), reloads: make(chan string, 8)}
	s.maxDelayUSec.Store(uint64(maxDelay / time.Microsecond))
	exports := []struct {
		v     any
		path  dbus.ObjectPath
		iface string
	}{
		{login1Manager{s}, logindPath, managerInterface},
		{login1Properties{s}, logindPath, "org.freedesktop.DBus.Properties"},
		{systemd1Manager{s}, systemdPath, systemdInterface},
	}
	for _, e := range exports {
		if err := s.conn.Export(e.v, e.path, e.iface); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range []string{logindName, systemdName} {
		reply, err := s.conn.RequestName(name, dbus.NameFlagDoNotQueue)
		if err != nil || reply != dbus.RequestNameReplyPrimaryOwner {
			t.Fatalf("own %s: reply %v, %v", name, reply, err)
		}
	}
	return s
}

// emit sends PrepareForShutdown(active) as logind does.
func (s *standIn) emit(active bool) {
	s.t.Helper()
	if err := s.conn.Emit(logindPath, managerInterface+".PrepareForShutdown", active); err != nil {
		s.t.Fatal(err)
	}
}

type login1Manager struct{ s *standIn }

func (m login1Manager) Inhibit(sender dbus.Sender, what, who, why, mode string) (dbus.UnixFD, *dbus.Error) {
	r, w, err := os.Pipe()
	if err != nil {
		return 0, dbus.MakeFailedError(err)
	}
	m.s.t.Cleanup(func() { _ = r.Close(); _ = w.Close() })
	fd := dbus.UnixFD(w.Fd()) // before the test may close w
	m.s.inhibits <- &heldLock{args: []string{what, who, why, mode}, sender: string(sender), r: r, w: w}
	return fd, nil
}

type login1Properties struct{ s *standIn }

func (p login1Properties) Get(iface, name string) (dbus.Variant, *dbus.Error) {
	switch {
	case iface == managerInterface && name == "InhibitDelayMaxUSec":
		return dbus.MakeVariant(p.s.maxDelayUSec.Load()), nil
	case iface == managerInterface && name == "PreparingForShutdown":
		return dbus.MakeVariant(p.s.preparing.Load()), nil
	default:
		return dbus.Variant{}, dbus.NewError("org.freedesktop.DBus.Error.UnknownProperty", []any{iface + "." + name})
	}
}

type systemd1Manager struct{ s *standIn }

func (m systemd1Manager) KillUnit(unit, who string, signal int32) *dbus.Error {
	call := fmt.Sprintf("%s %s %d", unit, who, signal)
	if m.s.dropInDir != "" {
		data, err := os.ReadFile(filepath.Join(m.s.dropInDir, DropInName))
		if err != nil {
			return dbus.MakeFailedError(err)
		}
		for _, line := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, "InhibitDelayMaxSec="); ok {
				secs, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					return dbus.MakeFailedError(err)
				}
				m.s.maxDelayUSec.Store(secs * uint64(time.Second/time.Microsecond))
			}
		}
	}
	m.s.reloads <- call
	return nil
}

// held says whether the lock is still held: no EOF (POLLHUP) on its read
// end yet. It looks, it does not wait.
func (l *heldLock) held(t *testing.T) bool {
	t.Helper()
	raw, err := l.r.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var n int
	var perr error
	if err := raw.Control(func(fd uintptr) {
		n, perr = unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
	}); err != nil {
		t.Fatal(err)
	}
	if perr != nil {
		t.Fatal(perr)
	}
	return n == 0
}

// waitReleased waits until every copy of the lock's fd is closed.
func (l *heldLock) waitReleased(t *testing.T) {
	t.Helper()
	if err := l.r.SetReadDeadline(time.Now().Add(waitTimeout)); err != nil {
		t.Fatal(err)
	}
	if _, err := l.r.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("the lock handed to %s was not released: read %v", l.sender, err)
	}
}

// fakeShutdown is the node shutdown: it records what the watcher asks, and
// its shutdown ends when the test says.
type fakeShutdown struct {
	begins  chan time.Duration
	cancels chan struct{}

	mu   sync.Mutex
	err  error // Begin's
	done chan struct{}
}

var _ Shutdowner = (*fakeShutdown)(nil)

func newFakeShutdown() *fakeShutdown {
	return &fakeShutdown{begins: make(chan time.Duration, 8), cancels: make(chan struct{}, 8)}
}

func (f *fakeShutdown) Begin(_ context.Context, grace time.Duration) error {
	f.mu.Lock()
	f.done = make(chan struct{})
	err := f.err
	f.mu.Unlock()
	f.begins <- grace
	return err
}

// fail makes Begin fail with err.
func (f *fakeShutdown) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeShutdown) Cancel(context.Context) error {
	f.cancels <- struct{}{}
	return nil
}

func (f *fakeShutdown) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

// finish ends the shutdown last begun.
func (f *fakeShutdown) finish() {
	f.mu.Lock()
	defer f.mu.Unlock()
	close(f.done)
}

// armClock is a fake clock that says when a timer is armed, so that a test
// steps it only then.
type armClock struct {
	*testingclock.FakeClock
	armed chan time.Duration
}

func newArmClock() *armClock {
	return &armClock{FakeClock: testingclock.NewFakeClock(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)), armed: make(chan time.Duration, 16)}
}

func (c *armClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.armed <- d
	return t
}

func (c *armClock) After(d time.Duration) <-chan time.Time {
	ch := c.FakeClock.After(d)
	c.armed <- d
	return ch
}

// logRecorder keeps every log record, and says when one comes.
type logRecorder struct {
	mu      sync.Mutex
	records []string // "LEVEL message key=value…"
	changed chan struct{}
}

func newLogRecorder() *logRecorder { return &logRecorder{changed: make(chan struct{})} }

func (r *logRecorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *logRecorder) WithAttrs([]slog.Attr) slog.Handler       { return r }
func (r *logRecorder) WithGroup(string) slog.Handler            { return r }

func (r *logRecorder) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Level.String() + " " + rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, b.String())
	close(r.changed)
	r.changed = make(chan struct{})
	return nil
}

// matching are the records that contain substr.
func (r *logRecorder) matching(substr string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, rec := range r.records {
		if strings.Contains(rec, substr) {
			out = append(out, rec)
		}
	}
	return out
}

// wait waits for the n-th record that contains substr, and returns it.
func (r *logRecorder) wait(t *testing.T, substr string, n int) string {
	t.Helper()
	deadline := time.After(waitTimeout)
	for {
		r.mu.Lock()
		changed := r.changed
		r.mu.Unlock()
		if m := r.matching(substr); len(m) >= n {
			return m[n-1]
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("no log record %d with %q; the log:\n%s", n, substr, strings.Join(r.matching(""), "\n"))
		}
	}
}

// waitFor receives from ch, within the deadline.
func waitFor[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitTimeout):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// nothingIn says whether ch is empty, without waiting.
func nothingIn[T any](ch <-chan T) bool {
	select {
	case <-ch:
		return false
	default:
		return true
	}
}
