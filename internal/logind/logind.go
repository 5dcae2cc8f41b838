package logind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/godbus/dbus/v5"
	"k8s.io/utils/clock"
)

// Shutdowner is the node shutdown a Watcher triggers: what the watcher needs
// of the node shutdown manager (internal/shutdown's Manager, with its
// reason set to logind by the caller that wires them).
type Shutdowner interface {
	// Begin starts the node shutdown, every pod terminated within grace.
	// It returns once the shutdown has started, not when it is done; ctx
	// bounds the wait for that, not the shutdown. A shutdown already begun
	// is left as it is (nil). An error means no shutdown runs.
	Begin(ctx context.Context, grace time.Duration) error
	// Cancel calls the shutdown in progress off: the machine is not going
	// down after all. nil when there is none.
	Cancel(ctx context.Context) error
	// Done is closed once the shutdown last begun is over: its pods are
	// terminated, or its budget is spent, or it was cancelled. The watcher
	// calls it after Begin returned nil, for that shutdown.
	Done() <-chan struct{}
}

// Config configures a Watcher.
type Config struct {
	// Shutdowner is the node shutdown. Required.
	Shutdowner Shutdowner
	// Budget is how long the node shutdown may take (the sum of its
	// groups' grace periods): how long the watcher asks logind to wait.
	// Required, above zero: with no budget there is nothing to wait for,
	// and no watcher is started.
	Budget time.Duration
	// DropInDir is logind's drop-in directory, where the drop-in that
	// raises InhibitDelayMaxSec is written; "" is DefaultDropInDir.
	DropInDir string
	// Logger receives what the watcher says; nil discards it.
	Logger *slog.Logger
	// Clock times the budget and the redials; nil is the real clock.
	Clock clock.Clock
}

// Watcher holds logind's delay inhibitor lock and triggers the node
// shutdown on PrepareForShutdown. Make one with New; Run runs it.
type Watcher struct {
	shutdowner Shutdowner
	budget     time.Duration
	dropInDir  string
	log        *slog.Logger
	clk        clock.Clock
}

// ErrBadConfig is a Config that cannot work; New's errors match it.
var ErrBadConfig = errors.New("logind: bad config")

