package node

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"

	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/store"
)

// durable is an agent whose state survives it — its runtime and the agent
// itself, recovered from the store — as serve and node run it. The store
// is the daemon's: it is opened before and closed after.
type durable struct {
	*agent.Agent
	rt   openRuntime
	stop context.CancelFunc
	once sync.Once
}

// openStore takes the state's database under root. Its lock is the agent's
// identity: a second agent on the same state refuses to start before it
// touches anything.
func (o *Options) openStore(root string) (*store.Store, error) {
	return store.Open(filepath.Join(root, "state.db"), store.Options{EventsPerPod: o.EventsPerPod, MaxEvents: o.MaxEvents})
}

// startDurable opens the runtime and starts the agent on st, recovered from
// what the last agent on root left. cfg carries what is the daemon's own
// (the node's name and address); the rest is filled in from o. The agent
// outlives ctx, whose values it keeps: close stops it.
func (o *Options) startDurable(ctx context.Context, root string, st *store.Store, log *slog.Logger, cfg agent.Config) (*durable, error) {
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
	d := &durable{Agent: agent.New(agentCtx, cfg), rt: rt, stop: stop}
	if err := d.Recover(agentCtx); err != nil {
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
		d.Wait()
		_ = d.rt.Close()
	})
}
