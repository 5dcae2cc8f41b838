package daemon

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/apiserver"
	"github.com/podward/podward/internal/cluster"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/store"
	"github.com/podward/podward/internal/streaming"
)

// RootNodeStateDir is the cluster node's state directory by default.
const RootNodeStateDir = "/var/lib/podward-node"

// DefaultKubeletPort is the kubelet API's port by default, the kubelet's.
const DefaultKubeletPort = cluster.DefaultKubeletPort

// DefaultStreamingConnectionIdleTimeout is the kubelet's
// --streaming-connection-idle-timeout by default.
const DefaultStreamingConnectionIdleTimeout = streaming.DefaultIdleTimeout

// ClusterOptions configure `podward node`.
type ClusterOptions struct {
	Options
	// Kubeconfig has the node's credentials for the API server. Required.
	Kubeconfig string
	// NodeName is the Node's name; "" is the host name.
	NodeName string
	// NodeIP is the node's InternalIP, and the pods' hostIP and podIP;
	// "" is the address of the default route's interface.
	NodeIP string
	// KubeletPort is where the kubelet API (logs) listens, reported in the
	// Node's daemonEndpoints.
	KubeletPort int32
	// ClientCAFile is the CA bundle of the client certificates the kubelet
	// API accepts: the cluster CA that signed the API server's
	// --kubelet-client-certificate.
	ClientCAFile string
	// TLSCertFile and TLSPrivateKeyFile are the kubelet API's serving
	// certificate; by default a self-signed one is kept under the root.
	TLSCertFile       string
	TLSPrivateKeyFile string
	// AnonymousAuth takes clients of the kubelet API without credentials
	// as system:anonymous, authorized like any other user.
	AnonymousAuth bool
	// AuthorizationMode is how the kubelet API authorizes requests, by the
	// kubelet's names: "Webhook" (also ""), a SubjectAccessReview to the
	// API server for each, or "AlwaysAllow", every authenticated client
	// may read every log.
	AuthorizationMode string
	// StreamingConnectionIdleTimeout closes an exec, attach or
	// port-forward of the kubelet port none of whose streams carried data
	// for so long, the kubelet's --streaming-connection-idle-timeout; zero
	// is its default, streaming.DefaultIdleTimeout (4 h).
	StreamingConnectionIdleTimeout time.Duration
	// Socket, when set, is a unix socket on which the node serves its
	// node shutdown (`podward shutdown --socket`); its pods are the API
	// server's to serve. "": none.
	Socket string
}

// ErrNoRuntime refuses a cluster node whose runtime was not chosen: the
// process runtime isolates its pods less than containers do, so a cluster
// gets it only when asked for, and then knows it by its Node's taint.
var ErrNoRuntime = fmt.Errorf("the node's runtime must be chosen: --runtime cri (containers, through a CRI runtime such as containerd) "+
	"or --runtime process (host processes: weaker isolation than containers; the Node is tainted %s, so that only the pods that tolerate it are scheduled there)",
	processRuntimeTaint())

// processRuntimeTaint is cluster.ProcessRuntimeTaint as kubectl writes it.
func processRuntimeTaint() string {
	t := cluster.ProcessRuntimeTaint()
	return t.ToString()
}

// DefaultClusterOptions are DefaultOptions without a runtime, which a
// cluster node must be told (ErrNoRuntime), and with the pod network on:
// on the CRI runtime a pod without hostNetwork gets a network namespace
// and an IP of its own from the runtime's CNI, as on a kubelet's node.
func DefaultClusterOptions() Options {
	o := DefaultOptions()
	o.Runtime.Kind = ""
	o.Runtime.PodNetwork = true
	o.Runtime.ClusterDomain = DefaultClusterDomain
	return o
}

