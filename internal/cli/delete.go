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
	force          bool
	wait           bool
	timeout        time.Duration
	ignoreNotFound bool
	files          []string
}

func newDeleteCommand(s Streams, api *apiOptions) *cobra.Command {
	o := deleteOptions{gracePeriod: -1, wait: true}
	cmd := &cobra.Command{
		Use:   "delete pod|configmap|secret NAME...",
		Short: "Delete pods gracefully (their defer containers run)",
		Long: `Delete asks for the graceful termination of each named pod: its defer
containers run, then its containers are stopped in order within the grace
period (the pod's terminationGracePeriodSeconds, or --grace-period). It prints
pod "NAME" deleted, then, with --wait (the default), waits until the pods are
gone.

As with kubectl, --grace-period 0 means 1 second unless --force is given.
--force (grace period 0) removes the pods from the agent's API at once, without
waiting for their containers to end: the agent still stops them, skipping the
defer containers, each with its stop signal and 2 s before SIGKILL.

delete configmap|cm|secret NAME... removes those objects at once; delete -f FILE
deletes the pods of the file, then its ConfigMaps and Secrets.`,
		Example: `  podward delete pod web
  podward delete pod/web --grace-period 5
  podward delete pod web --wait=false
  podward delete pod web --force
  podward delete cm settings
  podward delete -f app.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.resolveGrace(s); err != nil {
				return usageError(err)
			}
			return runDelete(cmd.Context(), s, api, o, args)
		},
	}
	f := cmd.Flags()
	f.Int64Var(&o.gracePeriod, "grace-period", -1, "seconds the pods get to terminate (-1: their own terminationGracePeriodSeconds; 0 means 1 without --force)")
	f.BoolVar(&o.now, "now", false, "same as --grace-period=1")
	f.BoolVar(&o.force, "force", false, "remove the pods from the agent's API at once (grace period 0); their containers are still stopped")
	f.BoolVar(&o.wait, "wait", true, "wait until the pods are gone")
	f.DurationVar(&o.timeout, "timeout", 0, "give up waiting after this long (0: no limit)")
	f.BoolVar(&o.ignoreNotFound, "ignore-not-found", false, "a pod that does not exist is not an error")
	f.StringSliceVarP(&o.files, "filename", "f", nil, "delete the pods, ConfigMaps and Secrets of this manifest (- for stdin); may be repeated")
	return cmd
}

func runDelete(ctx context.Context, s Streams, api *apiOptions, o deleteOptions, args []string) error {
	if len(o.files) > 0 {
		if len(args) > 0 {
			return usageError(errors.New("with -f, give no resource type or name: the file names what is deleted"))
		}
		return deleteFiles(ctx, s, api, o, o.files)
	}
	if kind, names, ok, err := parseObjectArgs(args); ok {
		if err != nil {
			return usageError(err)
		}
		return deleteObjects(ctx, s, api, o, kind, names)
	}
	names, err := parsePodArgs(args)
	if err != nil {
		return usageError(err)
	}
	if len(names) == 0 {
		return usageError(errors.New(`resource(s) were provided, but no name was specified`))
	}
	c := api.client()
	defer c.Close()

	d := &deletion{s: s, c: c, ns: api.namespace, o: o, opts: o.clientOptions()}
	defer d.closeWatches()
	for _, name := range names {
		if err := d.deletePod(ctx, name); err != nil {
			return err
		}
	}
	return d.finish(ctx)
}

// forceWarning is kubectl's warning for a forced delete.
const forceWarning = "Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely."

// resolveGrace applies kubectl's rules for the grace period (kubectl
// pkg/cmd/delete/delete.go, Complete and Validate): --now is 1 s and
// excludes --grace-period; --grace-period 0 is 1 s unless --force, which
// alone means 0; --force with a grace period greater than 0 is refused; a
// forced delete prints kubectl's warning on stderr.
func (o *deleteOptions) resolveGrace(s Streams) error {
	if o.now {
		if o.gracePeriod != -1 {
			return errors.New("--now and --grace-period cannot be specified together")
		}
		o.gracePeriod = 1
	}
	if o.gracePeriod == 0 && !o.force {
		// kubectl: "To preserve backwards compatibility, but prevent
		// accidental data loss".
		o.gracePeriod = 1
	}
	if o.force && o.gracePeriod < 0 {
		o.gracePeriod = 0
	}
	switch {
	case o.gracePeriod == 0 && o.force:
		fmt.Fprintln(s.Err, "Warning: "+forceWarning)
	case o.gracePeriod > 0 && o.force:
		return errors.New("--force and --grace-period greater than 0 cannot be specified together")
	}
	return nil
}

// clientOptions is the deletion's grace period, once resolveGrace has run.
func (o deleteOptions) clientOptions() client.DeleteOptions {
	opts := client.DeleteOptions{}
	if o.gracePeriod >= 0 {
		g := o.gracePeriod
		opts.GracePeriodSeconds = &g
	}
	return opts
}

// deletion is one delete command: the pods it deleted and waits for, and
// whether a pod could not be deleted.
type deletion struct {
	s      Streams
	c      *client.Client
	ns     string
	o      deleteOptions
	opts   client.DeleteOptions
	waits  []pendingDeletion
	failed bool
}

// pendingDeletion is a pod deleted, with the watch that sees it go.
type pendingDeletion struct {
	name  string
	uid   types.UID
	watch *client.Watch[v1.Pod]
}

// deletePod deletes one pod and, with --wait, keeps the watch of its name,
// opened first since the pod may be gone right after the delete. A pod
// that cannot be deleted is reported and the next one is deleted; the
// error, already reported, ends the command: no agent, or no watch.
func (d *deletion) deletePod(ctx context.Context, name string) error {
	var w *client.Watch[v1.Pod]
	if d.o.wait {
		var err error
		if w, err = d.c.WatchPods(ctx, d.ns, client.ListOptions{FieldSelector: "metadata.name=" + name}); err != nil {
			return report(d.s, err)
		}
	}
	pod, err := d.c.DeletePod(ctx, d.ns, name, d.opts)
	if err != nil {
		if w != nil {
			w.Close()
		}
		failed, fatal := deleteFailed(d.s, d.o, err)
		d.failed = d.failed || failed
		return fatal
	}
	if d.o.gracePeriod == 0 {
		fmt.Fprintf(d.s.Out, "pod %q force deleted\n", name)
	} else {
		fmt.Fprintf(d.s.Out, "pod %q deleted\n", name)
	}
	if w != nil {
		d.waits = append(d.waits, pendingDeletion{name: name, uid: pod.UID, watch: w})
	}
	return nil
}

// deleteFailed sorts the error of one delete: a NotFound with
// --ignore-not-found is no failure; a lost agent is reported and returned
// as fatal, to end the command; any other error is printed on stderr and
// is a failure (the next name is still deleted).
func deleteFailed(s Streams, o deleteOptions, err error) (failed bool, fatal error) {
	if o.ignoreNotFound && apierrors.IsNotFound(err) {
		return false, nil
	}
	var connErr *client.ConnError
	if errors.As(err, &connErr) {
		return true, report(s, err)
	}
	fmt.Fprintln(s.Err, errorText(err))
	return true, nil
}

// finish ends a delete command once every name is deleted: it waits for
// the pods deleted within --timeout, then fails (ExitFailed) if one of
// the deletes did.
func (d *deletion) finish(ctx context.Context) error {
	if d.o.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d.o.timeout)
		defer cancel()
	}
	if err := d.waitAll(ctx); err != nil {
		return err
	}
	if d.failed {
		return &ExitError{Code: ExitFailed}
	}
	return nil
}

// waitAll waits until every pod deleted is gone, or ctx ends (--timeout).
func (d *deletion) waitAll(ctx context.Context) error {
	for _, p := range d.waits {
		if err := waitGone(ctx, p.watch, p.uid); err != nil {
			if errors.Is(err, context.DeadlineExceeded) {
				fmt.Fprintf(d.s.Err, "error: timed out waiting for the condition on pods/%s\n", p.name)
				return &ExitError{Code: ExitFailed}
			}
			return report(d.s, err)
		}
	}
	return nil
}

// closeWatches closes the watches of the pods waited for.
func (d *deletion) closeWatches() {
	for _, p := range d.waits {
		p.watch.Close()
	}
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
