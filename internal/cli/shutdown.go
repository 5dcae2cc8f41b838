package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/spf13/cobra"

	"github.com/podward/podward/internal/wire"
)

type shutdownOptions struct {
	grace   time.Duration
	wait    bool
	timeout time.Duration
	cancel  bool
	status  bool
	output  string
}

func newShutdownCommand(s Streams, api *apiOptions) *cobra.Command {
	var o shutdownOptions
	cmd := &cobra.Command{
		Use:   "shutdown [--grace-period D] [--wait]",
		Short: "Shut the node down gracefully: terminate its pods by priority, as when the machine powers off",
		Long: `Shutdown asks the running agent for the node shutdown logind would start when the
machine powers off (for machines without logind, and for scripts): the agent
rejects new pods, then terminates its pods by priority group, lowest first —
each pod as a delete does (its defer containers, then its containers, then its
sidecars in reverse), with the group's budget or its own grace period if
shorter — each group once the previous one is terminated or out of budget.

The groups are the agent's --shutdown-grace-period (with
--shutdown-grace-period-critical-pods) or --shutdown-grace-period-by-pod-priority;
--grace-period bounds the whole shutdown, shrinking each group in proportion
(an agent without that configuration needs it: one group of every pod). A
shutdown in progress is left as it is. The shutdown is durable: an agent that
restarts goes on with it, with the same deadlines.

Until the machine reboots (or --cancel), the node rejects new pods (Failed,
reason NodeShutdown). After the reboot, the pods the shutdown terminated start
again (serve), or stay Failed for their controllers (node). --wait returns once every group is over, which
is when the machine may go down; --status prints the last shutdown; --cancel
calls it off: standalone pods already stopped start again.`,
		Example: `  podward shutdown --wait
  podward shutdown --grace-period 30s
  podward shutdown --status -o json
  podward shutdown --cancel`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runShutdown(cmd.Context(), s, api, o)
		},
	}
	f := cmd.Flags()
	f.DurationVar(&o.grace, "grace-period", 0, "bound the whole shutdown (whole seconds, rounded up); 0: the agent's configured budgets")
	f.BoolVar(&o.wait, "wait", false, "wait until every group is over (the machine may go down then)")
	f.DurationVar(&o.timeout, "timeout", 0, "with --wait, give up waiting after this long (0: no limit)")
	f.BoolVar(&o.cancel, "cancel", false, "call the shutdown in progress off")
	f.BoolVar(&o.status, "status", false, "print the last shutdown without beginning one")
	f.StringVarP(&o.output, "output", "o", "", "output format: json (default: text)")
	return cmd
}

func runShutdown(ctx context.Context, s Streams, api *apiOptions, o shutdownOptions) error {
	switch {
	case o.grace < 0:
		return usageError(fmt.Errorf("--grace-period %v must be >= 0", o.grace))
	case o.cancel && o.status:
		return usageError(errors.New("--cancel and --status cannot be specified together"))
	case o.output != "" && o.output != "json":
		return usageError(fmt.Errorf("--output %q: want json", o.output))
	}
	c := api.client()
	defer c.Close()
	var st *wire.NodeShutdown
	var err error
	switch {
	case o.status:
		st, err = c.GetShutdown(ctx)
	case o.cancel:
		st, err = c.CancelShutdown(ctx)
	default:
		var grace *int64
		if o.grace > 0 {
			g := int64(math.Ceil(o.grace.Seconds()))
			grace = &g
		}
		st, err = c.BeginShutdown(ctx, grace)
	}
	if err != nil {
		return report(s, err)
	}
	if !o.wait || o.status || o.cancel {
		return printShutdown(s.Out, o.output, st)
	}
	if o.output == "" {
		_ = printShutdown(s.Out, "", st)
	}
	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	if st, err = c.WaitShutdown(ctx); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintln(s.Err, "error: timed out waiting for the node shutdown")
			return &ExitError{Code: ExitFailed}
		}
		return report(s, err)
	}
	if err := printShutdown(s.Out, o.output, st); err != nil {
		return err
	}
	if st.State == wire.ShutdownCancelled {
		fmt.Fprintln(s.Err, "error: the node shutdown was cancelled")
		return &ExitError{Code: ExitFailed}
	}
	return nil
}

// printShutdown prints a shutdown as JSON, or as text: its state, then
// each group with its pods and their deadlines.
func printShutdown(w io.Writer, output string, st *wire.NodeShutdown) error {
	if output == "json" {
		b, err := json.MarshalIndent(st, "", "    ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	}
	if st.State == 0 {
		_, err := fmt.Fprintln(w, "no node shutdown")
		return err
	}
	line := fmt.Sprintf("node shutdown %s (%s), began %s", st.State, st.Reason, clockTime(st.BeganAt))
	if st.EndedAt != nil && st.BeganAt != nil {
		line += fmt.Sprintf(", ended %s (after %v)", clockTime(st.EndedAt), st.EndedAt.Sub(*st.BeganAt).Round(time.Millisecond))
	}
	fmt.Fprintln(w, line)
	for _, g := range st.Groups {
		state := "waiting"
		switch {
		case g.EndedAt != nil && g.StartedAt != nil:
			state = fmt.Sprintf("started %s, ended %s", clockTime(g.StartedAt), clockTime(g.EndedAt))
		case g.StartedAt != nil:
			state = "started " + clockTime(g.StartedAt)
		}
		fmt.Fprintf(w, "  group priority %d, budget %s: %d pod(s), %s\n", g.Priority, g.Budget, len(g.Pods), state)
		for _, p := range g.Pods {
			deadline := ""
			if p.Deadline != nil {
				deadline = ", deadline " + clockTime(p.Deadline)
			}
			fmt.Fprintf(w, "    %s/%s: grace period %ds%s\n", p.Namespace, p.Name, p.GracePeriodSeconds, deadline)
		}
	}
	return nil
}

// clockTime is a time of day to the millisecond, local.
func clockTime(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("15:04:05.000")
}