// warnHostNetworkOnly logs, for a cluster node on the CRI runtime without
// the pod network (--cri-pod-network=false), that its pods' specs are not
// honoured: the kubelet has no such mode, and a cluster's workloads expect
// IPs of their own.
func warnHostNetworkOnly(o RuntimeOptions, log *slog.Logger) {
	if o.Kind == RuntimeCRI && !o.PodNetwork {
		log.Warn("--cri-pod-network=false: every pod is put on the host's network, also those whose spec says hostNetwork: false, against the spec (a kubelet's node has no such mode); " +
			"their IP is the node's and a hostPort other than the containerPort is refused. Drop the flag once the CRI runtime has a CNI configuration")
	}
}

// check refuses options that cannot work: they match ErrBadOptions.
func (o *ClusterOptions) check() error {
	if o.Runtime.Kind == "" {
		return badOptions(fmt.Errorf("--runtime: %w", ErrNoRuntime))
	}
	return o.Options.check()
}

// runtimeTaints are the Node's own taints on runtime kind, and the ones it
// drops: ProcessRuntimeTaint on the process runtime, and dropped on any
// other (a node that ran processes and now runs containers).
func runtimeTaints(kind string) (own, dropped []v1.Taint) {
	if kind == RuntimeProcess {
		return []v1.Taint{cluster.ProcessRuntimeTaint()}, nil
	}
	return nil, []v1.Taint{cluster.ProcessRuntimeTaint()}
}

// ClusterNode is `podward node`: a durable agent that is a node of a
// Kubernetes cluster — its Node registered and kept Ready, the pods bound
// to it run, their logs served on the kubelet API.
type ClusterNode struct {
	name, root, host string
	store            *store.Store
	agent            *durable
	node             *cluster.Node
	pods             *cluster.Pods
	kubelet          *cluster.KubeletServer
	// objects are the ConfigMaps, Secrets and tokens the pods read, from
	// the API server (cluster_objects.go).
	objects *clusterObjects
	// poked is node once made, for the shutdown manager's changes.
	poked atomic.Pointer[cluster.Node]
	// ln is the local socket of the node shutdown (ClusterOptions.Socket),
	// nil without one; Run serves it.
	ln  net.Listener
	log *slog.Logger
}

// NewClusterNode connects to the API server of o.Kubeconfig, takes the
// state under o.Root (its store refuses a second agent), starts the agent
// recovered from it and registers the Node. Nothing is served until Run.
// The agent outlives ctx, whose values it keeps (Register is bounded by
// ctx): Run's end or Close stops it.
func NewClusterNode(ctx context.Context, o ClusterOptions) (*ClusterNode, error) {
	if err := o.check(); err != nil {
		return nil, err
	}
	log := o.logger()
	warnHostNetworkOnly(o.Runtime, log)
	client, host, err := o.connect()
	if err != nil {
		return nil, err
	}
	name, err := o.nodeName()
	if err != nil {
		return nil, err
	}
	addrs, nodeIP := o.addresses(name)
	root := o.Root
	if root == "" {
		root = RootNodeStateDir
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, badOptions(err)
	}

	n := &ClusterNode{name: name, root: root, host: host, log: log}
	started := false
	defer func() {
		if !started {
			n.Close()
		}
	}()
	if n.store, err = o.openStore(root); err != nil {
		return nil, err
	}
	if n.ln, err = listenLocal(o.Socket); err != nil {
		return nil, err
	}
	o.Runtime.sockets = []string{o.Socket}
	n.objects = newClusterObjects(ctx, client, clock.RealClock{}, log)
	o.Runtime.objects = n.objects.runtimeObjects()
	o.Runtime.nodeIP = nodeIP
	if n.agent, err = o.startDurable(ctx, root, n.store, log, agent.Config{NodeName: name, NodeIP: nodeIP, Objects: o.Runtime.objects}, n.pokeNode); err != nil {
		return nil, err
	}
	n.objects.connect(n.agent.Agent)
	info, ok := n.agent.rt.(runtime.Info)
	if !ok {
		return nil, internal(fmt.Errorf("runtime %s cannot report its status", o.Runtime.Kind))
	}
	own, dropped := runtimeTaints(o.Runtime.Kind)
	n.node, err = cluster.NewNode(cluster.NodeConfig{
		Client: client, NodeName: name, Logger: log, Runtime: info, StateError: n.agent.StateError,
		KubeletPort: o.KubeletPort, Addresses: addrs, RootDir: root, Machine: n.agent.machine, MaxPods: int64(o.MaxPods),
		ShutdownStatus: n.agent.shutdown.ShutdownStatus, OwnTaints: own, DroppedTaints: dropped,
	})
	if err != nil {
		return nil, badOptions(err)
	}
	n.poked.Store(n.node)
	if err := n.node.Register(ctx); err != nil {
		return nil, fmt.Errorf("register node %s: %w", name, err)
	}
	n.pods = cluster.NewPods(cluster.PodsConfig{Client: client, NodeName: name, Agent: n.agent.Agent, Logger: log})
	if n.kubelet, err = o.kubeletServer(log, n.agent.Agent, o.streams(n.agent, log), n.agent.metrics.Handler(), client, name, addrs, root); err != nil {
		return nil, err
	}
	started = true
	return n, nil
}

