package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

type logsOptions struct {
	container  string
	follow     bool
	previous   bool
	timestamps bool
	tail       int64
	limitBytes int64
}

func newLogsCommand(s Streams, api *apiOptions) *cobra.Command {
	o := logsOptions{tail: -1}
	cmd := &cobra.Command{
		Use:   "logs NAME [-c CONTAINER]",
		Short: "Print a container's log",
		Long: `Logs prints the log of a container of pod NAME: of its current instance, or of
the one before with --previous. -c names the container (regular, init or defer);
it may be left out when the pod has a single regular container. With -f the
command goes on printing what the container writes until that instance ends
(everything it wrote printed) or it is interrupted. --limit-bytes N stops after N
bytes, as kubectl logs does.`,
		Example: `  podward logs web
  podward logs web -c sidecar -f
  podward logs web -c upload --previous --timestamps`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLogs(cmd.Context(), s, api, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.container, "container", "c", "", "the container (init and defer containers included)")
	f.BoolVarP(&o.follow, "follow", "f", false, "go on printing until the container instance ends")
	f.BoolVarP(&o.previous, "previous", "p", false, "print the log of the previous instance of the container")
	f.BoolVar(&o.timestamps, "timestamps", false, "prefix each line with its RFC 3339 timestamp")
	f.Int64Var(&o.tail, "tail", -1, "only the last N lines of the log (-1: all)")
	f.Int64Var(&o.limitBytes, "limit-bytes", 0, "at most N bytes of the log (0: no limit), as kubectl logs --limit-bytes")
	return cmd
}

func runLogs(ctx context.Context, s Streams, api *apiOptions, o logsOptions, arg string) error {
	name, err := podName(arg)
	if err != nil {
		return usageError(err)
	}
	if o.limitBytes < 0 {
		// kubectl logs' message.
		return usageError(errors.New("--limit-bytes must be greater than 0"))
	}
	c := api.client()
	defer c.Close()
	if o.container == "" {
		pod, err := c.GetPod(ctx, api.namespace, name)
		if err != nil {
			return report(s, err)
		}
		if len(pod.Spec.Containers) != 1 {
			fmt.Fprintln(s.Err, "error:", chooseContainer(pod))
			return &ExitError{Code: ExitFailed}
		}
	}
	opts := v1.PodLogOptions{Container: o.container, Follow: o.follow, Previous: o.previous, Timestamps: o.timestamps}
	if o.tail >= 0 {
		opts.TailLines = &o.tail
	}
	if o.limitBytes > 0 {
		opts.LimitBytes = &o.limitBytes
	}
	rc, err := c.Logs(ctx, api.namespace, name, opts)
	if err != nil {
		return report(s, err)
	}
	defer rc.Close()
	if _, err := io.Copy(s.Out, rc); err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) {
			return nil
		}
		return report(s, err)
	}
	return nil
}

// chooseContainer is kubectl's message for a pod whose container must be
// named, extended with the defer containers.
func chooseContainer(pod *v1.Pod) string {
	names := func(cs []v1.Container) []string {
		out := make([]string, 0, len(cs))
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names(pod.Spec.Containers))
	if len(pod.Spec.InitContainers) > 0 {
		msg += fmt.Sprintf(" or one of the init containers: %v", names(pod.Spec.InitContainers))
	}
	if mp, err := model.FromV1(pod); err == nil && len(mp.Defer) > 0 {
		msg += fmt.Sprintf(" or one of the defer containers: %v", names(mp.Defer))
	}
	return msg
}
