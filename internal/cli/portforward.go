package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/portforward"
)

type portForwardOptions struct {
	addresses []string
}

func newPortForwardCommand(s Streams, api *apiOptions) *cobra.Command {
	o := portForwardOptions{}
	cmd := &cobra.Command{
		Use:   "port-forward POD [LOCAL_PORT:]REMOTE_PORT [...[LOCAL_PORT_N:]REMOTE_PORT_N]",
		Short: "Forward local ports to a pod",
		Long: `Port-forward listens on local ports and forwards each connection to a port of pod
POD's network, as kubectl port-forward does, until it is interrupted. A remote port
may be a container port's name; a local port left empty (:REMOTE) is chosen at
random; one left out is the remote port. On the process runtime the pod's network
is the host's: the connection is made to the host's loopback.`,
		Example: `  podward port-forward web 8080:80
  podward port-forward web :http 9090
  podward port-forward --address 0.0.0.0 web 8080:80`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) < 2 {
				return usageError(errors.New("TYPE/NAME and list of ports are required for port-forward"))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPortForward(cmd.Context(), s, api, o, args[0], args[1:])
		},
	}
	cmd.Flags().StringSliceVar(&o.addresses, "address", []string{"localhost"}, "addresses to listen on (comma separated); localhost means 127.0.0.1 and ::1")
	return cmd
}

func runPortForward(ctx context.Context, s Streams, api *apiOptions, o portForwardOptions, arg string, ports []string) error {
	c, pod, err := api.podOf(ctx, s, arg)
	if err != nil {
		return err
	}
	defer c.Close()
	name := pod.Name
	if pod.Status.Phase != v1.PodRunning {
		fmt.Fprintf(s.Err, "error: unable to forward port because pod is not running. Current status=%v\n", pod.Status.Phase)
		return &ExitError{Code: ExitFailed}
	}
	ports, err = namedPortsToNumbers(ports, pod)
	if err != nil {
		fmt.Fprintln(s.Err, "error:", err)
		return &ExitError{Code: ExitFailed}
	}
	dialer, err := c.PortForwardDialer(api.namespace, name)
	if err != nil {
		return report(s, err)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	fw, err := portforward.NewOnAddressesWithContext(ctx, dialer, o.addresses, ports, make(chan struct{}), s.Out, s.Err)
	if err != nil {
		fmt.Fprintln(s.Err, "error:", err)
		return &ExitError{Code: ExitBadInput}
	}
	if err := fw.ForwardPorts(); err != nil {
		return report(s, err)
	}
	return nil
}

// namedPortsToNumbers turns each remote port given by a container port's
// name into its number, as kubectl's convertPodNamedPortToNumber does.
func namedPortsToNumbers(ports []string, pod *v1.Pod) ([]string, error) {
	out := make([]string, 0, len(ports))
	for _, p := range ports {
		local, remote, ok := strings.Cut(p, ":")
		if !ok {
			remote = local
		}
		if remote == "" {
			return nil, errors.New("remote port cannot be empty")
		}
		number := remote
		if _, err := strconv.Atoi(remote); err != nil {
			n, err := containerPortByName(pod, remote)
			if err != nil {
				return nil, err
			}
			number = strconv.Itoa(int(n))
		}
		if local != remote {
			out = append(out, local+":"+number)
		} else {
			out = append(out, number)
		}
	}
	return out, nil
}

// containerPortByName finds a container port by its name, with kubectl's
// error when no container has it.
func containerPortByName(pod *v1.Pod, name string) (int32, error) {
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for _, c := range list {
			for _, p := range c.Ports {
				if p.Name == name {
					return p.ContainerPort, nil
				}
			}
		}
	}
	return 0, fmt.Errorf("Pod '%s' does not have a named port '%s'", pod.Name, name)
}
