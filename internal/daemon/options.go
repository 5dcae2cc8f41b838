package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/cgroups"
	"github.com/podward/podward/internal/runtime/cri"
	"github.com/podward/podward/internal/runtime/podnet"
	"github.com/podward/podward/internal/runtime/process"
	"github.com/podward/podward/internal/shutdown"
	"github.com/podward/podward/internal/sockdir"
	"github.com/podward/podward/internal/store"
)

// Options are the settings every daemon shares; the CLI's flags fill them.
// Start from DefaultOptions: the zero value has no backoff and no kill
// delay.
type Options struct {
	// Root is the state directory. "" is each daemon's default: a
	// temporary directory removed by Close (NewForeground),
	// DefaultStateDir (NewAgent), RootNodeStateDir (NewClusterNode).
	Root string
	// BackoffBase is the crash-loop backoff after the second quick exit
	// (planner.Config.BackoffBase).
	BackoffBase time.Duration
	// PromptKill is how long after the stop signal a container is killed
	// once the defer containers completed (planner.Config.PromptKill).
	PromptKill time.Duration
	// EventsPerPod bounds the events kept per pod by the long-running
	// daemons (NewAgent, NewClusterNode); the foreground run keeps the
	// recorder's own bound.
	EventsPerPod int
	// MaxEvents bounds the events they keep in all; the oldest go first.
	MaxEvents int
	// KeepTerminatedPodLogs is how long they keep the logs of a removed
	// pod (0: removed with it; negative: for good). The foreground run
	// keeps them: its state is gone when it ends, or is the user's --root.
	KeepTerminatedPodLogs time.Duration
	// MaxPods is how many pods the agent runs at once, the kubelet's
	// --max-pods: a pod beyond it is rejected, Failed with reason
	// OutOfpods (in cluster mode also the Node's pods capacity). At least
	// 1.
	MaxPods int
	// AllowedUnsafeSysctls are the sysctls a pod may set beyond the safe
	// ones, names or patterns ending in "*" (net.core.*), as the
	// kubelet's --allowed-unsafe-sysctls: each must be of a namespace a
	// pod can have (network, IPC, UTS, user). A pod that sets another is
	// rejected, Failed with reason SysctlForbidden.
	AllowedUnsafeSysctls []string
	// Verbose logs the agent's decisions (level Info); otherwise only
	// warnings and errors are logged.
	Verbose bool
	// LogOutput receives the log; nil is os.Stderr.
	LogOutput io.Writer
	// Runtime selects the container runtime.
	Runtime RuntimeOptions
	// ContainerLogMaxSize and ContainerLogMaxFiles rotate the containers'
	// logs as the kubelet's flags of the same names do: a log is rotated
	// once it reached ContainerLogMaxSize bytes (0: never), and at most
	// ContainerLogMaxFiles files of it are kept, the one being written
	// included (at least 2). On the process runtime the shims rotate the
	// logs they write; on the CRI runtime the agent renames them and asks
	// the runtime to reopen them.
	ContainerLogMaxSize  int64
	ContainerLogMaxFiles int
	// Shutdown configures the node shutdown of the long-running daemons
	// (NewAgent, NewClusterNode); the foreground run has none.
	Shutdown ShutdownOptions
	// MetricsBindAddress, when set (host:port), is a TCP address on which
	// the long-running daemons serve /metrics too (and the profiles, with
	// Profiling), without authentication; their socket (and the kubelet
	// port) serve /metrics whatever it says.
	MetricsBindAddress string
	// Profiling serves net/http/pprof under /debug/pprof/ on the daemon's
	// socket and on MetricsBindAddress, which must then be a loopback
	// address (ErrProfilingNotLoopback).
	Profiling bool
}

// ShutdownOptions are the kubelet's graceful node shutdown settings
// (internal/shutdown): GracePeriod and its CriticalPods part make two
// priority groups; ByPodPriority ("priority=seconds,...") makes one group
// per entry instead. All zero: a shutdown needs a grace of its own
// (`podward shutdown --grace-period`), as the kubelet then does nothing.
type ShutdownOptions struct {
	GracePeriod   time.Duration
	CriticalPods  time.Duration
	ByPodPriority string
}