// streams is the kubelet port's streaming server of a's pods, with the
// node's idle timeout.
func (o *ClusterOptions) streams(a *durable, log *slog.Logger) *streaming.Server {
	return streaming.New(a.Agent, a.rt, log).WithTimeouts(streaming.Timeouts{Idle: o.StreamingConnectionIdleTimeout})
}

// listenLocal listens on the node's local socket, for its node shutdown;
// none (nil) without one.
func listenLocal(socket string) (net.Listener, error) {
	if socket == "" {
		return nil, nil
	}
	return apiserver.Listen(socket)
}

// pokeNode is the shutdown manager's OnChange: the Node, once made, posts
// its readiness at once.
func (n *ClusterNode) pokeNode() {
	if nd := n.poked.Load(); nd != nil {
		nd.Poke()
	}
}

// kubeletServer is the kubelet API of node name, serving logs and the
// pods' streams. The API
// server authenticates its bearer tokens and authorizes its requests (in
// Webhook mode). Its audit lines (one per request) are logged whatever
// Verbose says.
func (o *ClusterOptions) kubeletServer(log *slog.Logger, logs cluster.LogSource, streams cluster.Streams, metrics http.Handler, client kubernetes.Interface, name string, addrs []v1.NodeAddress, root string) (*cluster.KubeletServer, error) {
	mode := cluster.AuthorizationWebhook
	if o.AuthorizationMode != "" {
		var err error
		if mode, err = cluster.ParseAuthorizationMode(o.AuthorizationMode); err != nil {
			return nil, badOptions(fmt.Errorf("--authorization-mode: %w", err))
		}
	}
	s, err := cluster.NewKubeletServer(cluster.KubeletServerConfig{
		Logs: logs, Streams: streams, Metrics: metrics, Stats: statsOf(logs), Port: o.KubeletPort, NodeName: name, Addresses: addrs,
		TLSCertFile: o.TLSCertFile, TLSPrivateKeyFile: o.TLSPrivateKeyFile, CertDir: filepath.Join(root, "pki"),
		ClientCAFile: o.ClientCAFile, AllowAnonymous: o.AnonymousAuth,
		TokenReviews:  client.AuthenticationV1().TokenReviews(),
		Authorization: mode, SubjectAccessReviews: client.AuthorizationV1().SubjectAccessReviews(),
		Logger: log, AuditLogger: o.auditLogger(),
	})
	if err != nil {
		return nil, badOptions(err)
	}
	return s, nil
}

// statsOf is the usage source of the kubelet server: the agent's, nil
// for a log source without one.
func statsOf(logs cluster.LogSource) cluster.StatsSource {
	st, _ := logs.(cluster.StatsSource)
	return st
}

// auditLogger logs at level Info, to the daemon's log output.
func (o *ClusterOptions) auditLogger() *slog.Logger {
	w := o.LogOutput
	if w == nil {
		w = os.Stderr
	}
	return slog.New(slog.NewTextHandler(w, nil))
}

