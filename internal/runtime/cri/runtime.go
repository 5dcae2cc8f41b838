package cri

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/cgroups"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podnet"
)

// Defaults of Config.
const (
	// DefaultCallTimeout bounds each CRI call but pulls, StopContainer
	// (which gets its grace period on top) and ExecSync (bounded by its
	// caller's ctx). RunPodSandbox with a CNI plugin and StopPodSandbox are
	// the slow ones; 30 s leaves them room without hiding a hung runtime.
	DefaultCallTimeout = 30 * time.Second
	// DefaultPullTimeout bounds one image pull.
	DefaultPullTimeout = 10 * time.Minute
	// DefaultRelistPeriod is the kubelet's PLEG period: exits are seen
	// within a second when nothing pokes the relist sooner.
	DefaultRelistPeriod = time.Second
	// DefaultCgroupParent is the cgroup under which each pod gets its own
	// parent, <DefaultCgroupParent>/<qos>/pod<UID>.
	DefaultCgroupParent = "/podward"
)

// streamRelistFactor stretches the relist period while the runtime's event
// stream works: the relist is then only a safety net.
const streamRelistFactor = 10

// maxMsgSize is the largest CRI response the client accepts, as the
// kubelet's: a ListContainers of thousands of containers exceeds gRPC's 4 MiB.
const maxMsgSize = 16 * 1024 * 1024

// eventBuffer is how many exit events wait for the consumer before their
// deliveries start to wait for it.
const eventBuffer = 128

var (
	// ErrRootInUse is returned by New when another Runtime, in this
	// process or another, holds the root.
	ErrRootInUse = errors.New("CRI runtime root is in use by another runtime")
	// errClosed is returned by calls that would start work after Close.
	errClosed = errors.New("CRI runtime is closed")
)