// groups are the shutdown's priority groups, or the flag that is wrong.
func (o *ShutdownOptions) groups() ([]shutdown.Group, error) {
	byPriority, err := shutdown.ParseGroups(o.ByPodPriority)
	if err != nil {
		return nil, badOptions(err)
	}
	groups, err := shutdown.Groups(o.GracePeriod, o.CriticalPods, byPriority)
	if err != nil {
		return nil, badOptions(err)
	}
	return groups, nil
}

// RuntimeOptions select and configure the container runtime.
type RuntimeOptions struct {
	// Kind is RuntimeProcess or RuntimeCRI.
	Kind string
	// CRIEndpoint is the CRI runtime's socket (RuntimeCRI).
	CRIEndpoint string
	// PullSecretsDir holds the image pull secrets not found as Secrets of
	// the pod's namespace, by namespace: spec.imagePullSecrets name N of a
	// pod of namespace NS is the dockerconfigjson file NS/N.json, and for
	// namespace default N.json too (RuntimeCRI).
	PullSecretsDir string
	// PodNetwork gives pods without hostNetwork their own network
	// namespace through the CRI runtime's CNI (RuntimeCRI); otherwise every
	// pod is on the host network. On by default in cluster mode
	// (DefaultClusterOptions), off standalone (DefaultOptions: run and
	// serve work without a CNI configuration, their pods reachable on the
	// host as the process runtime's).
	PodNetwork bool
	// Cgroups says whether the runtime makes the pods' cgroups with their
	// limits (the process runtime: the pods' and the containers'; the CRI
	// runtime: each pod's, its cgroup parent, as the kubelet does):
	// CgroupsAuto (when it can: root and a usable hierarchy, with a log
	// line when it cannot), CgroupsOn (fail when it cannot), CgroupsOff.
	Cgroups string
	// CgroupRoot is podward's cgroup, from each hierarchy's root: the
	// process runtime's pod cgroups, and the CRI runtime's cgroup parents,
	// are below it in the kubelet's QoS layout (the kubelet's
	// --cgroup-root).
	CgroupRoot string
	// PodMaxPids, when above zero, limits the processes of each pod in its
	// cgroup, on both runtimes (the kubelet's --pod-max-pids; zero or -1:
	// no limit).
	PodMaxPids int64
	// ShimBinary is the process runtime's shim binary (RuntimeProcess,
	// process.Config.ShimBinary): "" finds podward-shim beside this
	// executable or in PATH, else re-executes this binary.
	ShimBinary string
	// ClusterDNS, ClusterDomain and ResolvConf are the kubelet's flags of
	// the same names, which the pods' resolv.conf, host names and hosts
	// files are made from (podnet.Settings, both runtimes): the cluster
	// DNS servers' IPs (none: ClusterFirst falls back to Default with a
	// MissingClusterDNS warning, as the kubelet's), the cluster domain
	// (DefaultClusterDomain in cluster mode; "" standalone, the kubelet's
	// own default) and the host's resolver configuration ("": none, the
	// pods then get 127.0.0.1 where their DNS is the host's).
	ClusterDNS    []string
	ClusterDomain string
	ResolvConf    string

	// sockets are the daemon's unix sockets, which no process-runtime
	// container may see (hiddenFromContainers).
	sockets []string
	// nodeIP is the node's address, for the downward API's status.hostIP
	// (and status.podIP on the host's network) in the CRI runtime's
	// containers; "" for its default, 127.0.0.1 (standalone).
	nodeIP string
	// objects is what the runtime reads the pods' ConfigMaps, Secrets and
	// tokens through: set by the daemon (standalone: its own store's, serve.go;
	// cluster mode: its API server's, cluster_objects.go), never a flag.
	objects runtime.Objects
}

// What RuntimeOptions.Cgroups says.
const (
	CgroupsAuto = "auto"
	CgroupsOn   = "on"
	CgroupsOff  = "off"
)

// DefaultClusterDomain is a cluster node's --cluster-domain, kubeadm's
// (the kubelet's own default is ""): the e2e specs' names end in it.
const DefaultClusterDomain = "cluster.local"

