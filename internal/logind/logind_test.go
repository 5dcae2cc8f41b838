package logind

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
	"go.uber.org/goleak"

	"github.com/podward/podward/internal/logind/logindtest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// harness is a Watcher running against the test's bus.
type harness struct {
	t     *testing.T
	shut  *fakeShutdown
	logs  *logRecorder
	clk   *armClock
	locks int // locks the watcher said it took
	ended chan struct{}
}

// run starts a Watcher with budget and dropInDir; the test's end stops it.
func run(t *testing.T, budget time.Duration, dropInDir string) *harness {
	t.Helper()
	h := &harness{t: t, shut: newFakeShutdown(), logs: newLogRecorder(), clk: newArmClock(), ended: make(chan struct{})}
	w, err := New(Config{Shutdowner: h.shut, Budget: budget, DropInDir: dropInDir, Logger: slog.New(h.logs), Clock: h.clk})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		defer close(h.ended)
		w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		waitFor(t, h.ended, "Run to return")
	})
	return h
}

// lockTaken waits for the watcher to take a lock from s and to say so,
// then drops the stand-in's copy of its fd: from then on the watcher's
// copy alone holds the lock.
func (h *harness) lockTaken(s *logindtest.StandIn) *logindtest.Lock {
	h.t.Helper()
	l := waitFor(h.t, s.Inhibits, "an Inhibit call")
	h.locks++
	h.logs.wait(h.t, "took logind's delay inhibitor lock", h.locks)
	if err := l.Drop(); err != nil {
		h.t.Fatal(err)
	}
	if !held(h.t, l) {
		h.t.Fatal("the lock was released as soon as it was taken")
	}
	return l
}

// The kubelet's pattern (pkg/kubelet/nodeshutdown/nodeshutdown_manager_linux.go,
// systemd/inhibit_linux.go): a delay lock taken at start, held while the
// pods are shut down, released when they are; a cancelled shutdown takes
// it again.
func TestLockHeldDuringTheShutdownAndTakenAgainAfterACancel(t *testing.T) {
	bus := startBus(t)
	login := newStandIn(t, bus, time.Minute, "")
	dropIns := t.TempDir()
	h := run(t, 30*time.Second, dropIns)

	l1 := h.lockTaken(login)
	if want := []string{"shutdown", "podward", inhibitWhy, "delay"}; !slices.Equal(l1.Args, want) {
		t.Fatalf("Inhibit%q, want Inhibit%q", l1.Args, want)
	}

	emit(t, login, true)
	if grace := waitFor(t, h.shut.begins, "the node shutdown"); grace != 30*time.Second {
		t.Fatalf("Begin(grace %v), want the budget, 30s", grace)
	}
	if !held(t, l1) {
		t.Fatal("the lock was released before the node shutdown was done")
	}
	h.shut.finish()
	waitReleased(t, l1)
	h.logs.wait(t, "the node shutdown is done: released logind's lock", 1)

	emit(t, login, false)
	waitFor(t, h.shut.cancels, "the node shutdown's cancellation")
	l2 := h.lockTaken(login)

	// The second lock works as the first.
	emit(t, login, true)
	waitFor(t, h.shut.begins, "the second node shutdown")
	h.shut.finish()
	waitReleased(t, l2)

	if entries, err := os.ReadDir(dropIns); err != nil || len(entries) != 0 {
		t.Fatalf("logind's delay was long enough, yet the drop-in directory has %v (%v)", entries, err)
	}
}

// A cancel while the pods are being shut down cancels the node shutdown at
// once, and the lock, never released, serves the next shutdown.
func TestCancelDuringTheShutdownKeepsTheLock(t *testing.T) {
	bus := startBus(t)
	login := newStandIn(t, bus, time.Minute, "")
	h := run(t, 30*time.Second, t.TempDir())
	l1 := h.lockTaken(login)

	emit(t, login, true)
	waitFor(t, h.shut.begins, "the node shutdown")
	emit(t, login, false)
	waitFor(t, h.shut.cancels, "the node shutdown's cancellation")
	if !held(t, l1) {
		t.Fatal("a cancelled shutdown released the lock")
	}

	emit(t, login, true)
	waitFor(t, h.shut.begins, "the second node shutdown")
	h.shut.finish()
	waitReleased(t, l1)
	if !nothingIn(login.Inhibits) {
		t.Fatal("a second lock was taken although the first was held")
	}
}

