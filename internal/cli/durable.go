package cli

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/store"
)

// agentOptions are the flags of the long-running agents, serve and node.
type agentOptions struct {
	root         string
	backoffBase  time.Duration
	promptKill   time.Duration
	eventsPerPod int
	verbose      bool
	runtime      runtimeOptions
}

func (o *agentOptions) addFlags(f *pflag.FlagSet, rootHelp string) {
	f.StringVar(&o.root, "root", "", rootHelp)
	f.DurationVar(&o.backoffBase, "backoff-base", planner.DefaultConfig().BackoffBase, "crash-loop backoff after the second quick exit (doubles up to 5m)")
	f.DurationVar(&o.promptKill, "prompt-kill", planner.DefaultConfig().PromptKill, "once defer containers completed, SIGKILL this long after the stop signal")
	f.IntVar(&o.eventsPerPod, "events-per-pod", store.DefaultEventsPerPod, "events kept per pod (the newest)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log the agent's decisions to stderr")
	o.runtime.addFlags(f)
}

// durableAgent is an agent whose state survives it: its store, runtime and
// the agent itself, recovered from them.
type durableAgent struct {
	*agent.Agent
	rt    openRuntime
	store *store.Store
	stop  context.CancelFunc
	once  sync.Once
}

// openStore takes the state's database. Its lock is the agent's identity: a
// second agent on the same state refuses to start before it touches
// anything.
func (o *agentOptions) openStore(root string) (*store.Store, error) {
	return store.Open(filepath.Join(root, "state.db"), store.Options{EventsPerPod: o.eventsPerPod})
}

// startAgent opens the runtime and starts the agent on st, recovered from
// what the last agent on root left. The agent outlives ctx: close stops it.
func (o *agentOptions) startAgent(ctx context.Context, root string, st *store.Store, log *slog.Logger, node agent.Config) (*durableAgent, error) {
	clk := clock.RealClock{}
	rt, err := o.runtime.open(ctx, root, clk, log, nil)
	if err != nil {
		return nil, err
	}
	cfg := planner.DefaultConfig()
	cfg.BackoffBase = o.backoffBase
	cfg.PromptKill = o.promptKill
	agentCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	node.Runtime, node.Clock, node.Planner, node.Logger, node.Store, node.EventsPerPod = rt, clk, cfg, log, st, o.eventsPerPod
	a := agent.New(agentCtx, node)
	d := &durableAgent{Agent: a, rt: rt, store: st, stop: stop}
	if err := a.Recover(agentCtx); err != nil {
		d.close()
		return nil, err
	}
	return d, nil
}

// close stops the agent — never its containers — and closes the runtime.
func (d *durableAgent) close() {
	d.once.Do(func() {
		d.stop()
		d.Wait()
		_ = d.rt.Close()
	})
}
