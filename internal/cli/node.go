package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/cluster"
	"github.com/podward/podward/internal/runtime"
)

// RootNodeStateDir is node's state directory when it runs as root.
const RootNodeStateDir = "/var/lib/podward-node"

type nodeOptions struct {
	agentOptions
	kubeconfig  string
	nodeName    string
	nodeIP      string
	kubeletPort int32
	clientCA    string
	tlsCert     string
	tlsKey      string
	anonymous   bool
}

func newNodeCommand(s Streams) *cobra.Command {
	var o nodeOptions
	cmd := &cobra.Command{
		Use:   "node --kubeconfig FILE",
		Short: "Join a Kubernetes cluster as a node: run the pods its API server binds here",
		Long: `Node runs the agent as a node of a Kubernetes cluster: it registers its Node
(and keeps it Ready and its Lease renewed), runs the pods the API server binds to
it — with the same pod workers, ordering and defer containers as serve — and
writes their status and events back. A deleted pod's API object is removed as
soon as the pod is terminated (its defer containers done), not when its grace
period runs out.

State lives under --root; SIGTERM or Ctrl-C stops the agent, never the
containers.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runNode(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	o.addFlags(f, "state directory (default "+RootNodeStateDir+")")
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig with the node's credentials for the API server")
	f.StringVar(&o.nodeName, "node-name", "", "the Node's name (default: the host name)")
	f.StringVar(&o.nodeIP, "node-ip", "", "the node's address: its InternalIP, and the pods' hostIP and podIP (default: the address of the default route's interface)")
	f.Int32Var(&o.kubeletPort, "kubelet-port", cluster.DefaultKubeletPort, "port of the kubelet API (logs), reported in the Node's daemonEndpoints")
	f.StringVar(&o.clientCA, "client-ca-file", "", "CA bundle of the client certificates the kubelet API accepts: the cluster CA that signed the API server's --kubelet-client-certificate")
	f.StringVar(&o.tlsCert, "tls-cert-file", "", "the kubelet API's serving certificate (default: a self-signed one kept under --root)")
	f.StringVar(&o.tlsKey, "tls-private-key-file", "", "the key of --tls-cert-file")
	f.BoolVar(&o.anonymous, "anonymous-auth", false, "serve the kubelet API to clients without a certificate (development only: anyone who reaches the port reads every log)")
	_ = cmd.MarkFlagRequired("kubeconfig")
	return cmd
}

func runNode(ctx context.Context, s Streams, o nodeOptions) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := newLogger(s.Err, o.verbose)

	restCfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return &ExitError{Code: ExitBadInput, Err: fmt.Errorf("--kubeconfig: %w", err)}
	}
	restCfg.UserAgent = "podward/" + cluster.KubeletVersion
	client, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return &ExitError{Code: ExitBadInput, Err: err}
	}
	name := o.nodeName
	if name == "" {
		if name, err = os.Hostname(); err != nil {
			return &ExitError{Code: ExitBadInput, Err: fmt.Errorf("--node-name: %w", err)}
		}
	}
	addrs := cluster.DefaultAddresses()
	if o.nodeIP != "" {
		addrs = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: o.nodeIP}, {Type: v1.NodeHostName, Address: name}}
	}
	nodeIP := ""
	for _, a := range addrs {
		if a.Type == v1.NodeInternalIP {
			nodeIP = a.Address
			break
		}
	}
	root := o.root
	if root == "" {
		root = RootNodeStateDir
	}
	if root, err = filepath.Abs(root); err != nil {
		return &ExitError{Code: ExitBadInput, Err: err}
	}

	st, err := o.openStore(root)
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	defer st.Close()
	a, err := o.startAgent(ctx, root, st, log, agent.Config{NodeName: name, NodeIP: nodeIP})
	if err != nil {
		return &ExitError{Code: ExitFailed, Err: err}
	}
	defer a.close()
	info, ok := a.rt.(runtime.Info)
	if !ok {
		return &ExitError{Code: ExitInternal, Err: fmt.Errorf("runtime %s cannot report its status", o.runtime.kind)}
	}
	node, err := cluster.NewNode(cluster.NodeConfig{
		Client: client, NodeName: name, Logger: log, Runtime: info,
		KubeletPort: o.kubeletPort, Addresses: addrs, RootDir: root,
	})
	if err != nil {
		return &ExitError{Code: ExitBadInput, Err: err}
	}
	if err := node.Register(ctx); err != nil {
		return &ExitError{Code: ExitFailed, Err: fmt.Errorf("register node %s: %w", name, err)}
	}
	pods := cluster.NewPods(cluster.PodsConfig{Client: client, NodeName: name, Agent: a.Agent, Logger: log})
	kubelet, err := cluster.NewKubeletServer(cluster.KubeletServerConfig{
		Logs: a.Agent, Port: o.kubeletPort, NodeName: name, Addresses: addrs,
		TLSCertFile: o.tlsCert, TLSPrivateKeyFile: o.tlsKey, CertDir: filepath.Join(root, "pki"),
		ClientCAFile: o.clientCA, AllowAnonymous: o.anonymous, Logger: log,
	})
	if err != nil {
		return &ExitError{Code: ExitBadInput, Err: err}
	}

	var wg sync.WaitGroup
	errs := make(chan error, 3)
	for _, run := range []func(context.Context) error{node.Run, pods.Run, kubelet.ListenAndServe} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil && ctx.Err() == nil {
				errs <- err
				stop()
			}
		}()
	}
	fmt.Fprintf(s.Err, "podward: node %s registered with %s (state in %s)\n", name, restCfg.Host, root)
	wg.Wait()
	a.close()
	fmt.Fprintln(s.Err, "podward: node agent stopped; the containers keep running")
	select {
	case err := <-errs:
		return &ExitError{Code: ExitFailed, Err: err}
	default:
		return nil
	}
}