// A shutdown that outlasts its budget does not hold the machine: the lock
// is released when the budget is spent.
func TestBudgetSpentReleasesTheLock(t *testing.T) {
	bus := startBus(t)
	login := newStandIn(t, bus, time.Minute, "")
	h := run(t, 30*time.Second, t.TempDir())
	l1 := h.lockTaken(login)

	emit(t, login, true)
	waitFor(t, h.shut.begins, "the node shutdown")
	if d := waitFor(t, h.clk.armed, "the budget timer"); d != 30*time.Second {
		t.Fatalf("timer of %v, want the budget, 30s", d)
	}
	h.clk.Step(29 * time.Second)
	if !held(t, l1) {
		t.Fatal("the lock was released before the budget was spent")
	}
	h.clk.Step(time.Second)
	waitReleased(t, l1)
	h.logs.wait(t, "the node shutdown's budget is spent", 1)
}

// Below the budget, logind's InhibitDelayMaxSec is raised by a drop-in
// (the kubelet's 99-kubelet.conf), logind is asked to reload (the
// kubelet's KillUnit of systemd-logind.service with SIGHUP), and the log
// says so.
func TestDropInRaisesInhibitDelayMax(t *testing.T) {
	bus := startBus(t)
	dropIns := filepath.Join(t.TempDir(), "logind.conf.d") // created by the watcher
	login := newStandIn(t, bus, 5*time.Second, dropIns)
	h := run(t, 90*time.Second, dropIns)

	if call := waitFor(t, login.Reloads, "logind's reload"); call != "systemd-logind.service all 1" {
		t.Fatalf("KillUnit(%s), want KillUnit(systemd-logind.service all 1), SIGHUP", call)
	}
	data, err := os.ReadFile(filepath.Join(dropIns, "99-podward.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\n[Login]\nInhibitDelayMaxSec=90\n") {
		t.Fatalf("the drop-in:\n%s", data)
	}
	rec := h.logs.wait(t, "raised logind's InhibitDelayMaxSec", 1)
	for _, want := range []string{"WARN ", "was=5s", "inhibitDelayMax=1m30s", "dropIn=" + filepath.Join(dropIns, "99-podward.conf")} {
		if !strings.Contains(rec, want) {
			t.Errorf("log record %q lacks %q", rec, want)
		}
	}

	h.lockTaken(login)
	emit(t, login, true)
	if grace := waitFor(t, h.shut.begins, "the node shutdown"); grace != 90*time.Second {
		t.Fatalf("Begin(grace %v), want the budget, 1m30s", grace)
	}
}

// A logind that keeps a lower InhibitDelayMaxUSec after the reload would
// not wait for the whole budget: the log says so, and the node shutdown
// gets the time logind gives.
func TestInhibitDelayMaxStillBelowTheBudgetCutsTheGrace(t *testing.T) {
	bus := startBus(t)
	login := newStandIn(t, bus, 5*time.Second, "") // its reload changes nothing
	h := run(t, 90*time.Second, t.TempDir())

	waitFor(t, login.Reloads, "logind's reload")
	h.logs.wait(t, "but logind still has less", 1)
	h.lockTaken(login)
	emit(t, login, true)
	if grace := waitFor(t, h.shut.begins, "the node shutdown"); grace != 5*time.Second {
		t.Fatalf("Begin(grace %v), want logind's 5s", grace)
	}
}

// Without logind — no system bus at all, or a bus without logind — the
// watcher says so once and returns; nothing else happens.
func TestLogindAbsentIsSaidOnce(t *testing.T) {
	for name, setup := range map[string]func(t *testing.T){
		"no system bus": func(t *testing.T) {
			t.Setenv("DBUS_SYSTEM_BUS_ADDRESS", "unix:path="+filepath.Join(t.TempDir(), "none"))
		},
		"no logind on the bus": func(t *testing.T) { startBus(t) },
	} {
		t.Run(name, func(t *testing.T) {
			setup(t)
			h := run(t, 30*time.Second, t.TempDir())
			waitFor(t, h.ended, "Run to return")
			recs := h.logs.matching("")
			if len(recs) != 1 || !strings.HasPrefix(recs[0], "WARN "+notWatching) || !strings.Contains(recs[0], "err=logind is absent: ") {
				t.Fatalf("the log, want one warning that logind is absent:\n%s", strings.Join(recs, "\n"))
			}
			if !nothingIn(h.shut.begins) {
				t.Fatal("a node shutdown began without logind")
			}
		})
	}
}

// Only logind's PrepareForShutdown counts: neither another sender's
// broadcast (the match rule names logind as the sender) nor a signal sent
// straight to the watcher's connection (ignored, with a warning) begins
// the node shutdown.
func TestPrepareForShutdownFromAnotherSenderIsIgnored(t *testing.T) {
	bus := startBus(t)
	login := newStandIn(t, bus, time.Minute, "")
	h := run(t, 30*time.Second, t.TempDir())
	l1 := h.lockTaken(login)

	rogue := bus.Connect()
	if err := rogue.Emit(logindPath, managerInterface+".PrepareForShutdown", true); err != nil {
		t.Fatal(err)
	}
	direct := &dbus.Message{
		Type: dbus.TypeSignal,
		Headers: map[dbus.HeaderField]dbus.Variant{
			dbus.FieldPath:        dbus.MakeVariant(logindPath),
			dbus.FieldInterface:   dbus.MakeVariant(managerInterface),
			dbus.FieldMember:      dbus.MakeVariant("PrepareForShutdown"),
			dbus.FieldDestination: dbus.MakeVariant(l1.Sender),
			dbus.FieldSignature:   dbus.MakeVariant(dbus.SignatureOf(true)),
		},
		Body: []any{true},
	}
	if call := rogue.Send(direct, nil); call.Err != nil {
		t.Fatal(call.Err)
	}
	// The bus keeps one sender's order: once the direct signal is ignored,
	// the broadcast before it was not acted on either.
	rec := h.logs.wait(t, "ignored a PrepareForShutdown that logind did not send", 1)
	if !strings.Contains(rec, "sender="+rogue.Names()[0]) {
		t.Errorf("log record %q does not name the sender %s", rec, rogue.Names()[0])
	}
	if !nothingIn(h.shut.begins) || !held(t, l1) {
		t.Fatal("a PrepareForShutdown from another sender began the node shutdown")
	}

	emit(t, login, true)
	waitFor(t, h.shut.begins, "the node shutdown logind asked for")
}

// A lost bus is dialled again every second; once it is back, a new lock
// replaces the old one (the kubelet restarts its watch likewise).
func TestLostBusIsDialledAgainAndTheLockTakenAgain(t *testing.T) {
	bus := startBus(t)
	login := newStandIn(t, bus, time.Minute, "")
	h := run(t, 30*time.Second, t.TempDir())
	l1 := h.lockTaken(login)

	bus.Stop()
	h.logs.wait(t, "lost the system D-Bus", 1)
	if d := waitFor(t, h.clk.armed, "the redial timer"); d != time.Second {
		t.Fatalf("redial in %v, want 1s", d)
	}
	if !held(t, l1) {
		t.Fatal("the lock was released with the bus")
	}
	bus.Start()
	login2 := newStandIn(t, bus, time.Minute, "")
	h.clk.Step(time.Second)
	l2 := h.lockTaken(login2)
	waitReleased(t, l1)

	emit(t, login2, true)
	waitFor(t, h.shut.begins, "the node shutdown")
	h.shut.finish()
	waitReleased(t, l2)
}

// A watcher that starts while logind already prepares for the shutdown (an
// agent restarted during it: its PrepareForShutdown is gone) begins the
// node shutdown at once — the shutdown manager resumes the one it had —
// and releases the lock when it is done.
func TestShutdownAlreadyUnderwayAtStart(t *testing.T) {
	bus := startBus(t)
	login := newStandIn(t, bus, time.Minute, "")
	login.SetPreparing(true)
	h := run(t, 30*time.Second, t.TempDir())
	l1 := h.lockTaken(login)

	if grace := waitFor(t, h.shut.begins, "the node shutdown"); grace != 30*time.Second {
		t.Fatalf("Begin(grace %v), want the budget, 30s", grace)
	}
	h.logs.wait(t, "logind is already preparing for the machine's shutdown", 1)
	h.shut.finish()
	waitReleased(t, l1)
}

// A node shutdown that does not start holds nothing back.
func TestShutdownThatDoesNotStartReleasesTheLock(t *testing.T) {
	bus := startBus(t)
	login := newStandIn(t, bus, time.Minute, "")
	h := run(t, 30*time.Second, t.TempDir())
	h.shut.fail(errors.New("the store is closed"))
	l1 := h.lockTaken(login)

	emit(t, login, true)
	waitFor(t, h.shut.begins, "the node shutdown")
	waitReleased(t, l1)
	h.logs.wait(t, "the node shutdown did not start", 1)
}

func TestNewRefusesBadConfig(t *testing.T) {
	for name, cfg := range map[string]Config{
		"no shutdowner": {Budget: time.Second},
		"no budget":     {Shutdowner: newFakeShutdown()},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := New(cfg); !errors.Is(err, ErrBadConfig) {
				t.Fatalf("New: %v, want ErrBadConfig", err)
			}
		})
	}
}
