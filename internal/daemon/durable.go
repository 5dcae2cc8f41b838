package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/apiserver"
	"github.com/podward/podward/internal/cluster"
	"github.com/podward/podward/internal/httplimit"
	"github.com/podward/podward/internal/logind"
	"github.com/podward/podward/internal/metrics"
	"github.com/podward/podward/internal/shutdown"
	"github.com/podward/podward/internal/store"
)

// durable is an agent whose state survives it — its runtime and the agent
// itself, recovered from the store — as serve and node run it. The store
// is the daemon's: it is opened before and closed after.
type durable struct {
	*agent.Agent
	rt openRuntime
	// shutdown is the node shutdown manager; its Run ends (shutdownDone)
	// with the agent.
	shutdown     *shutdown.Manager
	shutdownDone chan struct{}
	// logindDone is closed when the logind watcher (which triggers the
	// shutdown when the machine powers off) has returned; nil without one.
	logindDone chan struct{}
	stop       context.CancelFunc
	once       sync.Once

	// metrics are the agent's; debugDone is closed once the metrics
	// address's server has returned, nil without one.
	metrics   *metrics.Metrics
	profiling bool
	debugDone <-chan struct{}

	// machine is the host, as the agent counts its allocatable and a
	// cluster's Node reports it; nil when it could not be read.
	machine *cluster.Machine
}

// The agent is what a shutdown drives; the manager is what the API
// serves for it.
var (
	_ shutdown.Agent         = (*agent.Agent)(nil)
	_ apiserver.NodeShutdown = (*shutdown.Manager)(nil)
)

// openStore takes the state's database under root. Its lock is the agent's
// identity: a second agent on the same state refuses to start before it
// touches anything. It warns when root is open to other users
// (warnOpenRoot).
func (o *Options) openStore(root string) (*store.Store, error) {
	st, err := store.Open(filepath.Join(root, "state.db"), store.Options{EventsPerPod: o.EventsPerPod, MaxEvents: o.MaxEvents})
	if err != nil {
		return nil, err
	}
	warnOpenRoot(root, o.logger())
	return st, nil
}

