package logind

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/logind/logindtest"
)

// The logind tests run a real dbus-daemon on a private socket, with the
// stand-in org.freedesktop.login1 of internal/logind/logindtest (the one
// the binary-level suites run as a program beside the real agent). Without
// dbus-daemon the tests skip, but not in CI or with PODWARD_REQUIRE_DBUS=1,
// where they fail.

// waitTimeout bounds every wait on a condition; a passing test never waits
// for it to expire.
const waitTimeout = logindtest.WaitTimeout

// startBus starts a private bus and points DBUS_SYSTEM_BUS_ADDRESS at it.
func startBus(t *testing.T) *logindtest.Bus {
	t.Helper()
	b := logindtest.StartBus(t)
	t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", b.SystemBusAddress())
	return b
}

// newStandIn owns logind's and systemd's names on b, with
// InhibitDelayMaxUSec maxDelay; KillUnit reads it again from dropInDir
// ("": never).
func newStandIn(t *testing.T, b *logindtest.Bus, maxDelay time.Duration, dropInDir string) *logindtest.StandIn {
	t.Helper()
	s, err := logindtest.New(b.Connect(), maxDelay, dropInDir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// emit sends PrepareForShutdown(active) as logind does.
func emit(t *testing.T, s *logindtest.StandIn, active bool) {
	t.Helper()
	if err := s.Emit(active); err != nil {
		t.Fatal(err)
	}
}

// held says whether l is still held, without waiting.
func held(t *testing.T, l *logindtest.Lock) bool {
	t.Helper()
	h, err := l.Held()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// waitReleased waits until every copy of l's fd is closed.
func waitReleased(t *testing.T, l *logindtest.Lock) {
	t.Helper()
	if err := l.WaitReleased(waitTimeout); err != nil {
		t.Fatal(err)
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
