package node

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"

	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/apiserver"
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
	stop         context.CancelFunc
	once         sync.Once
}

// The agent is the node a shutdown drives; the manager is what the API
// serves for it.
var (
	_ shutdown.Node          = (*agent.Agent)(nil)
	_ apiserver.NodeShutdown = (*shutdown.Manager)(nil)
)

// openStore takes the state's database under root. Its lock is the agent's
// identity: a second agent on the same state refuses to start before it
// touches anything.
func (o *Options) openStore(root string) (*store.Store, error) {
	return store.Open(filepath.Join(root, "state.db"), store.Options{EventsPerPod: o.EventsPerPod, MaxEvents: o.MaxEvents})
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
	rt, err := o.Runtime.open(ctx, root, clk, log, nil, false, rotation)
	if err != nil {
		return nil, err
	}
	agentCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	cfg.Runtime, cfg.Clock, cfg.Planner, cfg.Logger, cfg.Store = rt, clk, o.plannerConfig(), log, st
	cfg.EventsPerPod, cfg.MaxEvents, cfg.KeepTerminatedPodLogs = o.EventsPerPod, o.MaxEvents, o.KeepTerminatedPodLogs
	cfg.MaxPods = o.MaxPods
	d := &durable{Agent: agent.New(agentCtx, cfg), rt: rt, stop: stop, shutdownDone: make(chan struct{})}
	d.shutdown = shutdown.New(shutdown.Config{Groups: groups, Node: d.Agent, Store: st, Clock: clk, Logger: log, OnChange: onShutdown})
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
	if err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// close stops the agent — never its containers — and closes the runtime.
// It is idempotent.
func (d *durable) close() {
	d.once.Do(func() {
		d.stop()
		<-d.shutdownDone
		d.Wait()
		_ = d.rt.Close()
	})
}
