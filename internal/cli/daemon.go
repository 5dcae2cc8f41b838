package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podward/podward/internal/daemon"
)

// addDaemonFlags registers into o the flags of every command that runs an
// agent — run, serve and node: --root (its help is the command's), the
// planner's timings, --verbose and the runtime's. They are set up here
// only; their defaults are def's (daemon.DefaultOptions, or
// daemon.DefaultClusterOptions for node, which has no default runtime).
func addDaemonFlags(f *pflag.FlagSet, o *daemon.Options, def daemon.Options, rootHelp string) {
	f.StringVar(&o.Root, "root", "", rootHelp)
	f.DurationVar(&o.BackoffBase, "backoff-base", def.BackoffBase, "crash-loop backoff after the second quick exit (doubles up to 5m)")
	f.DurationVar(&o.PromptKill, "prompt-kill", def.PromptKill, "once defer containers completed, SIGKILL this long after the stop signal")
	f.IntVar(&o.MaxPods, "max-pods", def.MaxPods, "most pods run at once, as the kubelet's --max-pods: a pod beyond it is rejected (Failed, reason OutOfpods)")
	f.StringSliceVar(&o.AllowedUnsafeSysctls, "allowed-unsafe-sysctls", nil, "comma-separated sysctls, or patterns ending in *, that pods may set beyond the safe ones, as the kubelet's flag (e.g. 'kernel.msg*,net.ipv4.route.min_pmtu'); a pod that sets another is rejected (Failed, reason SysctlForbidden)")
	f.BoolVarP(&o.Verbose, "verbose", "v", false, "log the agent's decisions to stderr")
	o.ContainerLogMaxSize, o.ContainerLogMaxFiles = def.ContainerLogMaxSize, def.ContainerLogMaxFiles
	f.Var(&quantityFlag{&o.ContainerLogMaxSize}, "container-log-max-size", "rotate a container's log once it is this big (a quantity: 10Mi, 500Ki; 0: never), as the kubelet's flag")
	f.IntVar(&o.ContainerLogMaxFiles, "container-log-max-files", def.ContainerLogMaxFiles, "files kept of a container's log, the one being written included (at least 2), as the kubelet's flag")
	addRuntimeFlags(f, &o.Runtime, def.Runtime)
}

// quantityFlag is a size given as a Kubernetes quantity (10Mi, 1G, 4096),
// as the kubelet's --container-log-max-size takes it.
type quantityFlag struct{ v *int64 }

func (q *quantityFlag) String() string {
	if q.v == nil {
		return ""
	}
	return resource.NewQuantity(*q.v, resource.BinarySI).String()
}

func (q *quantityFlag) Set(s string) error {
	qty, err := resource.ParseQuantity(s)
	if err != nil {
		return err
	}
	n, ok := qty.AsInt64()
	if !ok || n < 0 {
		return fmt.Errorf("%q is not a size in bytes", s)
	}
	*q.v = n
	return nil
}

func (q *quantityFlag) Type() string { return "quantity" }

// addAgentFlags are addDaemonFlags and the bounds of what the long-running
// agents (serve and node) keep: events, and the logs of removed pods.
func addAgentFlags(f *pflag.FlagSet, o *daemon.Options, def daemon.Options, rootHelp string) {
	addDaemonFlags(f, o, def, rootHelp)
	f.IntVar(&o.EventsPerPod, "events-per-pod", def.EventsPerPod, "events kept per pod (the newest)")
	f.IntVar(&o.MaxEvents, "max-events", def.MaxEvents, "events kept in all (the newest, whichever pod they are of)")
	f.DurationVar(&o.KeepTerminatedPodLogs, "keep-terminated-pod-logs", def.KeepTerminatedPodLogs, "how long the logs of a removed pod are kept on disk (0: removed with the pod; negative: for good)")
	f.StringVar(&o.MetricsBindAddress, "metrics-bind-address", "", "also serve /metrics (Prometheus) on this TCP address, host:port, without authentication (default: only on the socket, and the kubelet port in cluster mode)")
	f.BoolVar(&o.Profiling, "pprof", false, "serve Go's net/http/pprof profiles under /debug/pprof/ on the socket (and on --metrics-bind-address, which must then be loopback)")
	addShutdownFlags(f, &o.Shutdown)
}

// addShutdownFlags registers the kubelet's graceful node shutdown flags.
func addShutdownFlags(f *pflag.FlagSet, o *daemon.ShutdownOptions) {
	f.DurationVar(&o.GracePeriod, "shutdown-grace-period", 0, "node shutdown: how long the node's pods get in all, whole seconds (0: no graceful shutdown unless podward shutdown --grace-period asks for one)")
	f.DurationVar(&o.CriticalPods, "shutdown-grace-period-critical-pods", 0, "node shutdown: the part of --shutdown-grace-period kept for the critical pods (priority classes system-cluster-critical, system-node-critical), which end last")
	f.StringVar(&o.ByPodPriority, "shutdown-grace-period-by-pod-priority", "", "node shutdown by priority groups instead: priority=seconds,... (e.g. 0=20,100000=10,2000000000=10); a pod is in the group of the highest priority not above its own")
}