// New checks cfg and makes its Watcher; nothing is dialled before Run.
func New(cfg Config) (*Watcher, error) {
	switch {
	case cfg.Shutdowner == nil:
		return nil, fmt.Errorf("%w: Shutdowner is required", ErrBadConfig)
	case cfg.Budget <= 0:
		return nil, fmt.Errorf("%w: Budget must be above zero, not %v", ErrBadConfig, cfg.Budget)
	}
	w := &Watcher{shutdowner: cfg.Shutdowner, budget: cfg.Budget, dropInDir: cfg.DropInDir, log: cfg.Logger, clk: cfg.Clock}
	if w.dropInDir == "" {
		w.dropInDir = DefaultDropInDir
	}
	if w.log == nil {
		w.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if w.clk == nil {
		w.clk = clock.RealClock{}
	}
	return w, nil
}

// triggerTimeout bounds the wait for the Shutdowner to take a Begin or a
// Cancel.
const triggerTimeout = 10 * time.Second

// redialPeriod is how often a watcher that lost the system bus dials it
// again (the kubelet's dbusReconnectPeriod).
const redialPeriod = time.Second

// notWatching is what Run says when it cannot watch; its error says why
// (errAbsent: there is no logind).
const notWatching = "the machine's shutdown is not detected: its pods will not be stopped in order"

// Run connects to logind, raises its InhibitDelayMaxSec when it is below
// the budget, takes the lock and watches until ctx ends; then it closes the
// lock and the connection. It never fails the agent: when logind cannot be
// used (no system bus, no logind on it, the lock refused) it says so once in
// the log and returns at once. Run is called once; the Shutdowner is called
// from Run's goroutine only.
func (w *Watcher) Run(ctx context.Context) {
	b, maxDelay, err := dial(ctx)
	if err != nil {
		w.log.Warn(notWatching, "err", err)
		return
	}
	w.raiseMaxDelay(ctx, b, maxDelay)
	lock, err := b.inhibit(ctx)
	if err != nil {
		b.close()
		w.log.Warn(notWatching, "err", err)
		return
	}
	w.log.Info("took logind's delay inhibitor lock", "budget", w.budget)
	l := &loop{w: w, bus: b, lock: lock, phase: phaseIdle}
	l.catchUp(ctx)
	l.run(ctx)
}

// raiseMaxDelay writes the drop-in that raises logind's InhibitDelayMaxSec
// to the budget, and asks logind to reload, when maxDelay is below the
// budget (as the kubelet does, with its 99-kubelet.conf). Each outcome is
// one log line; none stops the watcher: a lower InhibitDelayMaxUSec only
// shortens the shutdown's grace.
func (w *Watcher) raiseMaxDelay(ctx context.Context, b *bus, maxDelay time.Duration) {
	if maxDelay >= w.budget {
		w.log.Info("logind lets the node shutdown take its budget", "inhibitDelayMax", maxDelay, "budget", w.budget)
		return
	}
	path, err := writeDropIn(w.dropInDir, w.budget)
	if err != nil {
		w.log.Warn("logind's InhibitDelayMaxSec is below the shutdown budget and the drop-in that raises it cannot be written: the node shutdown will be cut short",
			"inhibitDelayMax", maxDelay, "budget", w.budget, "err", err)
		return
	}
	if err := b.reloadLogind(ctx); err != nil {
		w.log.Warn("wrote the logind drop-in that raises InhibitDelayMaxSec to the shutdown budget, but cannot ask logind to reload: restart systemd-logind",
			"dropIn", path, "inhibitDelayMax", maxDelay, "budget", w.budget, "err", err)
		return
	}
	now, err := b.maxDelay(ctx)
	switch {
	case err != nil:
		w.log.Warn("wrote the logind drop-in that raises InhibitDelayMaxSec to the shutdown budget and asked logind to reload, but cannot read it again",
			"dropIn", path, "inhibitDelayMax", maxDelay, "budget", w.budget, "err", err)
	case now < w.budget:
		w.log.Warn("wrote the logind drop-in that raises InhibitDelayMaxSec to the shutdown budget and asked logind to reload, but logind still has less: the node shutdown will be cut short",
			"dropIn", path, "inhibitDelayMax", now, "budget", w.budget)
	default:
		w.log.Warn("raised logind's InhibitDelayMaxSec to the shutdown budget: wrote its drop-in and asked logind to reload",
			"dropIn", path, "was", maxDelay, "inhibitDelayMax", now, "budget", w.budget)
	}
}

// loop is a running watcher's state, owned by Run's goroutine.
type loop struct {
	w     *Watcher
	bus   *bus     // nil while the system bus is lost
	lock  *os.File // the inhibitor lock; nil once released
	phase phase

	// While shuttingDown: the shutdown's Done and its budget timer.
	done   <-chan struct{}
	budget clock.Timer
	grace  time.Duration

	redial <-chan time.Time // while the bus is lost
}

// run serves the loop's events until ctx ends, then releases everything.
func (l *loop) run(ctx context.Context) {
	defer l.close()
	for {
		var signals <-chan *dbus.Signal
		if l.bus != nil {
			signals = l.bus.signals
		}
		var spent <-chan time.Time
		if l.budget != nil {
			spent = l.budget.C()
		}
		select {
		case <-ctx.Done():
			return
		case sig, ok := <-signals:
			if !ok {
				l.lost(ctx)
				continue
			}
			if active, ok := l.prepareForShutdown(ctx, sig); ok {
				l.step(ctx, eventOf(active))
			}
		case <-l.done:
			l.step(ctx, evDone)
		case <-spent:
			l.step(ctx, evBudgetSpent)
		case <-l.redial:
			l.reconnect(ctx)
		}
	}
}

// step moves the loop through next and carries its action out.
func (l *loop) step(ctx context.Context, e event) {
	p, a := next(l.phase, e)
	l.phase = p
	switch a {
	case actBegin:
		l.begin(ctx)
	case actRelease:
		l.endShutdown()
		if e == evBudgetSpent {
			l.w.log.Warn("the node shutdown's budget is spent: released logind's lock, the machine goes down", "grace", l.grace)
		} else {
			l.w.log.Info("the node shutdown is done: released logind's lock, the machine goes down")
		}
		l.closeLock()
	case actCancel:
		l.cancel(ctx)
	case actCancelRelock:
		l.cancel(ctx)
		l.relock(ctx)
	case actNone:
	}
}

// begin starts the node shutdown with the grace logind gives it, and arms
// the budget timer. A shutdown that does not start releases the lock at
// once: there is nothing to wait for.
func (l *loop) begin(ctx context.Context) {
	l.grace = l.w.budget
	if l.bus != nil {
		if maxDelay, err := l.bus.maxDelay(ctx); err == nil && maxDelay < l.grace {
			l.grace = maxDelay
		}
	}
	l.w.log.Info("the machine is shutting down: shutting the node down", "grace", l.grace)
	bctx, cancel := context.WithTimeout(ctx, triggerTimeout)
	err := l.w.shutdowner.Begin(bctx, l.grace)
	cancel()
	if err != nil {
		l.w.log.Error("the node shutdown did not start", "err", err)
		l.step(ctx, evDone)
		return
	}
	l.done = l.w.shutdowner.Done()
	l.budget = l.w.clk.NewTimer(l.grace)
}

// cancel cancels the node shutdown: the machine is not going down.
func (l *loop) cancel(ctx context.Context) {
	l.endShutdown()
	l.w.log.Info("the machine's shutdown was cancelled: cancelling the node shutdown")
	cctx, cancel := context.WithTimeout(ctx, triggerTimeout)
	defer cancel()
	if err := l.w.shutdowner.Cancel(cctx); err != nil {
		l.w.log.Error("the node shutdown was not cancelled", "err", err)
	}
}

// catchUp begins the node shutdown when logind is already preparing for
// the machine's (PreparingForShutdown): its signal came before the watcher
// was there to hear it — an agent restarted during the shutdown, or a bus
// that was away. The Shutdowner leaves a shutdown it already runs as it is.
func (l *loop) catchUp(ctx context.Context) {
	if l.phase != phaseIdle {
		return
	}
	preparing, err := l.bus.preparing(ctx)
	if err != nil {
		l.w.log.Warn("cannot tell whether the machine is already shutting down", "err", err)
		return
	}
	if preparing {
		l.w.log.Info("logind is already preparing for the machine's shutdown")
		l.step(ctx, evShutdown)
	}
}

// endShutdown forgets the shutdown's Done and stops its budget timer.
func (l *loop) endShutdown() {
	l.done = nil
	if l.budget != nil {
		l.budget.Stop()
		l.budget = nil
	}
}

// relock takes the lock again after a cancelled shutdown released it.
// Without the bus, the redial takes it.
func (l *loop) relock(ctx context.Context) {
	if l.bus == nil {
		return
	}
	lock, err := l.bus.inhibit(ctx)
	if err != nil {
		l.w.log.Warn("cannot take logind's inhibitor lock again: the next shutdown of the machine does not wait for the pods", "err", err)
		return
	}
	l.closeLock()
	l.lock = lock
	l.w.log.Info("took logind's delay inhibitor lock again")
}

// prepareForShutdown reads a PrepareForShutdown signal from logind; ok is
// false for any other signal, and for one that logind did not send: the
// match rule lets only logind's broadcasts through, but any peer may send
// a signal to the watcher's own connection.
func (l *loop) prepareForShutdown(ctx context.Context, sig *dbus.Signal) (active, ok bool) {
	if sig.Name != managerInterface+".PrepareForShutdown" || sig.Path != logindPath {
		return false, false
	}
	if !l.bus.fromLogind(ctx, sig.Sender) {
		l.w.log.Warn("ignored a PrepareForShutdown that logind did not send", "sender", sig.Sender)
		return false, false
	}
	if len(sig.Body) != 1 {
		l.w.log.Warn("ignored a PrepareForShutdown without its one argument", "body", sig.Body)
		return false, false
	}
	active, ok = sig.Body[0].(bool)
	if !ok {
		l.w.log.Warn("ignored a PrepareForShutdown whose argument is not a boolean", "body", sig.Body)
	}
	return active, ok
}

// lost forgets a closed bus connection and arms the redial.
func (l *loop) lost(ctx context.Context) {
	l.bus.close()
	l.bus = nil
	if ctx.Err() != nil {
		return // the connection closed with ctx: run returns next
	}
	l.w.log.Warn("lost the system D-Bus: dialing it again every second; logind's lock is kept meanwhile", "phase", l.phase)
	l.redial = l.w.clk.After(redialPeriod)
}

// reconnect dials the bus again; once it is back, a new lock replaces the
// old one (which a restarted logind no longer honours), unless the lock was
// released for a shutdown that goes on.
func (l *loop) reconnect(ctx context.Context) {
	b, _, err := dial(ctx)
	if err != nil {
		l.w.log.Debug("the system D-Bus or logind is still away", "err", err)
		l.redial = l.w.clk.After(redialPeriod)
		return
	}
	l.bus, l.redial = b, nil
	if l.phase == phaseReleased {
		l.w.log.Info("the system D-Bus is back")
		return
	}
	lock, err := b.inhibit(ctx)
	if err != nil {
		l.w.log.Warn("the system D-Bus is back, but logind refused its inhibitor lock: the machine's shutdown does not wait for the pods", "err", err)
		return
	}
	l.closeLock()
	l.lock = lock
	l.w.log.Info("the system D-Bus is back: took logind's delay inhibitor lock again")
	l.catchUp(ctx)
}

// closeLock releases the inhibitor lock, if held.
func (l *loop) closeLock() {
	if l.lock != nil {
		_ = l.lock.Close()
		l.lock = nil
	}
}

// close releases what the loop holds when Run returns.
func (l *loop) close() {
	l.endShutdown()
	l.closeLock()
	if l.bus != nil {
		l.bus.close()
		l.bus = nil
	}
}
