package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/apiserver"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/staticpods"
	"github.com/podward/podward/internal/store"
)

// RootStateDir is serve's state directory when it runs as root.
const RootStateDir = "/var/lib/podward"

type serveOptions struct {
	root         string
	manifests    string
	backoffBase  time.Duration
	promptKill   time.Duration
	eventsPerPod int
	verbose      bool
	runtime      runtimeOptions
}

func newServeCommand(s Streams, api *apiOptions) *cobra.Command {
	var o serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the agent: keep pods running and serve the API on a unix socket",
		Long: `Serve runs the agent in the foreground: it runs the pods it is given with the
process runtime, keeping its state under --root, and serves the API (docs/api.md)
on --socket, where the other commands (apply, get, logs, ...) reach it.

Defaults: as root, --root ` + RootStateDir + ` and --socket ` + "/run/podward/podward.sock" + `;
otherwise $XDG_STATE_HOME/podward (~/.local/state/podward) and
$XDG_RUNTIME_DIR/podward/podward.sock. $PODWARD_SOCKET overrides the socket.

It refuses to start when another agent answers on the socket. SIGTERM or Ctrl-C
stops the agent, never the containers: they keep running.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), s, api, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.root, "root", "", "state directory (default "+RootStateDir+" as root, else $XDG_STATE_HOME/podward)")
	f.StringVar(&o.manifests, "manifests", "", "directory of static pod manifests: a file appearing creates its pods, a changed file replaces them, a removed file deletes them")
	f.DurationVar(&o.backoffBase, "backoff-base", planner.DefaultConfig().BackoffBase, "crash-loop backoff after the second quick exit (doubles up to 5m)")
	f.DurationVar(&o.promptKill, "prompt-kill", planner.DefaultConfig().PromptKill, "once defer containers completed, SIGKILL this long after the stop signal")
	f.IntVar(&o.eventsPerPod, "events-per-pod", store.DefaultEventsPerPod, "events kept per pod (the newest)")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log the agent's decisions and refused requests to stderr")
	o.runtime.addFlags(f)
	return cmd
}

// defaultStateDir is serve's --root default.
func defaultStateDir() string {
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

// runServe runs the agent and its API until ctx ends or a signal comes.
// The order matters on the way out: the API stops first (no request reaches
// a stopping agent), then the agent; containers are left running.
func runServe(ctx context.Context, s Streams, api *apiOptions, o serveOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	root := o.root
	if root == "" {
		root = defaultStateDir()
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return &ExitError{Code: ExitBadInput, Err: err}
	}
	socket := api.socketPath()
	log := newLogger(s.Err, o.verbose)

	// The database lock is the agent's identity: a second agent on the same
	// state refuses to start before it touches anything.
	st, err := store.Open(filepath.Join(root, "state.db"), store.Options{EventsPerPod: o.eventsPerPod})
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	defer st.Close()
	ln, err := apiserver.Listen(socket)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	clk := clock.RealClock{}
	rt, err := o.runtime.open(ctx, root, clk, log, nil)
	if err != nil {
		_ = ln.Close()
		return &ExitError{Code: ExitFailed, Err: err}
	}
	defer rt.Close()

	cfg := planner.DefaultConfig()
	cfg.BackoffBase = o.backoffBase
	cfg.PromptKill = o.promptKill
	// The agent outlives the API; it is stopped explicitly below.
	agentCtx, stopAgent := context.WithCancel(context.WithoutCancel(ctx))
	defer stopAgent()
	a := agent.New(agentCtx, agent.Config{Runtime: rt, Clock: clk, Planner: cfg, Logger: log, Store: st, EventsPerPod: o.eventsPerPod})
	if err := a.Recover(agentCtx); err != nil {
		_ = ln.Close()
		stopAgent()
		a.Wait()
		return &ExitError{Code: ExitInternal, Err: err}
	}

	srcCtx, stopSources := context.WithCancel(ctx)
	defer stopSources()
	var sources sync.WaitGroup
	if o.manifests != "" {
		dir, err := filepath.Abs(o.manifests)
		if err != nil {
			_ = ln.Close()
			return &ExitError{Code: ExitBadInput, Err: err}
		}
		src := staticpods.New(dir, a, a, log)
		sources.Add(1)
		go func() {
			defer sources.Done()
			if err := src.Run(srcCtx); err != nil && srcCtx.Err() == nil {
				log.Error("static pods", "dir", dir, "err", err)
			}
		}()
	}

	fmt.Fprintf(s.Err, "podward: agent serving on %s (state in %s)\n", socket, root)
	serveErr := apiserver.New(a, log).Serve(ctx, ln)
	stopSources()
	sources.Wait()
	stopAgent()
	a.Wait()
	fmt.Fprintln(s.Err, "podward: agent stopped; the containers keep running")
	if serveErr != nil {
		return &ExitError{Code: ExitInternal, Err: serveErr}
	}
	return nil
}