// Config is what the CRI runtime needs from the agent.
type Config struct {
	// Endpoint is the CRI socket, such as
	// unix:///run/containerd/containerd.sock (a bare absolute path is a
	// unix socket too). Both the runtime and the image service are used
	// on it.
	Endpoint string
	// Root is podward's state directory for this runtime:
	// Root/pods/<podUID>/logs/<container>/<attempt>.log for the logs (the
	// sandbox's log directory, written by the runtime) and
	// Root/pods/<podUID>/volumes/<name> for emptyDirs. One Runtime at a
	// time may use a root. Its absolute path also tells this podward's
	// containers from another podward's on the same CRI runtime (label
	// LabelRoot).
	Root string
	// Clock drives the relist timers and measures pulls. Default: the real
	// clock. Start and finish times come from the CRI runtime.
	Clock clock.Clock
	// Objects reads what the pods reference (ConfigMaps, Secrets, tokens,
	// image pull secrets).
	Objects runtime.Objects
	// Allocatable is the machine's allocatable resources, which a
	// resourceFieldRef to a limit a container does not set reads
	// (podspec.EnvSources). nil: such a value is 0.
	Allocatable v1.ResourceList
	// Logger gets the runtime's own messages. Default: discarded.
	Logger *slog.Logger
	// LogRotation is how the running containers' logs are rotated, as the
	// kubelet rotates them: every LogRotationPeriod, a log that reached
	// MaxSize is renamed and the CRI runtime asked to reopen it. Zero
	// never rotates.
	LogRotation crilog.Rotation
	// LogRotationPeriod is how often the logs are looked at; default
	// DefaultLogRotationPeriod.
	LogRotationPeriod time.Duration
	// CallTimeout bounds each CRI call but pulls, StopContainer (which
	// gets its grace period on top) and ExecSync (bounded by its ctx).
	// Default DefaultCallTimeout.
	CallTimeout time.Duration
	// PullTimeout bounds one image pull. Default DefaultPullTimeout.
	PullTimeout time.Duration
	// RelistPeriod is how often the runtime lists the running containers
	// to find exits. A start or a stop pokes a relist at once (and a few
	// more in quick succession after a start), so that short-lived
	// containers are seen fast without a tight period. While the CRI
	// runtime's event stream works (GetContainerEvents; containerd 1.6
	// has none), each stop event pokes a relist and the period is ten
	// times longer. Default DefaultRelistPeriod.
	RelistPeriod time.Duration
	// PullSecretsDir holds the pods' image pull secrets that
	// Objects.Getter does not have, by namespace: the secret named in
	// spec.imagePullSecrets of a pod of namespace ns is the file
	// <PullSecretsDir>/<ns>/<name>.json, a dockerconfigjson
	// ({"auths":{"registry:port":{"auth":"..."}}}); for namespace default
	// only, <PullSecretsDir>/<name>.json too, the older layout
	// (pullsecrets.go).
	PullSecretsDir string
	// PodNetwork gives pods that ask for their own network
	// (spec.hostNetwork false) a network namespace of their own, set up by
	// the CRI runtime's CNI plugins (their hostPorts as the sandbox's
	// PortMappings, for CNI's portmap), and makes Status require the
	// runtime's NetworkReady. False (the zero value; podward's standalone
	// default, while its cluster mode turns it on) puts every pod on the
	// host's network, as on the process runtime, with no CNI configuration
	// needed: a hostPort other than the containerPort is refused then.
	PodNetwork bool
	// DNS are the node's DNS settings the pods' DNS configuration is made
	// from (podnet.DNS, PodSandboxConfig.DnsConfig), and the cluster domain
	// of their host names and hosts files. ResolvConf "" gives the pods
	// the kubelet's 127.0.0.1 where their DNS is the host's.
	DNS podnet.Settings
	// CgroupParent is the cgroup under which each pod gets a parent of its
	// own, <CgroupParent>/<qos>/pod<UID> (podspec.PodCgroup), for the
	// cgroupfs driver. Default
	// DefaultCgroupParent. CleanupPod removes the pod's parent, which the
	// CRI runtime never removes.
	CgroupParent string
	// Cgroups, when set, is the host's cgroup hierarchy, in which the
	// runtime makes each pod's cgroup parent itself before its sandbox
	// runs, with the pod's limits (podspec.PodCgroupResources: pod-level
	// resources, or the containers' sums) and PodPidsLimit, as the
	// kubelet's pod container manager does (cgroupfs driver: the CRI
	// runtime must not use the systemd one); nil leaves the parent to the
	// CRI runtime, which makes it without limits. CgroupParent must be a
	// cgroup Cgroups.Init made.
	Cgroups *cgroups.Hierarchy
	// PodPidsLimit, when above zero and Cgroups is set, is each pod's limit
	// of processes (the kubelet's podPidsLimit, --pod-max-pids).
	PodPidsLimit int64
	// NodeIP is what fieldRef status.hostIP(s) gives, and status.podIP(s)
	// on the host network. Default 127.0.0.1, which inside a pod network
	// is the pod itself: set it when PodNetwork is on.
	NodeIP string
	// Output, when set, also receives every line a container writes (a
	// line longer than 16 KiB in 16 KiB pieces), for `podward run`. The
	// runtime follows each instance's CRI log: the lines of an instance
	// this Runtime started from its first, those of an instance it found
	// running at New from then on. Every line of an instance is handed
	// over before its exit event is sent. It is called from one goroutine
	// per instance; while it blocks, that instance's exit event waits (the
	// container does not). line is only valid during the call. For an
	// instance the runtime found at New, pod has only its name, namespace
	// and UID.
	Output func(pod *model.Pod, container, stream string, line []byte)

	// loopWaiting, for tests, is called each time the relist loop is about
	// to wait for its timer, of delay, or a poke.
	loopWaiting func(delay time.Duration)
}

// The contract and every optional ability: the CRI runtime is a drop-in for
// the process runtime, with images, graceful stops and pod networks besides.
var (
	_ runtime.Runtime         = (*Runtime)(nil)
	_ runtime.ContainerLister = (*Runtime)(nil)
	_ runtime.PodLister       = (*Runtime)(nil)
	_ runtime.Info            = (*Runtime)(nil)
	_ runtime.ImageService    = (*Runtime)(nil)
	_ runtime.GracefulStopper = (*Runtime)(nil)
	_ runtime.PodAddresser    = (*Runtime)(nil)
	_ runtime.PodLogRemover   = (*Runtime)(nil)
)

