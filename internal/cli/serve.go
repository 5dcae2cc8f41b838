package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/podward/podward/internal/daemon"
)

func newServeCommand(s Streams, api *apiOptions) *cobra.Command {
	var o daemon.AgentOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run the agent: keep pods running and serve the API on a unix socket",
		Long: `Serve runs the agent in the foreground: it runs the pods it is given with the
process runtime, keeping its state under --root, and serves the API (docs/api.md)
on --socket, where the other commands (apply, get, logs, ...) reach it.

Defaults: as root, --root ` + daemon.RootStateDir + ` and --socket ` + "/run/podward/podward.sock" + `;
otherwise $XDG_STATE_HOME/podward (~/.local/state/podward) and
$XDG_RUNTIME_DIR/podward/podward.sock (/tmp/podward-<uid>/podward.sock without
XDG_RUNTIME_DIR). $PODWARD_SOCKET overrides the socket.

It refuses to start when another agent answers on the socket, and in a per-user
socket directory that is not the user's own, mode 0700 (not a symbolic link). SIGTERM or Ctrl-C
stops the agent, never the containers: they keep running.

The socket also serves /metrics (Prometheus; docs/api.md lists the metrics), and with
--pprof Go's profiles under /debug/pprof/; --metrics-bind-address serves both on TCP too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), s, api, o)
		},
	}
	f := cmd.Flags()
	addAgentFlags(f, &o.Options, daemon.DefaultOptions(), "state directory (default "+daemon.RootStateDir+" as root, else $XDG_STATE_HOME/podward)")
	f.StringVar(&o.Manifests, "manifests", "", "directory of static pod manifests: a file appearing creates its pods, a changed file replaces them, a removed file deletes them")
	f.DurationVar(&o.StreamingConnectionIdleTimeout, "streaming-connection-idle-timeout", daemon.DefaultStreamingConnectionIdleTimeout, "close an exec, attach or port-forward of the socket none of whose streams carried data for so long, as the kubelet's flag")
	return cmd
}

// runServe runs the agent and its API until ctx ends or a signal comes;
// the containers are left running.
func runServe(ctx context.Context, s Streams, api *apiOptions, o daemon.AgentOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.Socket = api.socketPath()
	o.LogOutput = s.Err
	a, err := daemon.NewAgent(ctx, o)
	if err != nil {
		return daemonError(err)
	}
	defer a.Close()

	fmt.Fprintf(s.Err, "podward: agent serving on %s (state in %s)\n", a.Socket(), a.Root())
	err = a.Serve(ctx)
	fmt.Fprintln(s.Err, "podward: agent stopped; the containers keep running")
	if err != nil {
		return daemonError(err)
	}
	return nil
}
