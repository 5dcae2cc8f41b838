package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/podward/podward/internal/client"
)

type debugOptions struct {
	image, target, container string
	pullPolicy               string
	env                      []string
	argsOnly                 bool
	stdin, tty, quiet        bool
	// suffix names a debug container that -c does not name
	// (utilrand.String in kubectl); tests fix it.
	suffix func(int) string
}

func newDebugCommand(s Streams, api *apiOptions) *cobra.Command {
	o := debugOptions{suffix: utilrand.String}
	cmd := &cobra.Command{
		Use:   "debug POD --image=IMAGE [--target=CONTAINER] [-c NAME] [-- COMMAND [args...]]",
		Short: "Add an ephemeral container to a running pod",
		Long: `Debug adds an ephemeral container to the running pod POD, as kubectl debug does:
through the pod's ephemeralcontainers subresource. The container runs COMMAND
(its image's entrypoint without one; with --arguments-only, the arguments) once:
it is never restarted, and it is stopped with the pod's regular containers.
Its status is the pod's status.ephemeralContainerStatuses (podward get pod POD
-o yaml). The command returns once the container is added; -c names it, else
it is debugger-xxxxx.

--target names a container of the pod whose namespaces the debug container
shares: on the process runtime its running instance's mount and UTS
namespaces, as an exec in it has (its volumes, what it mounted itself, the
host name it set); on a CRI runtime its process namespace, as the kubelet
asks for it. The target must be running.

-i gives the debug container a stdin and attaches to it once it runs, -t a
terminal as well, as kubectl debug -it does (see podward attach).`,
		Example: `  podward debug web --image=busybox --target=app -- sleep 300
  podward debug web --image=busybox -c probe -- cat /data/state`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var command []string
			if n := cmd.ArgsLenAtDash(); n >= 0 {
				if n != 1 {
					return usageError(errors.New("exactly one pod is debugged: podward debug POD --image=IMAGE [-- COMMAND [args...]]"))
				}
				command = args[1:]
			} else if len(args) != 1 {
				return usageError(errors.New("a command goes after --: podward debug POD --image=IMAGE -- COMMAND [args...]"))
			}
			if err := o.validate(); err != nil {
				return report(s, err)
			}
			return runDebug(cmd.Context(), s, api, o, args[0], command)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.image, "image", "", "the debug container's image")
	f.StringVar(&o.target, "target", "", "the container of the pod whose namespaces the debug container shares")
	f.StringVarP(&o.container, "container", "c", "", "the debug container's name (default debugger-xxxxx)")
	f.StringVar(&o.pullPolicy, "image-pull-policy", "", "the debug container's imagePullPolicy (Always, IfNotPresent, Never)")
	f.StringArrayVar(&o.env, "env", nil, "an environment variable of the debug container, KEY=VALUE (repeatable)")
	f.BoolVar(&o.argsOnly, "arguments-only", false, "what follows -- is the container's args, not its command")
	f.BoolVarP(&o.stdin, "stdin", "i", false, "keep stdin open on the container and attach to it")
	f.BoolVarP(&o.tty, "tty", "t", false, "allocate a TTY for the debug container")
	f.BoolVarP(&o.quiet, "quiet", "q", false, "print nothing but errors")
	return cmd
}

// validate applies kubectl debug's own checks, with its messages.
func (o *debugOptions) validate() error {
	switch {
	case o.image == "":
		return errors.New("you must specify --image when not using --copy-to.")
	case o.tty && !o.stdin:
		return errors.New("-i/--stdin is required for containers with -t/--tty=true")
	}
	switch v1.PullPolicy(o.pullPolicy) {
	case "", v1.PullAlways, v1.PullIfNotPresent, v1.PullNever:
	default:
		return fmt.Errorf("invalid image pull policy: %s", o.pullPolicy)
	}
	for _, kv := range o.env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("invalid env: %s", kv)
		}
	}
	return nil
}

func runDebug(ctx context.Context, s Streams, api *apiOptions, o debugOptions, arg string, command []string) error {
	c, pod, err := api.podOf(ctx, s, arg)
	if err != nil {
		return err
	}
	defer c.Close()
	name := pod.Name
	// kubectl debug's notes, on stdout as it prints them.
	if o.target != "" && !o.quiet {
		fmt.Fprintf(s.Out, "Targeting container %q. If you don't see processes from this container it may be because the container runtime doesn't support this feature.\n", o.target)
	}
	ec := o.ephemeral(pod, command)
	if o.container == "" && !o.quiet {
		fmt.Fprintf(s.Out, "Defaulting debug container name to %s.\n", ec.Name)
	}
	if _, err := c.AddEphemeralContainer(ctx, api.namespace, name, ec); err != nil {
		return report(s, err)
	}
	if !o.stdin {
		return nil
	}
	// As kubectl debug -i: wait for the container to run, then attach.
	pod, err = waitEphemeralRunning(ctx, c, api.namespace, name, ec.Name)
	if err != nil {
		return report(s, err)
	}
	return attachTo(ctx, s, api, c, execOptions{container: ec.Name, stdin: true, tty: o.tty, quiet: o.quiet}, pod, (*v1.Container)(&ec.EphemeralContainerCommon))
}

// debugRunningTimeout is how long podward debug -i waits for its container
// to run, as kubectl's --pod-running-timeout default.
const debugRunningTimeout = time.Minute

// waitEphemeralRunning polls pod ns/name until its ephemeral container
// runs; one that terminated first is an error.
func waitEphemeralRunning(ctx context.Context, c *client.Client, ns, name, container string) (*v1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, debugRunningTimeout)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		pod, err := c.GetPod(ctx, ns, name)
		if err != nil {
			return nil, err
		}
		for _, cs := range pod.Status.EphemeralContainerStatuses {
			switch {
			case cs.Name != container:
			case cs.State.Running != nil:
				return pod, nil
			case cs.State.Terminated != nil:
				return nil, fmt.Errorf("the debug container %s terminated before it could be attached to (%s)", container, cs.State.Terminated.Reason)
			}
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("timed out waiting for the debug container %s to run: %w", container, ctx.Err())
		case <-tick.C:
		}
	}
}

// ephemeral is the container the options ask for: named by -c,
// else debugger-xxxxx with a suffix no container of pod has (kubectl's
// computeDebugContainerName).
func (o *debugOptions) ephemeral(pod *v1.Pod, command []string) v1.EphemeralContainer {
	ec := v1.EphemeralContainer{
		EphemeralContainerCommon: v1.EphemeralContainerCommon{
			Name:                     o.container,
			Image:                    o.image,
			ImagePullPolicy:          v1.PullPolicy(o.pullPolicy),
			TerminationMessagePolicy: v1.TerminationMessageReadFile,
		},
		TargetContainerName: o.target,
	}
	ec.Stdin, ec.TTY = o.stdin, o.tty
	if o.argsOnly {
		ec.Args = command
	} else {
		ec.Command = command
	}
	for _, kv := range o.env {
		k, v, _ := strings.Cut(kv, "=")
		ec.Env = append(ec.Env, v1.EnvVar{Name: k, Value: v})
	}
	taken := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		taken[c.Name] = true
	}
	for _, c := range pod.Spec.Containers {
		taken[c.Name] = true
	}
	for _, c := range pod.Spec.EphemeralContainers {
		taken[c.Name] = true
	}
	for ec.Name == "" || (o.container == "" && taken[ec.Name]) {
		ec.Name = "debugger-" + o.suffix(5)
	}
	return ec
}