// Runtime runs pods as OCI containers through a CRI v1 runtime (containerd,
// CRI-O): a pod sandbox per pod, a container per instance. All its methods
// are safe for concurrent use.
type Runtime struct {
	root        string
	objects     runtime.Objects
	allocatable v1.ResourceList
	// warnings: see Warnings.
	warnings     chan runtime.Warning
	rootLabel    string // LabelRoot's value: a hash of root
	clock        clock.Clock
	log          *slog.Logger
	callTimeout  time.Duration
	pullTimeout  time.Duration
	relistPeriod time.Duration
	// logRotation and rotationPeriod: see Config.
	logRotation    crilog.Rotation
	rotationPeriod time.Duration
	secretsDir     string
	podNetwork     bool
	dns            podnet.Settings
	cgroupParent   string
	cgroupRoot     string // /sys/fs/cgroup; tests point it elsewhere
	// cgroups and podPidsLimit: see Config.Cgroups.
	cgroups      *cgroups.Hierarchy
	podPidsLimit int64
	// cgroupV2: the host's cgroups are the unified hierarchy.
	cgroupV2 bool
	// memoryCapacity is the machine's memory, for the containers'
	// oom_score_adj (0 when unknown: Burstable containers get 999).
	memoryCapacity int64
	nodeIP         string
	output         func(pod *model.Pod, container, stream string, line []byte)
	lock           *os.File // flock'ed: one Runtime per root
	loopWaiting    func(time.Duration)

	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient
	img  runtimeapi.ImageServiceClient

	events chan runtime.Event
	poke   chan struct{} // 1 slot: a relist is wanted now
	// ctx ends with Close: the relist loop, the event stream, stops in
	// flight and pending deliveries end with it.
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
	wg        sync.WaitGroup
	streaming atomic.Bool // the runtime's event stream delivers

	relistMu  sync.Mutex // one relist at a time
	relistGen uint64     // under relistMu and mu

	mu        sync.Mutex
	closed    bool
	tracked   map[string]*instance     // instances started or found running, until their exit is seen
	sandboxes map[types.UID]sandboxRef // the ready sandbox of each prepared pod, and its addresses
}

// New connects to the CRI runtime at cfg.Endpoint, checks that it answers
// (Version), takes cfg.Root, and starts watching the containers for exits.
// ctx bounds only these first calls; the Runtime lives until Close.
//
// It attaches to what an earlier Runtime on the same root left in the CRI
// runtime (it may have been in a process that died): instances that run
// are watched again, their exits reported on Events and their output (from
// now on) handed to Config.Output; instances that had already exited are
// not reported on Events, ListContainers has their exit status. An agent
// that restarts should call ListPods and ListContainers before it reads
// Events, and treat an exit event for an instance ListContainers already
// showed as exited as a repetition. New fails with ErrRootInUse while
// another Runtime holds the root.
func New(ctx context.Context, cfg Config) (*Runtime, error) {
	root, err := prepareRoot(cfg)
	if err != nil {
		return nil, err
	}
	lock, err := hostfs.LockRoot(root, "CRI runtime", ErrRootInUse)
	if err != nil {
		return nil, err
	}
	conn, err := dialCRI(cfg.Endpoint)
	if err != nil {
		lock.Close()
		return nil, err
	}
	// The lifetime is the Runtime's, not New's: only Close ends it.
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := newRuntime(cfg, root, lock, conn)
	r.ctx, r.cancel = life, cancel
	if err := r.begin(ctx, cfg.Endpoint); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("CRI runtime at %s: %w", cfg.Endpoint, err)
	}
	return r, nil
}

// prepareRoot checks cfg and makes its root's pods directory; it returns
// the root, absolute.
func prepareRoot(cfg Config) (string, error) {
	if cfg.Endpoint == "" {
		return "", errors.New("CRI runtime: Config.Endpoint is required")
	}
	if cfg.Root == "" {
		return "", errors.New("CRI runtime: Config.Root is required")
	}
	if err := cfg.LogRotation.Validate(); err != nil {
		return "", fmt.Errorf("CRI runtime: %w", err)
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return "", fmt.Errorf("CRI runtime root: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "pods"), 0o750); err != nil {
		return "", fmt.Errorf("CRI runtime root: %w", err)
	}
	return root, nil
}

// dialCRI makes the gRPC client of the CRI endpoint (a bare path is a unix
// socket's); it connects on first use.
func dialCRI(endpoint string) (*grpc.ClientConn, error) {
	target := endpoint
	if strings.HasPrefix(target, "/") {
		target = "unix://" + target
	}
	conn, err := grpc.NewClient(target,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMsgSize), grpc.MaxCallSendMsgSize(maxMsgSize)))
	if err != nil {
		return nil, fmt.Errorf("CRI runtime: connect to %s: %w", endpoint, err)
	}
	return conn, nil
}

