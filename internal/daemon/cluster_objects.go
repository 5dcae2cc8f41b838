package daemon

import (
	"context"
	"log/slog"
	"sync"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/clusterobjects"
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/runtime"
)

// maxPendingChanges bounds the changes kept before the agent takes them;
// one over is dropped (and logged): the agent reads every object anew when
// it starts a pod anyway.
const maxPendingChanges = 4096

// clusterObjects is what a cluster node's pods read besides their specs:
// the ConfigMaps and Secrets they reference, watched one by one on the API
// server (clusterobjects.Managers), and their service account tokens
// (clusterobjects.TokenManager), and the cluster's Services, whose links
// the containers see (clusterobjects.Services, started with the node).
// The objects' and tokens' changes reach the agent through relay, which
// keeps them until the agent exists (the runtime, and so the managers, are
// made before it); a Service's change is news to no running container, as
// in the kubelet.
type clusterObjects struct {
	managers *clusterobjects.Managers
	tokens   *clusterobjects.TokenManager
	services *clusterobjects.Services
	relay    *changeRelay
	stop     context.CancelFunc
	once     sync.Once
}

// newClusterObjects makes the managers, the token manager and the
// Services' informer (started at once) of the node's client. They outlive
// ctx, whose values they keep: close stops them.
func newClusterObjects(ctx context.Context, client kubernetes.Interface, clk clock.WithDelayedExecution, log *slog.Logger) *clusterObjects {
	ctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	relay := &changeRelay{log: log, pending: map[objects.Change]struct{}{}}
	return &clusterObjects{
		managers: clusterobjects.New(ctx, clusterobjects.Config{Client: client, OnChange: relay.deliver, Logger: log}),
		tokens:   clusterobjects.NewTokenManager(clusterobjects.TokenConfig{Client: client, Clock: clk, OnChange: relay.deliver, Logger: log}),
		services: clusterobjects.NewServices(ctx, client),
		relay:    relay,
		stop:     stop,
	}
}

// runtimeObjects is what the runtime reads through.
func (c *clusterObjects) runtimeObjects() runtime.Objects {
	return runtime.Objects{Getter: c.managers, Tokens: c.tokens, Services: c.services}
}

// connect hands the changes, those kept so far first, to the agent.
func (c *clusterObjects) connect(a *agent.Agent) { c.relay.connect(objectChangedOf(a)) }

// close stops the watches and the tokens' timers. It is idempotent.
func (c *clusterObjects) close() {
	c.once.Do(func() {
		c.stop()
		c.managers.Close()
		c.tokens.Close()
		c.services.Close()
	})
}

// objectChangedOf is where the managers' changes go in the agent: the
// pods that reference the object, or whose token is due, write their
// volumes again and their containers waiting for it start.
func objectChangedOf(a *agent.Agent) func(objects.Change) { return a.ObjectChanged }

// changeRelay hands changes to a target once it is connected, keeping them
// (each once, at most maxPendingChanges) until then. deliver never blocks
// on anything but its short lock, as OnChange must not.
type changeRelay struct {
	log     *slog.Logger
	mu      sync.Mutex
	target  func(objects.Change)
	pending map[objects.Change]struct{}
}

func (r *changeRelay) deliver(c objects.Change) {
	r.mu.Lock()
	target := r.target
	if target == nil {
		full := len(r.pending) >= maxPendingChanges
		if !full {
			r.pending[c] = struct{}{}
		}
		r.mu.Unlock()
		if full {
			r.log.Warn("change dropped: the agent is not there yet", "object", c.Ref.String(), "podUID", c.PodUID)
		}
		return
	}
	r.mu.Unlock()
	target(c)
}

// connect delivers the changes kept to target, then every later one; a nil
// target keeps them waiting.
func (r *changeRelay) connect(target func(objects.Change)) {
	if target == nil {
		return
	}
	r.mu.Lock()
	pending := r.pending
	r.pending, r.target = map[objects.Change]struct{}{}, target
	r.mu.Unlock()
	for c := range pending {
		target(c)
	}
}
