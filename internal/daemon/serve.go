package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/apiserver"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects/local"
	"github.com/podward/podward/internal/staticpods"
	"github.com/podward/podward/internal/store"
	"github.com/podward/podward/internal/streaming"
)

// RootStateDir is serve's state directory when it runs as root.
const RootStateDir = "/var/lib/podward"

// DefaultStateDir is serve's state directory: RootStateDir as root, else
// $XDG_STATE_HOME/podward (~/.local/state/podward).
func DefaultStateDir() string {
	if os.Geteuid() == 0 {
		return RootStateDir
	}
	if dir := os.Getenv("XDG_STATE_HOME"); dir != "" {
		return filepath.Join(dir, "podward")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".local", "state", "podward")
	}
	return filepath.Join(os.TempDir(), fmt.Sprintf("podward-state-%d", os.Geteuid()))
}

// AgentOptions configure `podward serve`.
type AgentOptions struct {
	Options
	// Socket is the unix socket the API is served on. Required.
	Socket string
	// Manifests is a directory of static pod manifests ("": none): a file
	// appearing creates its pods, a changed file replaces them, a removed
	// file deletes them.
	Manifests string
	// StreamingConnectionIdleTimeout closes an exec, attach or
	// port-forward of the socket none of whose streams carried data for
	// so long, as the kubelet's flag does on its port; zero is its
	// default, streaming.DefaultIdleTimeout (4 h).
	StreamingConnectionIdleTimeout time.Duration
}

// Agent is `podward serve`: a durable agent with its static pods, serving
// the API (docs/api.md) on a unix socket.
type Agent struct {
	root, socket string
	log          *slog.Logger
	store        *store.Store
	ln           net.Listener
	served       bool // Serve took ln
	agent        *durable
	// objects are the ConfigMaps and Secrets applied to the agent, kept
	// in its store.
	objects *local.Objects

	// streamIdle: AgentOptions.StreamingConnectionIdleTimeout.
	streamIdle time.Duration

	stopSources context.CancelFunc
	sources     sync.WaitGroup
}

// NewAgent takes the state under o.Root (its store refuses a second agent),
// listens on o.Socket (refusing a socket another agent answers on), starts
// the agent recovered from the state, and the static pods of o.Manifests.
// Everything runs but the API, which Serve serves. The static pods stop
// when ctx ends; the agent outlives ctx, whose values it keeps: Serve's end
// or Close stops it.
func NewAgent(ctx context.Context, o AgentOptions) (*Agent, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	root := o.Root
	if root == "" {
		root = DefaultStateDir()
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, badOptions(err)
	}
	a := &Agent{root: root, socket: o.Socket, log: o.logger(), stopSources: func() {}, streamIdle: o.StreamingConnectionIdleTimeout}
	started := false
	defer func() {
		if !started {
			a.Close()
		}
	}()
	if a.store, err = o.openStore(root); err != nil {
		return nil, err
	}
	if a.ln, err = apiserver.Listen(o.Socket); err != nil {
		return nil, err
	}
	o.Runtime.sockets = []string{o.Socket}
	if a.objects, err = o.openObjects(a.store, a.objectChanged); err != nil {
		return nil, err
	}
	if a.agent, err = o.startDurable(ctx, root, a.store, a.log, agent.Config{RestartShutdownPods: true, Objects: o.Runtime.objects}, nil); err != nil {
		return nil, err
	}
	if o.Manifests != "" {
		dir, err := filepath.Abs(o.Manifests)
		if err != nil {
			return nil, badOptions(err)
		}
		a.runStaticPods(ctx, dir)
	}
	started = true
	return a, nil
}

// runStaticPods runs the static pods of dir until ctx ends or stop.
func (a *Agent) runStaticPods(ctx context.Context, dir string) {
	srcCtx, stop := context.WithCancel(ctx)
	a.stopSources = stop
	applyObject := func(obj model.Object) error {
		_, _, err := a.objects.Apply(obj)
		return err
	}
	src := staticpods.New(dir, a.agent.Agent, a.agent.Agent, a.log, staticpods.WithObjects(applyObject))
	a.sources.Add(1)
	go func() {
		defer a.sources.Done()
		if err := src.Run(srcCtx); err != nil && srcCtx.Err() == nil {
			a.log.Error("static pods", "dir", dir, "err", err)
		}
	}()
}

// Root is the absolute state directory.
func (a *Agent) Root() string { return a.root }

// Socket is where the API is served.
func (a *Agent) Socket() string { return a.socket }

// Serve serves the API until ctx ends. Then it stops, in this order, the
// API (no request reaches a stopping agent), the static pods and the agent;
// the containers keep running. Its error is the API server's and matches
// ErrInternal.
func (a *Agent) Serve(ctx context.Context) error {
	a.served = true
	releaseStartupMemory()
	err := a.agent.serveDebug(apiserver.New(a.agent.Agent, a.log).WithShutdown(a.agent.shutdown).WithObjects(a.objects).WithStreams(a.streams())).Serve(ctx, a.ln)
	a.stop()
	if err != nil {
		return internal(err)
	}
	return nil
}

// stop stops the static pods, then the agent.
func (a *Agent) stop() {
	a.stopSources()
	a.sources.Wait()
	if a.agent != nil {
		a.agent.close()
	}
}

// Close releases what Serve has not: the socket when it was never served,
// the static pods, the agent and the store. It is idempotent.
func (a *Agent) Close() {
	if a.ln != nil && !a.served {
		a.served = true
		_ = a.ln.Close()
	}
	a.stop()
	if a.store != nil {
		_ = a.store.Close()
		a.store = nil
	}
}

// streams is the socket's streaming server, its idle streams closed after
// the configured timeout.
func (a *Agent) streams() *streaming.Server {
	return streaming.New(a.agent.Agent, a.agent.rt, a.log).WithTimeouts(streaming.Timeouts{Idle: a.streamIdle})
}