// newRuntime is the Runtime of cfg on root, its defaults filled in, not
// started.
func newRuntime(cfg Config, root string, lock *os.File, conn *grpc.ClientConn) *Runtime {
	sum := sha256.Sum256([]byte(root))
	r := &Runtime{
		root:           root,
		rootLabel:      hex.EncodeToString(sum[:8]),
		clock:          cfg.Clock,
		log:            cfg.Logger,
		callTimeout:    cmpOr(cfg.CallTimeout, DefaultCallTimeout),
		pullTimeout:    cmpOr(cfg.PullTimeout, DefaultPullTimeout),
		relistPeriod:   cmpOr(cfg.RelistPeriod, DefaultRelistPeriod),
		logRotation:    cfg.LogRotation,
		rotationPeriod: cmpOr(cfg.LogRotationPeriod, DefaultLogRotationPeriod),
		secretsDir:     cfg.PullSecretsDir,
		objects:        cfg.Objects,
		allocatable:    cfg.Allocatable,
		warnings:       make(chan runtime.Warning, warningBuffer),
		podNetwork:     cfg.PodNetwork,
		dns:            cfg.DNS,
		cgroupParent:   cmp.Or(cfg.CgroupParent, DefaultCgroupParent),
		cgroupRoot:     "/sys/fs/cgroup",
		cgroups:        cfg.Cgroups,
		podPidsLimit:   cfg.PodPidsLimit,
		cgroupV2:       isUnified("/sys/fs/cgroup"),
		nodeIP:         cmp.Or(cfg.NodeIP, "127.0.0.1"),
		output:         cfg.Output,
		loopWaiting:    cfg.loopWaiting,
		lock:           lock,
		conn:           conn,
		rt:             runtimeapi.NewRuntimeServiceClient(conn),
		img:            runtimeapi.NewImageServiceClient(conn),
		events:         make(chan runtime.Event, eventBuffer),
		poke:           make(chan struct{}, 1),
		tracked:        make(map[string]*instance),
		sandboxes:      make(map[types.UID]sandboxRef),
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	r.memoryCapacity = machineMemory(r.log)
	return r
}

// begin asks the CRI runtime its version, takes up what it runs of this
// root (attach), and starts the relist, event and log rotation loops.
func (r *Runtime) begin(ctx context.Context, endpoint string) error {
	name, version, err := r.Version(ctx)
	if err != nil {
		return err
	}
	if err := r.attach(ctx); err != nil {
		return err
	}
	if err := r.restoreIPs(ctx); err != nil {
		return fmt.Errorf("pod addresses: %w", err)
	}
	r.log.Debug("CRI runtime ready", "endpoint", endpoint, "runtime", name, "version", version)
	r.wg.Add(2)
	go r.relistLoop()
	go r.watchEvents()
	if r.logRotation.Enabled() {
		r.wg.Add(1)
		go r.rotateLoop()
	}
	return nil
}

func cmpOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

// Close stops the runtime's own work and waits for it to end: the relist
// loop and the event stream stop (exits from now on are for the next
// Runtime on the root to find), the following of running instances' logs
// stops, stops in flight are abandoned (a container that ignores its stop
// signal then gets no SIGKILL from the CRI runtime: the pod worker of the
// next agent sends it at the deadline), and calls that start something
// fail. An exit already seen is finished: its log is read to the end for
// Config.Output, and its event is dropped unless the consumer takes it
// first. Close never stops a container. It closes the connection and
// releases the root. It is idempotent.
func (r *Runtime) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		followers := make([]*crilog.Follower, 0, len(r.tracked))
		for _, in := range r.tracked {
			if in.follower != nil {
				followers = append(followers, in.follower)
			}
		}
		r.mu.Unlock()
		r.cancel()
		for _, f := range followers {
			f.Stop()
		}
		r.wg.Wait()
		if err := r.conn.Close(); err != nil {
			r.log.Debug("close the CRI connection", "err", err)
		}
		// Closing the file releases the lock.
		r.lock.Close()
	})
	return nil
}

