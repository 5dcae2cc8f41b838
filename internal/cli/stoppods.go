package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/podward/podward/internal/daemon"
)

func newStopPodsCommand(s Streams) *cobra.Command {
	var root string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "stop-pods [--root DIR]",
		Short: "With no agent running, stop the pods' containers left running, each pod in its order",
		Long: `Stop-pods is for when the machine goes down without the agent: it stops the
containers that agents on --root left running on the process runtime, each pod
in its stop order, as the pods' shims keep it on their own — the regular and
init containers at once (after a defer container that was already running),
then the sidecars in reverse, each once those after it have exited; whatever
is left at the pod's grace period (terminationGracePeriodSeconds, counted from
now) gets SIGKILL, never sooner than 2s after its stop signal. Defer containers
that had not started do not run: only an agent runs them.

It returns once every container is gone (its exit recorded for the next agent),
or after the longest grace period plus a margin, or --timeout. While it runs no
agent can start on --root; it refuses to run while an agent runs there (that
agent stops its pods itself: podward shutdown). contrib/podward-stop-pods.service
runs it when the machine shuts down, after podward.service stopped and before
systemd signals every process left.`,
		Example: `  podward stop-pods
  podward stop-pods --root /var/lib/podward --timeout 2m`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runStopPods(cmd.Context(), s, root, timeout)
		},
	}
	f := cmd.Flags()
	f.StringVar(&root, "root", "", "the agent's state directory (default "+daemon.RootStateDir+" as root, else $XDG_STATE_HOME/podward)")
	f.DurationVar(&timeout, "timeout", 0, "give up waiting after this long (0: the longest grace period, plus a margin)")
	return cmd
}

func runStopPods(ctx context.Context, s Streams, root string, timeout time.Duration) error {
	if timeout < 0 {
		return usageError(fmt.Errorf("--timeout %v must be >= 0", timeout))
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	res, err := daemon.StopPods(ctx, root)
	if err != nil {
		if errors.Is(err, daemon.ErrAgentRuns) {
			return &ExitError{Code: ExitFailed, Err: err}
		}
		return daemonError(err)
	}
	stopped := res.Containers - len(res.Left)
	fmt.Fprintf(s.Out, "stopped %d container(s) of %d pod(s)\n", stopped, res.Pods)
	if len(res.Left) > 0 {
		fmt.Fprintf(s.Err, "error: still running: %s\n", strings.Join(res.Left, ", "))
		return &ExitError{Code: ExitFailed}
	}
	return nil
}
