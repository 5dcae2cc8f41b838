package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/apiserver"
	"github.com/podward/podward/internal/staticpods"
)

// RootStateDir is serve's state directory when it runs as root.
const RootStateDir = "/var/lib/podward"

type serveOptions struct {
	agentOptions
	manifests string
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
	o.addFlags(f, "state directory (default "+RootStateDir+" as root, else $XDG_STATE_HOME/podward)")
	f.StringVar(&o.manifests, "manifests", "", "directory of static pod manifests: a file appearing creates its pods, a changed file replaces them, a removed file deletes them")
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

	st, err := o.openStore(root)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	defer st.Close()
	ln, err := apiserver.Listen(socket)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	// The agent outlives the API; it is stopped explicitly below.
	a, err := o.startAgent(ctx, root, st, log, agent.Config{})
	if err != nil {
		_ = ln.Close()
		return &ExitError{Code: ExitFailed, Err: err}
	}
	defer a.close()

	srcCtx, stopSources := context.WithCancel(ctx)
	defer stopSources()
	var sources sync.WaitGroup
	if o.manifests != "" {
		dir, err := filepath.Abs(o.manifests)
		if err != nil {
			_ = ln.Close()
			return &ExitError{Code: ExitBadInput, Err: err}
		}
		src := staticpods.New(dir, a.Agent, a.Agent, log)
		sources.Add(1)
		go func() {
			defer sources.Done()
			if err := src.Run(srcCtx); err != nil && srcCtx.Err() == nil {
				log.Error("static pods", "dir", dir, "err", err)
			}
		}()
	}

	fmt.Fprintf(s.Err, "podward: agent serving on %s (state in %s)\n", socket, root)
	serveErr := apiserver.New(a.Agent, log).Serve(ctx, ln)
	stopSources()
	sources.Wait()
	a.close()
	fmt.Fprintln(s.Err, "podward: agent stopped; the containers keep running")
	if serveErr != nil {
		return &ExitError{Code: ExitInternal, Err: serveErr}
	}
	return nil
}
