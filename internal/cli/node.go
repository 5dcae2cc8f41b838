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

func newNodeCommand(s Streams, api *apiOptions) *cobra.Command {
	var o daemon.ClusterOptions
	cmd := &cobra.Command{
		Use:   "node --kubeconfig FILE --runtime cri|process",
		Short: "Join a Kubernetes cluster as a node: run the pods its API server binds here",
		Long: `Node runs the agent as a node of a Kubernetes cluster: it registers its Node
(and keeps it Ready and its Lease renewed), runs the pods the API server binds to
it — with the same pod workers, ordering and defer containers as serve — and
writes their status and events back. A deleted pod's API object is removed as
soon as the pod is terminated (its defer containers done), not when its grace
period runs out.

The runtime is chosen, there is no default: --runtime cri runs containers
through a CRI runtime such as containerd; --runtime process runs them as host
processes, which are isolated less than containers, so the Node is then
tainted podward.io/runtime=process:NoSchedule and only the pods that tolerate
it are scheduled here (pods bound by spec.nodeName run whatever they tolerate).

State lives under --root; SIGTERM or Ctrl-C stops the agent, never the
containers. With --socket, the node serves its node shutdown there, for
'podward shutdown --socket' (its pods are the API server's to show), and /metrics.
The kubelet port serves /metrics to users allowed get on nodes/metrics.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// The node's pods are the API server's: its local socket, only
			// when --socket names one, serves its node shutdown alone.
			o.Socket = api.socket
			return runNode(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	addAgentFlags(f, &o.Options, daemon.DefaultClusterOptions(), "state directory (default "+daemon.RootNodeStateDir+")")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig with the node's credentials for the API server")
	f.StringVar(&o.NodeName, "node-name", "", "the Node's name (default: the host name)")
	f.StringVar(&o.NodeIP, "node-ip", "", "the node's address: its InternalIP, and the pods' hostIP and podIP (default: the address of the default route's interface)")
	f.Int32Var(&o.KubeletPort, "kubelet-port", daemon.DefaultKubeletPort, "port of the kubelet API (logs), reported in the Node's daemonEndpoints")
	f.StringVar(&o.ClientCAFile, "client-ca-file", "", "CA bundle of the client certificates the kubelet API accepts: the cluster CA that signed the API server's --kubelet-client-certificate")
	f.StringVar(&o.TLSCertFile, "tls-cert-file", "", "the kubelet API's serving certificate (default: a self-signed one kept under --root)")
	f.StringVar(&o.TLSPrivateKeyFile, "tls-private-key-file", "", "the key of --tls-cert-file")
	f.BoolVar(&o.AnonymousAuth, "anonymous-auth", false, "take clients of the kubelet API without credentials as system:anonymous, authorized like any user (with --authorization-mode=AlwaysAllow anyone who reaches the port reads every log: development only)")
	f.StringVar(&o.AuthorizationMode, "authorization-mode", "Webhook", "how the kubelet API authorizes requests: Webhook (ask the API server with a SubjectAccessReview, as the kubelet: a container's log needs get on nodes/proxy) or AlwaysAllow (every authenticated client reads every log)")
	f.DurationVar(&o.StreamingConnectionIdleTimeout, "streaming-connection-idle-timeout", daemon.DefaultStreamingConnectionIdleTimeout, "close an exec, attach or port-forward of the kubelet API none of whose streams carried data for so long, as the kubelet's flag")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

// runNode runs the cluster node until ctx ends, a signal comes or one of
// its parts fails; the containers are left running.
func runNode(ctx context.Context, s Streams, o daemon.ClusterOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	o.LogOutput = s.Err
	n, err := daemon.NewClusterNode(ctx, o)
	if err != nil {
		return daemonError(err)
	}
	defer n.Close()

	fmt.Fprintf(s.Err, "podward: node %s registered with %s (state in %s)\n", n.Name(), n.APIServer(), n.Root())
	err = n.Run(ctx)
	fmt.Fprintln(s.Err, "podward: node agent stopped; the containers keep running")
	if err != nil {
		return daemonError(err)
	}
	return nil
}