// dnsSettings are the pods' DNS settings of o; a --cluster-dns that is no
// IP, or a --cluster-domain that is no DNS subdomain, is a bad option.
func (o *RuntimeOptions) dnsSettings() (podnet.Settings, error) {
	for _, ip := range o.ClusterDNS {
		if net.ParseIP(ip) == nil {
			return podnet.Settings{}, badOptions(fmt.Errorf("--cluster-dns: %q is not an IP address", ip))
		}
	}
	if d := o.ClusterDomain; d != "" {
		if msgs := validation.IsDNS1123Subdomain(d); len(msgs) > 0 {
			return podnet.Settings{}, badOptions(fmt.Errorf("--cluster-domain: %q: %s", d, strings.Join(msgs, "; ")))
		}
	}
	return podnet.Settings{ClusterDNS: slices.Clone(o.ClusterDNS), ClusterDomain: o.ClusterDomain, ResolvConf: o.ResolvConf}, nil
}

// DefaultCgroupRoot is podward's cgroup.
const DefaultCgroupRoot = "/podward"

// The runtimes RuntimeOptions.Kind selects.
const (
	// RuntimeProcess runs each container as a host process
	// (internal/runtime/process): nothing to install.
	RuntimeProcess = "process"
	// RuntimeCRI runs OCI containers through a CRI runtime such as
	// containerd (internal/runtime/cri).
	RuntimeCRI = "cri"
)

// DefaultCRIEndpoint is containerd's CRI socket.
const DefaultCRIEndpoint = "unix:///run/containerd/containerd.sock"

// DefaultOptions are the defaults of every option: the planner's timings,
// the store's bounds of events, the agent's of removed pods' logs, the
// process runtime.
func DefaultOptions() Options {
	p := planner.DefaultConfig()
	return Options{
		BackoffBase:           p.BackoffBase,
		PromptKill:            p.PromptKill,
		EventsPerPod:          store.DefaultEventsPerPod,
		MaxEvents:             store.DefaultMaxEvents,
		KeepTerminatedPodLogs: agent.DefaultKeepTerminatedPodLogs,
		MaxPods:               agent.DefaultMaxPods,
		Runtime: RuntimeOptions{
			Kind: RuntimeProcess, CRIEndpoint: DefaultCRIEndpoint,
			Cgroups: CgroupsAuto, CgroupRoot: DefaultCgroupRoot,
			ResolvConf: podnet.EtcResolvConf,
		},

		ContainerLogMaxSize:  crilog.DefaultMaxSize,
		ContainerLogMaxFiles: crilog.DefaultMaxFiles,
	}
}

// logRotation is the containers' log rotation of o; its error is a bad
// option.
func (o *Options) logRotation() (crilog.Rotation, error) {
	r := crilog.Rotation{MaxSize: o.ContainerLogMaxSize, MaxFiles: o.ContainerLogMaxFiles}
	if err := r.Validate(); err != nil {
		return r, badOptions(fmt.Errorf("--%w", err))
	}
	return r, nil
}

// plannerConfig is the planner's configuration: its defaults with the
// timings of o. It is the one place the planner is configured from options.
func (o *Options) plannerConfig() planner.Config {
	cfg := planner.DefaultConfig()
	cfg.BackoffBase = o.BackoffBase
	cfg.PromptKill = o.PromptKill
	return cfg
}

// check refuses options that cannot work: they match ErrBadOptions.
func (o *Options) check() error {
	if o.MaxPods < 1 {
		return badOptions(fmt.Errorf("--max-pods: %d: must be at least 1", o.MaxPods))
	}
	if _, err := o.sysctls(); err != nil {
		return err
	}
	if o.Profiling && o.MetricsBindAddress != "" && !loopbackAddress(o.MetricsBindAddress) {
		return badOptions(fmt.Errorf("--pprof with --metrics-bind-address %q: %w", o.MetricsBindAddress, ErrProfilingNotLoopback))
	}
	return nil
}

// ErrProfilingNotLoopback refuses --pprof with a --metrics-bind-address
// other hosts can reach: that address has no authentication, and the
// profiles show the agent's memory and command line and cost it CPU.
var ErrProfilingNotLoopback = errors.New("the profiles are served without authentication, so only on a loopback address (127.0.0.1:PORT, [::1]:PORT or localhost:PORT); drop --pprof (the socket serves them too) or bind the metrics to loopback")