// goTracked runs fn in a goroutine Close waits for, unless the Runtime is
// closed, in which case it returns false and runs nothing.
func (r *Runtime) goTracked(fn func()) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		fn()
	}()
	return true
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// Events reports the exit of every instance this Runtime watches exactly
// once, after all its output was handed to Config.Output. Exits are found
// by relisting (see Config.RelistPeriod). The channel is buffered and never
// closed; no event is dropped while the Runtime is open. Exits that
// happened while no Runtime watched are not reported here but by
// ListContainers.
func (r *Runtime) Events() <-chan runtime.Event { return r.events }

// Version returns the CRI runtime's name and version, such as
// "containerd", "v1.6.20".
func (r *Runtime) Version(ctx context.Context) (runtimeName, runtimeVersion string, err error) {
	cctx, cancel := context.WithTimeout(ctx, r.callTimeout)
	defer cancel()
	resp, err := r.rt.Version(cctx, &runtimeapi.VersionRequest{Version: "v1"})
	if err != nil {
		return "", "", fmt.Errorf("CRI version: %w", err)
	}
	return resp.RuntimeName, resp.RuntimeVersion, nil
}

// Status is nil when the CRI runtime answers and says RuntimeReady (and,
// with Config.PodNetwork, NetworkReady); otherwise it is an error naming
// the failing condition with its reason and message, or the call's error.
func (r *Runtime) Status(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, r.callTimeout)
	defer cancel()
	resp, err := r.rt.Status(cctx, &runtimeapi.StatusRequest{})
	if err != nil {
		return fmt.Errorf("CRI status: %w", err)
	}
	want := []string{runtimeapi.RuntimeReady}
	if r.podNetwork {
		want = append(want, runtimeapi.NetworkReady)
	}
	var errs []error
	for _, typ := range want {
		var cond *runtimeapi.RuntimeCondition
		for _, c := range resp.GetStatus().GetConditions() {
			if c.Type == typ {
				cond = c
			}
		}
		switch {
		case cond == nil:
			errs = append(errs, fmt.Errorf("CRI status: condition %s not reported", typ))
		case !cond.Status:
			errs = append(errs, fmt.Errorf("CRI status: %s is false: %s: %s", typ, cond.Reason, cond.Message))
		}
	}
	return errors.Join(errs...)
}

// LogPath is where the CRI log of the attempt-th instance of container
// lives. It does not say whether the file exists.
func (r *Runtime) LogPath(podUID types.UID, container string, attempt int) string {
	return filepath.Join(r.logDir(podUID), container, strconv.Itoa(attempt)+".log")
}

func (r *Runtime) podsDir() string { return filepath.Join(r.root, "pods") }

func (r *Runtime) podDir(uid types.UID) string { return filepath.Join(r.podsDir(), string(uid)) }

func (r *Runtime) logDir(uid types.UID) string { return filepath.Join(r.podDir(uid), "logs") }

func (r *Runtime) volumesDir(uid types.UID) string { return filepath.Join(r.podDir(uid), "volumes") }

func (r *Runtime) volumeDir(uid types.UID, volume string) string {
	return filepath.Join(r.volumesDir(uid), volume)
}

// call bounds one CRI call with the call timeout.
func (r *Runtime) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.callTimeout)
}

func isNotFound(err error) bool { return status.Code(err) == codes.NotFound }

// notFound turns the CRI runtime's NotFound into runtime.ErrNotFound.
func notFound(err error) error {
	if isNotFound(err) {
		return fmt.Errorf("%w: %v", runtime.ErrNotFound, err)
	}
	return err
}

// machineMemory is the machine's memory, 0 (logged) when it is unknown.
func machineMemory(log *slog.Logger) int64 {
	mem, err := hostfs.MemoryCapacity()
	if err != nil {
		log.Warn("the machine's memory is unknown: Burstable containers get oom_score_adj 999", "err", err)
	}
	return mem
}

// isUnified says whether dir is a cgroup v2 (unified) mount.
func isUnified(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.CGROUP2_SUPER_MAGIC
}