// startDurable opens the runtime and starts the agent on st, recovered from
// what the last agent on root left, and its node shutdown manager, which
// goes on with a shutdown the last agent left in progress. cfg carries what
// is the daemon's own (the node's name and address, whether pods a
// shutdown stopped start again); the rest is filled in from o.
// onShutdown, when set, is the manager's OnChange. The agent outlives ctx,
// whose values it keeps: close stops it.
func (o *Options) startDurable(ctx context.Context, root string, st *store.Store, log *slog.Logger, cfg agent.Config, onShutdown func()) (*durable, error) {
	groups, err := o.Shutdown.groups()
	if err != nil {
		return nil, err
	}
	clk := clock.RealClock{}
	rotation, err := o.logRotation()
	if err != nil {
		return nil, err
	}
	sysctls, err := o.sysctls()
	if err != nil {
		return nil, err
	}
	// The Node's allocatable is what resizes are admitted against, in
	// standalone mode too, and what a resourceFieldRef to a missing limit
	// reads.
	allocatable, machine := machineAllocatable(root, o.MaxPods, log)
	rt, err := o.Runtime.open(ctx, root, clk, log, nil, false, rotation, allocatable)
	if err != nil {
		return nil, err
	}
	agentCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	m := metrics.New()
	cfg.Runtime, cfg.Clock, cfg.Planner, cfg.Logger, cfg.Store = rt, clk, o.plannerConfig(), log, st
	cfg.EventsPerPod, cfg.MaxEvents, cfg.KeepTerminatedPodLogs = o.EventsPerPod, o.MaxEvents, o.KeepTerminatedPodLogs
	cfg.MaxPods, cfg.Metrics, cfg.Sysctls = o.MaxPods, m, sysctls
	cfg.Allocatable = allocatable
	d := &durable{Agent: agent.New(agentCtx, cfg), rt: rt, stop: stop, shutdownDone: make(chan struct{}), metrics: m, profiling: o.Profiling, machine: machine}
	d.shutdown = shutdown.New(shutdown.Config{Groups: groups, Agent: d.Agent, Store: st, Clock: clk, Logger: log, OnChange: onShutdown})
	m.AddSources(metrics.Sources{Pods: d.Workers(), Store: st, Shutdown: d.shutdown})
	// The shutdown the last agent left is loaded before the pods are
	// recovered: a node that still shuts down starts none of them again.
	rebooted, err := d.Rebooted()
	if err == nil {
		err = d.shutdown.Load(rebooted)
	}
	if err == nil {
		err = d.Recover(agentCtx)
	}
	go func() {
		defer close(d.shutdownDone)
		d.shutdown.Run(agentCtx)
	}()
	if err == nil {
		err = d.watchLogind(agentCtx, groups, clk, log)
	}
	if err == nil {
		err = d.serveMetrics(agentCtx, o.MetricsBindAddress, log)
	}
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// watchLogind starts logind's watcher for the machine's power-off when a
// shutdown budget is configured (internal/logind, "Wiring"): it holds a
// delay inhibitor lock and begins the node shutdown on PrepareForShutdown.
// Without logind it says so once and returns.
func (d *durable) watchLogind(ctx context.Context, groups []shutdown.Group, clk clock.Clock, log *slog.Logger) error {
	var budget time.Duration
	for _, g := range groups {
		budget += g.Budget
	}
	if budget <= 0 {
		return nil
	}
	w, err := logind.New(logind.Config{Shutdowner: logindShutdown{d.shutdown}, Budget: budget, Logger: log, Clock: clk})
	if err != nil {
		return err
	}
	d.logindDone = make(chan struct{})
	go func() {
		defer close(d.logindDone)
		w.Run(ctx)
	}()
	return nil
}

// logindShutdown is the node shutdown as logind's watcher drives it: a
// shutdown it begins has the reason logind.
type logindShutdown struct{ m *shutdown.Manager }

func (s logindShutdown) Begin(ctx context.Context, grace time.Duration) error {
	return s.m.Begin(ctx, grace, shutdown.ReasonLogind)
}
func (s logindShutdown) Cancel(ctx context.Context) error { return s.m.Cancel(ctx) }
func (s logindShutdown) Done() <-chan struct{}            { return s.m.Done() }

var _ logind.Shutdowner = logindShutdown{}

// close stops the agent — never its containers — and closes the runtime.
// It is idempotent.
func (d *durable) close() {
	d.once.Do(func() {
		d.stop()
		<-d.shutdownDone
		if d.logindDone != nil {
			<-d.logindDone
		}
		if d.debugDone != nil {
			<-d.debugDone
		}
		d.Wait()
		_ = d.rt.Close()
	})
}

// serveMetrics serves the metrics (and, with profiling, the profiles) on
// the TCP address addr, with the kubelet port's limits, until ctx ends;
// nothing without one. Its error is a bad option: the address cannot be
// listened on.
func (d *durable) serveMetrics(ctx context.Context, addr string, log *slog.Logger) error {
	if addr == "" {
		return nil
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return badOptions(fmt.Errorf("--metrics-bind-address: %w", err))
	}
	d.debugDone = serveLimited(ctx, ln, apiserver.DebugHandler(d.metrics.Handler(), d.profiling), httplimit.Kubelet(), log)
	return nil
}

// serveLimited serves h on ln, bounded by lim, until ctx ends or ln fails
// (logged to log), then closes the server and its connections. The
// returned channel is closed once it has.
func serveLimited(ctx context.Context, ln net.Listener, h http.Handler, lim httplimit.Limits, log *slog.Logger) <-chan struct{} {
	srv := &http.Server{
		Handler:  h,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	lim.Apply(srv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		errc := make(chan error, 1)
		go func() { errc <- srv.Serve(lim.Listener(ln)) }()
		select {
		case err := <-errc:
			log.Error("serve metrics", "addr", ln.Addr().String(), "err", err)
			return
		case <-ctx.Done():
		}
		_ = srv.Close()
		<-errc
	}()
	return done
}

// serveDebug adds the metrics, and the profiles when asked for, to an API
// server of the daemon's socket.
func (d *durable) serveDebug(s *apiserver.Server) *apiserver.Server {
	return s.WithMetrics(d.metrics.Handler()).WithProfiling(d.profiling)
}