// loopbackAddress reports whether host:port names only the loopback
// interface: "localhost" or a loopback IP. An empty host (every interface),
// an unspecified or other IP, any other name, or an address that does not
// parse is not.
func loopbackAddress(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// osReleaseFile holds the running kernel's release, as uname -r prints it.
const osReleaseFile = "/proc/sys/kernel/osrelease"

// sysctls are the sysctls the agent lets a pod set: the safe ones of the
// running kernel and AllowedUnsafeSysctls, as the kubelet makes its
// allowlist. A kernel release that cannot be read leaves out the safe
// sysctls that need a recent kernel, as the kubelet does. Its error is a
// bad option.
func (o *Options) sysctls() (*agent.SysctlAllowlist, error) {
	release, _ := os.ReadFile(osReleaseFile)
	w, err := agent.NewSysctlAllowlist(strings.TrimSpace(string(release)), o.AllowedUnsafeSysctls)
	if err != nil {
		return nil, badOptions(fmt.Errorf("--allowed-unsafe-sysctls: %w", err))
	}
	return w, nil
}

// logger is the daemon's logger: warnings and errors, everything from Info
// with Verbose.
func (o *Options) logger() *slog.Logger {
	w := o.LogOutput
	if w == nil {
		w = os.Stderr
	}
	level := slog.LevelWarn
	if o.Verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level}))
}

// Output receives every line a container writes: its pod, its container's
// name, the stream ("stdout" or "stderr") and the line. It is called from
// the runtime's goroutines, concurrently.
type Output func(pod *model.Pod, container, stream string, line []byte)

// openRuntime is the agent's runtime, whose state lives under root.
type openRuntime interface {
	runtime.Runtime
	io.Closer
}

// open starts the selected runtime, with its state under root and the
// containers' logs rotated as rotation says. output, when set, receives
// every line the containers write. foreground ties the process runtime's
// containers to this process (process.Config.Tethered): a `podward run`'s
// must die with it. allocatable is the node's (machineAllocatable), nil
// when unknown.
func (o *RuntimeOptions) open(ctx context.Context, root string, clk clock.Clock, log *slog.Logger, output Output, foreground bool, rotation crilog.Rotation, allocatable v1.ResourceList) (openRuntime, error) {
	dns, err := o.dnsSettings()
	if err != nil {
		return nil, err
	}
	switch o.Kind {
	case RuntimeProcess:
		h, err := o.cgroups(log)
		if err != nil {
			return nil, err
		}
		var cg *process.CgroupConfig
		if h != nil {
			cg = &process.CgroupConfig{Hierarchy: h, Root: path.Clean(o.CgroupRoot), PodPidsLimit: o.PodMaxPids}
		}
		return process.New(process.Config{
			Root: filepath.Join(root, "process"), Clock: clk, Logger: log, Output: output, Tethered: foreground, LogRotation: rotation,
			SpareShims: process.DefaultSpareShims, Cgroups: cg, ShimBinary: o.ShimBinary,
			Allocatable: allocatable, Objects: o.objects, Hidden: hiddenFromContainers(root, o.sockets), DNS: dns,
		})
	case RuntimeCRI:
		h, err := o.cgroups(log)
		if err != nil {
			return nil, err
		}
		rt, err := cri.New(ctx, cri.Config{
			Endpoint: o.CRIEndpoint, Root: filepath.Join(root, "cri"), Clock: clk, Logger: log, Output: output,
			PullSecretsDir: o.PullSecretsDir, PodNetwork: o.PodNetwork, LogRotation: rotation,
			CgroupParent: path.Clean(o.CgroupRoot), Cgroups: h, PodPidsLimit: o.PodMaxPids,
			Allocatable: allocatable, Objects: o.objects, NodeIP: o.nodeIP, DNS: dns,
		})
		if err != nil {
			return nil, fmt.Errorf("CRI runtime at %s: %w", o.CRIEndpoint, err)
		}
		return rt, nil
	default:
		return nil, fmt.Errorf("--runtime: unknown runtime %q (want process or cri)", o.Kind)
	}
}

