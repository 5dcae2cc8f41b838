package cli

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"
)

func newAttachCommand(s Streams, api *apiOptions) *cobra.Command {
	var o execOptions
	cmd := &cobra.Command{
		Use:   "attach POD [-c CONTAINER] [-i] [-t] [-q]",
		Short: "Attach to a running container",
		Long: `Attach connects to the main process of a running container of pod POD, as
kubectl attach does: its output is printed here and, with -i (for a container
with stdin: true), this command's stdin goes to it. With -t as well, a terminal
as stdin and a container with tty: true, the container's terminal is used in raw
mode here, size changes passed on. Leaving (end of stdin, Ctrl-C without -t, or
the terminal closed) never stops the container; with stdinOnce: true its stdin
is closed when the first attach's ends.

Without -c the container is the one the pod's kubectl.kubernetes.io/default-container
annotation names, else the first regular container.`,
		Example: `  podward attach web
  podward attach -it web -c shell`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAttach(cmd.Context(), s, api, o, args[0])
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.container, "container", "c", "", "the container; defaults to the pod's default container")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "pass stdin to the container")
	f.BoolVarP(&o.tty, "tty", "t", false, "stdin is a TTY")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "only print output from the remote session")
	return cmd
}

func runAttach(ctx context.Context, s Streams, api *apiOptions, o execOptions, arg string) error {
	c, pod, err := api.podOf(ctx, s, arg)
	if err != nil {
		return err
	}
	defer c.Close()
	if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		fmt.Fprintf(s.Err, "error: cannot attach a container in a completed pod; current phase is %s\n", pod.Status.Phase)
		return &ExitError{Code: ExitFailed}
	}
	container, err := attachContainer(pod, o.container, o.quiet, s.Err)
	if err != nil {
		fmt.Fprintln(s.Err, "error:", err)
		return &ExitError{Code: ExitFailed}
	}
	return attachTo(ctx, s, api, c, o, pod, container)
}

// attachTo attaches to container of pod, as kubectl attach's Run does once
// it found the container: -t is dropped for a container without a tty
// (with its message) and forced for one with a tty, the terminal's size is
// sent one larger first so that a re-attached screen is redrawn, and the
// prompt hint and the reattach message are kubectl's.
func attachTo(ctx context.Context, s Streams, api *apiOptions, c apiClient, o execOptions, pod *v1.Pod, container *v1.Container) error {
	switch {
	case o.tty && !container.TTY:
		o.tty = false
		if !o.quiet {
			fmt.Fprintf(s.Err, "error: Unable to use a TTY - container %s did not allocate one\n", container.Name)
		}
	case !o.tty && container.TTY:
		o.tty = true
	}
	t := setupTTY(s, o)
	streams, done, err := t.streams(s, o.stdin, true)
	if err != nil {
		return report(s, err)
	}
	defer done()
	if !o.quiet {
		fmt.Fprintln(s.Err, "If you don't see a command prompt, try pressing enter.")
	}
	opts := v1.PodAttachOptions{Container: container.Name, Stdin: o.stdin, Stdout: true, Stderr: !t.raw, TTY: t.raw}
	if err := c.Attach(ctx, api.namespace, pod.Name, opts, streams); err != nil {
		return report(s, err)
	}
	if msg := reattachMessage(pod, container.Name, o, t.raw); msg != "" {
		fmt.Fprintln(s.Out, msg)
	}
	return nil
}

// apiClient is what attachTo needs of the agent's client.
type apiClient interface {
	Attach(ctx context.Context, ns, name string, opts v1.PodAttachOptions, streams remotecommand.StreamOptions) error
}

// reattachMessage is kubectl attach's, printed when an interactive session
// on a pod that restarts its containers ended.
func reattachMessage(pod *v1.Pod, container string, o execOptions, raw bool) string {
	if o.quiet || !o.stdin || !raw || pod.Spec.RestartPolicy != v1.RestartPolicyAlways {
		return ""
	}
	for _, ec := range pod.Spec.EphemeralContainers {
		if ec.Name == container {
			return fmt.Sprintf("Session ended, the ephemeral container will not be restarted but may be reattached using 'podward attach %s -c %s -i -t' if it is still running", pod.Name, container)
		}
	}
	return fmt.Sprintf("Session ended, resume using 'podward attach %s -c %s -i -t' command when the pod is running", pod.Name, container)
}

// attachContainer is the container an attach is for, as kubectl attach
// finds it (podcmd.FindOrDefaultContainerByName): any container of the
// pod, ephemeral ones included, named by -c, else the default one.
func attachContainer(pod *v1.Pod, name string, quiet bool, warn io.Writer) (*v1.Container, error) {
	if name == "" {
		var err error
		if name, err = pickContainer(pod, "", nil, quiet, warn); err != nil {
			return nil, err
		}
	}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			if list[i].Name == name {
				return &list[i], nil
			}
		}
	}
	for i := range pod.Spec.EphemeralContainers {
		if ec := &pod.Spec.EphemeralContainers[i]; ec.Name == name {
			return (*v1.Container)(&ec.EphemeralContainerCommon), nil
		}
	}
	return nil, fmt.Errorf("container %s not found in pod %s", name, pod.Name)
}

// firstSize is a TerminalSizeQueue that sends size, then rest's.
type firstSize struct {
	size remotecommand.TerminalSize
	sent bool
	rest remotecommand.TerminalSizeQueue
}

func (q *firstSize) Next() *remotecommand.TerminalSize {
	if !q.sent {
		q.sent = true
		return &q.size
	}
	return q.rest.Next()
}