// connect builds the API server's client from the kubeconfig; host is the
// server's address.
func (o *ClusterOptions) connect() (client kubernetes.Interface, host string, err error) {
	restCfg, err := o.restConfig()
	if err != nil {
		return nil, "", err
	}
	c, err := kubernetes.NewForConfig(restCfg)
	if err != nil {
		return nil, "", badOptions(err)
	}
	return c, restCfg.Host, nil
}

// Client rate limits of the node's API client: the kubelet's defaults
// (--kube-api-qps 50, --kube-api-burst 100, pkg/kubelet/apis/config/v1beta1
// defaults). client-go's own (5 and 10) throttle a node, which watches each
// ConfigMap and Secret its pods reference as an object of its own and
// writes every pod's status: a few pods starting at once would wait on the
// limiter for seconds.
const (
	kubeAPIQPS   = 50
	kubeAPIBurst = 100
)

// restConfig is the API server's client configuration from the
// kubeconfig, with the node's user agent and rate limits.
func (o *ClusterOptions) restConfig() (*rest.Config, error) {
	restCfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, badOptions(fmt.Errorf("--kubeconfig: %w", err))
	}
	restCfg.UserAgent = "podward/" + cluster.KubeletVersion
	restCfg.QPS, restCfg.Burst = kubeAPIQPS, kubeAPIBurst
	return restCfg, nil
}

// nodeName is NodeName, or the host name.
func (o *ClusterOptions) nodeName() (string, error) {
	if o.NodeName != "" {
		return o.NodeName, nil
	}
	name, err := os.Hostname()
	if err != nil {
		return "", badOptions(fmt.Errorf("--node-name: %w", err))
	}
	return name, nil
}

// addresses are the Node's addresses — NodeIP and the name, or the
// machine's own — and the InternalIP among them.
func (o *ClusterOptions) addresses(name string) (addrs []v1.NodeAddress, internalIP string) {
	addrs = cluster.DefaultAddresses()
	if o.NodeIP != "" {
		addrs = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: o.NodeIP}, {Type: v1.NodeHostName, Address: name}}
	}
	for _, a := range addrs {
		if a.Type == v1.NodeInternalIP {
			return addrs, a.Address
		}
	}
	return addrs, ""
}

// Name is the Node's name.
func (n *ClusterNode) Name() string { return n.name }

// APIServer is the address of the API server the node registered with.
func (n *ClusterNode) APIServer() string { return n.host }

// Root is the absolute state directory.
func (n *ClusterNode) Root() string { return n.root }

// Run keeps the Node Ready and its Lease renewed, runs the pods bound to
// it and serves the kubelet API until ctx ends or one of them fails, which
// ends the others; then it stops the agent, never its containers. Its
// error is the first failure.
func (n *ClusterNode) Run(ctx context.Context) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	releaseStartupMemory()
	runs := []func(context.Context) error{n.node.Run, n.pods.Run, n.kubelet.ListenAndServe}
	if ln := n.ln; ln != nil {
		n.ln = nil // Serve closes it
		runs = append(runs, func(ctx context.Context) error {
			return n.agent.serveDebug(apiserver.NewShutdownOnly(n.agent.shutdown, n.log)).Serve(ctx, ln)
		})
	}
	for _, run := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := run(ctx); err != nil && ctx.Err() == nil {
				errs <- err
				stop()
			}
		}()
	}
	wg.Wait()
	n.agent.close()
	n.objects.close()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

// Close stops the agent and closes the store (and the local socket, when
// Run has not served it). It is idempotent.
func (n *ClusterNode) Close() {
	if n.ln != nil {
		_ = n.ln.Close()
		n.ln = nil
	}
	if n.agent != nil {
		n.agent.close()
	}
	if n.objects != nil {
		n.objects.close()
	}
	if n.store != nil {
		_ = n.store.Close()
		n.store = nil
	}
}