// Help of --runtime: with process as its default (run, serve), and
// without a default (node, whose runtime is chosen).
const (
	runtimeHelp       = "container runtime: process (host processes, nothing to install) or cri (containers through a CRI runtime such as containerd)"
	chosenRuntimeHelp = "container runtime, required: cri (containers through a CRI runtime such as containerd) or process (host processes, nothing to install, weaker isolation than containers: the Node is tainted podward.io/runtime=process:NoSchedule, so that only pods that tolerate it are scheduled here)"
)

// addRuntimeFlags registers the flags that select and configure the
// container runtime.
func addRuntimeFlags(f *pflag.FlagSet, o *daemon.RuntimeOptions, def daemon.RuntimeOptions) {
	help := runtimeHelp
	if def.Kind == "" {
		help = chosenRuntimeHelp
	}
	f.StringVar(&o.Kind, "runtime", def.Kind, help)
	f.StringVar(&o.CRIEndpoint, "cri-endpoint", def.CRIEndpoint, "the CRI runtime's socket (--runtime cri)")
	f.StringVar(&o.PullSecretsDir, "image-pull-secrets-dir", "", "directory of image pull secrets not found as Secrets, by namespace: spec.imagePullSecrets name N of a pod of namespace NS is the dockerconfigjson file NS/N.json (namespace default: N.json too) (--runtime cri)")
	f.StringVar(&o.ShimBinary, "shim-binary", "", "the process runtime's shim binary, run for each container and exec (default: podward-shim beside this executable, else in PATH, else this binary re-executed, at some MB more memory per container)")
	podNetHelp := "give pods without hostNetwork their own network namespace and IP through the CRI runtime's CNI (--runtime cri); false puts every pod on the host network, as the process runtime does"
	if def.PodNetwork {
		podNetHelp = "give pods without hostNetwork their own network namespace and IP through the CRI runtime's CNI, as the kubelet does (--runtime cri; the node is Ready once the runtime's network is); false puts every pod on the host network, against the specs that say otherwise, for a CRI runtime without a CNI configuration"
	}
	f.BoolVar(&o.PodNetwork, "cri-pod-network", def.PodNetwork, podNetHelp)
	f.StringVar(&o.Cgroups, "cgroups", def.Cgroups, "enforce resource limits in cgroups (process runtime: the pods' and containers'; cri: each pod's, its cgroup parent, as the kubelet): auto (when podward can: root and a usable cgroup v1 or v2 hierarchy; it logs when it cannot), on (fail when it cannot) or off")
	f.StringVar(&o.CgroupRoot, "cgroup-root", def.CgroupRoot, "podward's cgroup, as the kubelet's --cgroup-root: the pods' cgroups (process runtime) and cgroup parents (CRI runtime) are below it, in the kubelet's QoS layout")
	f.StringSliceVar(&o.ClusterDNS, "cluster-dns", nil, "IPs of the cluster DNS servers, comma-separated, as the kubelet's flag: the nameservers of pods with dnsPolicy ClusterFirst (without one, they get the host's resolver with a MissingClusterDNS warning, as the kubelet's)")
	f.StringVar(&o.ClusterDomain, "cluster-domain", def.ClusterDomain, "the cluster's DNS domain, as the kubelet's flag: the pods' search list, their hosts file's and setHostnameAsFQDN's <hostname>.<subdomain>.<namespace>.svc.<domain>")
	f.StringVar(&o.ResolvConf, "resolv-conf", def.ResolvConf, "the resolver configuration the pods' is made from, as the kubelet's flag (\"\": none, the pods then get 127.0.0.1)")
	f.Int64Var(&o.PodMaxPids, "pod-max-pids", def.PodMaxPids, "most processes (threads) of each pod, as the kubelet's --pod-max-pids (0 or -1: no limit; both runtimes, in the pod's cgroup)")
}

// daemonError is the exit error of a daemon that could not start or that
// failed: 2 for options that cannot work, 3 for podward's own fault, 1 when
// the environment refused.
func daemonError(err error) error {
	code := ExitFailed
	switch {
	case errors.Is(err, daemon.ErrBadOptions):
		code = ExitBadInput
	case errors.Is(err, daemon.ErrInternal):
		code = ExitInternal
	}
	return &ExitError{Code: code, Err: err}
}