// cgroups is the host's cgroup hierarchy with podward's root created in
// it, where the runtime makes the pods' cgroups with their limits (the
// process runtime: all of them; the CRI runtime: each pod's, its cgroup
// parent, as the kubelet's pod container manager does). It is nil when
// they are off, or auto where they cannot be used (not root, no usable
// hierarchy), which is logged.
func (o *RuntimeOptions) cgroups(log *slog.Logger) (*cgroups.Hierarchy, error) {
	switch o.Cgroups {
	case CgroupsOff:
		return nil, nil
	case CgroupsAuto, CgroupsOn:
	default:
		return nil, badOptions(fmt.Errorf("--cgroups: unknown value %q (want auto, on or off)", o.Cgroups))
	}
	if !path.IsAbs(o.CgroupRoot) || path.Clean(o.CgroupRoot) == "/" {
		return nil, badOptions(fmt.Errorf("--cgroup-root: %q: must be an absolute path below /", o.CgroupRoot))
	}
	h, err := cgroups.Detect()
	if err == nil && os.Geteuid() != 0 {
		err = errors.New("podward is not running as root")
	}
	if err == nil {
		err = h.Init(o.CgroupRoot)
	}
	if err != nil {
		if o.Cgroups == CgroupsOn {
			return nil, fmt.Errorf("--cgroups=on: %w", err)
		}
		what := "resource limits are recorded but not enforced"
		if o.Kind == RuntimeCRI {
			what = "the pods' cgroups get no limits of their own (pod-level resources, --pod-max-pids); the containers' are the CRI runtime's"
		}
		log.Warn("cgroups unavailable: "+what+" (--cgroups off hides this)", "err", err)
		return nil, nil
	}
	log.Info("enforcing resource limits in cgroups", "hierarchy", h.String(), "cgroupRoot", o.CgroupRoot, "podMaxPids", o.PodMaxPids)
	return h, nil
}

// InvalidError is a pod that failed validation or that the runtime cannot
// run: the error of Foreground.Admit and Foreground.Create. It is the
// agent's own type, so that the command line reads it (errors.As, Problems)
// through this package.
type InvalidError = agent.InvalidError

// RejectedError is a valid pod the node does not admit: it has no room for
// it (Options.MaxPods), or the pod sets a sysctl it does not allow
// (Options.AllowedUnsafeSysctls) or is for another OS; with the kubelet's
// reason and message.
type RejectedError = agent.RejectedError

// TerminationReason says why `podward run` ends a pod (the agent's
// word, so that the CLI need not import the agent).
type TerminationReason = agent.StopReason

// The reasons `podward run` ends its pods for.
const (
	TerminationInterrupted = agent.StopInterrupted
	TerminationTimeout     = agent.StopTimeout
	TerminationAborted     = agent.StopAborted
)

// The classes of a daemon's errors, matched with errors.Is; an error of
// neither class is the environment refusing.
var (
	// ErrBadOptions is an option that cannot work: a path that cannot be
	// made absolute, an unreadable kubeconfig, a bad certificate.
	ErrBadOptions = errors.New("bad options")
	// ErrInternal is podward's own fault: a runtime without an ability
	// it must have, the API server failing while it serves.
	ErrInternal = errors.New("internal error")
)

// classified puts err in a class without changing its message.
type classified struct {
	class error
	err   error
}

func (e *classified) Error() string        { return e.err.Error() }
func (e *classified) Unwrap() error        { return e.err }
func (e *classified) Is(target error) bool { return target == e.class }

func badOptions(err error) error { return &classified{class: ErrBadOptions, err: err} }
func internal(err error) error   { return &classified{class: ErrInternal, err: err} }

// hiddenFromContainers are the host paths no process-runtime container may
// see: the agent's state directory root (every pod's volumes and logs, the
// store with its Secrets) and each of its sockets: the socket's directory
// when it is podward's own (sockdir's /run/podward or the user's), the
// socket itself in a directory the user chose, which may hold anything
// (covering a file holds until the agent makes the socket anew).
func hiddenFromContainers(root string, sockets []string) []string {
	hidden := []string{root}
	for _, s := range sockets {
		if s == "" {
			continue
		}
		s = filepath.Clean(s)
		if dir := filepath.Dir(s); sockdir.RuleFor(dir) != sockdir.Unchecked {
			s = dir
		}
		if !slices.Contains(hidden, s) {
			hidden = append(hidden, s)
		}
	}
	return hidden
}
