package cli

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/client"
)

type deleteOptions struct {
	gracePeriod    int64
	now            bool
	wait           bool
	timeout        time.Duration
	ignoreNotFound bool
}

func newDeleteCommand(s Streams, api *apiOptions) *cobra.Command {
	o := deleteOptions{gracePeriod: -1, wait: true}
	cmd := &cobra.Command{
		Use:   "delete pod NAME...",
		Short: "Delete pods gracefully (their defer containers run)",
		Long: `Delete asks for the graceful termination of each named pod: its defer
containers run, then its containers are stopped in order within the grace
period (the pod's terminationGracePeriodSeconds, or --grace-period). It prints
pod "NAME" deleted, then, with --wait (the default), waits until the pods are
gone.`,
		Example: `  podward delete pod web
  podward delete pod/web --grace-period 5
  podward delete pod web --wait=false`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDelete(cmd.Context(), s, api, o, args)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.gracePeriod, "grace-period", -1, "seconds the pods get to terminate (-1: their own terminationGracePeriodSeconds)")
	f.BoolVar(&o.now, "now", false, "same as --grace-period=1")
	f.BoolVar(&o.wait, "wait", true, "wait until the pods are gone")
	f.DurationVar(&o.timeout, "timeout", 0, "give up waiting after this long (0: no limit)")
	f.BoolVar(&o.ignoreNotFound, "ignore-not-found", false, "a pod that does not exist is not an error")
	return cmd
}

func runDelete(ctx context.Context, s Streams, api *apiOptions, o deleteOptions, args []string) error {
	names, err := parsePodArgs(args)
	if err != nil {
		return usageError(err)
	}
	if len(names) == 0 {
		return usageError(errors.New(`resource(s) were provided, but no name was specified`))
	}
	opts := client.DeleteOptions{}
	switch {
	case o.now:
		one := int64(1)
		opts.GracePeriodSeconds = &one
	case o.gracePeriod >= 0:
		opts.GracePeriodSeconds = &o.gracePeriod
	}
	c := api.client()
	defer c.Close()

	type pending struct {
		name  string
		uid   types.UID
		watch *client.Watch[v1.Pod]
	}
	var waits []pending
	defer func() {
		for _, p := range waits {
			p.watch.Close()
		}
	}()
	code := ExitSucceeded
	for _, name := range names {
		var w *client.Watch[v1.Pod]
		if o.wait {
			// Watch first: the pod may be gone right after the delete.
			w, err = c.WatchPods(ctx, api.namespace, client.ListOptions{FieldSelector: "metadata.name=" + name})
			if err != nil {
				return report(s, err)
			}
		}
		pod, err := c.DeletePod(ctx, api.namespace, name, opts)
		if err != nil {
			if w != nil {
				w.Close()
			}
			if o.ignoreNotFound && apierrors.IsNotFound(err) {
				continue
			}
			var noAgent *client.NoAgentError
			if errors.As(err, &noAgent) {
				return report(s, err)
			}
			fmt.Fprintln(s.Err, errorText(err))
			code = ExitFailed
			continue
		}
		fmt.Fprintf(s.Out, "pod %q deleted\n", name)
		if w != nil {
			waits = append(waits, pending{name: name, uid: pod.UID, watch: w})
		}
	}

	if o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	for _, p := range waits {
		if err := waitGone(ctx, p.watch, p.uid); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintf(s.Err, "error: timed out waiting for the condition on pods/%s\n", p.name)
				return &ExitError{Code: ExitFailed}
			}
			return report(s, err)
		}
	}
	if code != ExitSucceeded {
		return &ExitError{Code: code}
	}
	return nil
}

// waitGone reads a watch of one pod name until the pod uid is gone: a
// DELETED event, or another pod of that name (the agent keeps one pod per
// name). The watch's ctx must end for it to give up.
func waitGone(ctx context.Context, w *client.Watch[v1.Pod], uid types.UID) error {
	stop := context.AfterFunc(ctx, func() { _ = w.Close() })
	defer stop()
	return watchUntil(ctx, w, func(ev client.Event[v1.Pod]) (bool, error) {
		if ev.Object.UID != uid {
			// Another pod of the name: ours is gone (the agent keeps
			// one pod per name), unless this is that other's deletion.
			return ev.Type != client.Deleted, nil
		}
		return ev.Type == client.Deleted, nil
	})
}
