package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/cgroups"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podnet"
	"github.com/podward/podward/internal/runtime/process/launch"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// agentLockFile, under the root, is locked by the Runtime for the shims
// (shim.HoldAgentLock); runtime.lock is the Runtimes' own.
const agentLockFile = "agent.lock"

// eventBuffer is how many exit events wait for the consumer before watchers
// start to wait for it.
const eventBuffer = 128

// errClosed is returned by StartContainer and Exec after Close.
var errClosed = errors.New("process runtime is closed")

// ErrRootInUse is returned by New when another Runtime, in this process or
// another, holds the root.
var ErrRootInUse = errors.New("process runtime root is in use by another runtime")

// Config is what the process runtime needs from the agent.
type Config struct {
	// Root is the runtime's state directory: Root/pods/<podUID>/volumes/<name>
	// for emptyDirs, Root/pods/<podUID>/logs/<container>/<attempt>.log for
	// logs, Root/pods/<podUID>/instances/<id> for each container instance's
	// state (package shim), Root/execs/<pgid>.json for each running Exec.
	// One Runtime at a time may use a root.
	Root string
	// Clock stamps what the agent decides itself: the FinishedAt of an
	// instance whose shim died, and Exec's timeouts. Default: the real
	// clock. Start and finish times and log records are stamped by the
	// shims, which have their own process and so the real clock.
	Clock clock.Clock
	// Objects reads what the pods reference (ConfigMaps, Secrets, tokens).
	Objects runtime.Objects
	// Hidden are host paths no container may see, besides Root: the
	// agent's state directory and its sockets (or their directories).
	// Each is covered in every container's view (a directory with an
	// empty tmpfs, a file with /dev/null).
	Hidden []string
	// Allocatable is the machine's allocatable resources, which a
	// resourceFieldRef to a limit a container does not set reads
	// (podspec.EnvSources). nil: such a value is 0.
	Allocatable v1.ResourceList
	// Logger gets the runtime's own messages, and the shims' warnings and
	// errors (their notices). Default: discarded.
	Logger *slog.Logger
	// LogRotation is how each instance's shim rotates its log
	// (crilog.LogFile): the kubelet's rules; zero never rotates.
	LogRotation crilog.Rotation
	// Output, when set, also receives every line a container writes (a
	// line longer than 16 KiB in 16 KiB pieces), for `podward run`, which
	// prints it prefixed by the container name. The runtime follows each
	// instance's log for it: the lines of an instance this Runtime started
	// from its first, those of an instance it attached to from when it
	// attached. Every line of an instance is handed over before its exit
	// event is sent. It is called from one goroutine per instance; while
	// it blocks, that instance's exit event waits (the container does
	// not). line is only valid during the call. For an instance the
	// runtime attached to, pod has only its name, namespace and UID.
	Output func(pod *model.Pod, container string, stream string, line []byte)
	// Tethered ties every container this Runtime starts to this process:
	// when it exits, however it exits, the container's shim kills the
	// container (shim.Spec.Tether). For `podward run`, whose containers
	// must not outlive it; an agent leaves it false, so that its
	// containers survive it and its next start adopts them.
	Tethered bool
	// SpareShims is how many shims the Runtime keeps started ahead of the
	// containers they will hold, from its first start on
	// (DefaultSpareShims for an agent), so that
	// a start waits only for the container's own fork and exec, not for
	// its shim's. Each is an idle process until a start takes it; it
	// exits when Close ends it or when this process dies. Zero: none, every
	// start starts its shim.
	SpareShims int
	// Cgroups, when set, enforces the containers' resource limits in
	// cgroups (see CgroupConfig); nil runs without (limits are then
	// recorded, not enforced).
	Cgroups *CgroupConfig
	// ShimBinary is the binary run as each container's shim, as the spare
	// shims and as each Exec's init helper: one whose main turns it into
	// them, cmd/podward-shim (a few MB less per container than the agent's
	// binary, which links the Kubernetes libraries). "" looks for
	// ShimBinaryName beside this process's executable, then in PATH, and
	// else re-executes this very binary (whose main, or TestMain, must call
	// MaybeRunInit first), with a warning on Logger.
	ShimBinary string
	// DNS are the node's DNS settings the pods' resolv.conf is made from
	// (podnet.DNS), and the cluster domain of their host names and hosts
	// files.
	DNS podnet.Settings
}

// The contract and the optional abilities the process runtime has.
var (
	_ runtime.Runtime           = (*Runtime)(nil)
	_ runtime.ContainerLister   = (*Runtime)(nil)
	_ runtime.PodLister         = (*Runtime)(nil)
	_ runtime.Info              = (*Runtime)(nil)
	_ runtime.PodLogRemover     = (*Runtime)(nil)
	_ runtime.Warner            = (*Runtime)(nil)
	_ runtime.ConcurrentStarter = (*Runtime)(nil)
)

// Runtime runs containers as host processes, each under a shim of its own
// that outlives the Runtime. All its methods are safe for concurrent use.
type Runtime struct {
	root        string
	objects     runtime.Objects
	dns         podnet.Settings
	allocatable v1.ResourceList
	clock       clock.Clock
	log         *slog.Logger
	output      func(pod *model.Pod, container string, stream string, line []byte)
	// tethered: see Config.Tethered.
	tethered bool
	// shimBinary is what runs as the shims and the init helpers
	// (Config.ShimBinary); "" is this very binary.
	shimBinary string
	// logRotation goes into every instance's spec.
	logRotation crilog.Rotation
	euid        func() int // os.Geteuid; tests pretend not to be root
	// selinuxEnforcing: SELinux enforces on this host (Check refuses
	// seLinuxOptions then).
	selinuxEnforcing func() bool
	// hidden: Root and Config.Hidden, out of every container's view.
	hidden []string
	// uts: containers get a UTS namespace of their own with the pod's
	// host name (launch.CanUnshareUTS; else they see the host's).
	uts  bool
	lock *os.File // flock'ed: one Runtime per root
	// agentLock is held while the Runtime is open, so that shims know an
	// agent runs (shim.Order.AgentLock).
	agentLock *os.File

	events   chan runtime.Event
	warnings chan runtime.Warning
	done     chan struct{} // closed by Close
	// ctx ends with Close; watchers wait for their shims under it.
	ctx       context.Context
	cancel    context.CancelFunc
	closeOnce sync.Once
	watchers  sync.WaitGroup

	mountpoints mountpoints
	spares      spareShims
	// poller waits for the watched shims' exits and notices (watch).
	poller *poller
	// cgroups is nil without Config.Cgroups.
	cgroups *podCgroups

	mu        sync.Mutex
	closed    bool
	instances map[string]*instance // by ID, until their pod is cleaned up
	// byPod are the same instances by pod, then ID: a pod's queries do
	// not scan every pod's instances.
	byPod map[types.UID]map[string]*instance
	// watches are the instances whose shims the poller waits for.
	watches map[*watch]struct{}
}

// New returns a runtime keeping its state under cfg.Root, which it creates,
// and attaches to what an earlier Runtime on the same root left there (it
// may have been in a process that died):
//
//   - an instance whose container runs is watched again: its exit will be
//     reported on Events, its output (from now on) handed to Config.Output;
//   - an instance that exited while no Runtime watched it is not reported
//     on Events; ListContainers has its exit status;
//   - an instance whose shim died without recording an exit gets one now:
//     runtime.ReasonStartError (128) when its container never started, else
//     runtime.ReasonStatusUnknown (137), after what is left of the container was
//     killed; it too is only in ListContainers;
//   - an instance directory without a spec (its agent died before it
//     started a shim) is removed;
//   - what is left of the execs that were running when it died (their
//     background processes) is killed;
//   - the mountpoints counted for the pods of all these instances are
//     counted again, so that CleanupPod removes them.
//
// An agent that restarts should call ListPods and ListContainers before it
// reads Events, and treat an exit event for an instance ListContainers
// already showed as exited as a repetition. New fails with ErrRootInUse
// while another Runtime holds the root.
func New(cfg Config) (*Runtime, error) {
	if cfg.Root == "" {
		return nil, errors.New("process runtime: Config.Root is required")
	}
	if err := cfg.LogRotation.Validate(); err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("process runtime root: %w", err)
	}
	exe, _ := os.Executable()
	shimBin, fallback, err := shimBinary(cfg.ShimBinary, exe)
	if err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	for _, dir := range []string{"pods", "execs"} {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o750); err != nil {
			return nil, fmt.Errorf("process runtime root: %w", err)
		}
	}
	cg, err := newPodCgroups(cfg.Cgroups)
	if err != nil {
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	lock, err := hostfs.LockRoot(root, "process runtime", ErrRootInUse)
	if err != nil {
		return nil, err
	}
	agentLock, err := shim.HoldAgentLock(filepath.Join(root, agentLockFile))
	if err != nil {
		lock.Close()
		return nil, fmt.Errorf("process runtime root: %w", err)
	}
	r := newRuntime(cfg, root, shimBin, cg, lock, agentLock)
	r.spares.log = r.log
	if r.poller, err = newPoller(r.log); err != nil {
		r.cancel()
		agentLock.Close()
		lock.Close()
		return nil, fmt.Errorf("process runtime: %w", err)
	}
	if fallback {
		r.log.Warn("no "+ShimBinaryName+" beside the executable or in PATH: the shims and init helpers are this binary re-executed, which costs each container several MB more memory (see --shim-binary)",
			"executable", exe)
	}
	if err := r.killLeftExecs(); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("process runtime: execs left in %s: %w", root, err)
	}
	if err := r.attach(); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("process runtime: attach to %s: %w", root, err)
	}
	return r, nil
}

// newRuntime is the Runtime of cfg on root, its defaults filled in, its
// poller not yet made and nothing of root's taken up.
func newRuntime(cfg Config, root, shimBin string, cg *podCgroups, lock, agentLock *os.File) *Runtime {
	ctx, cancel := context.WithCancel(context.Background())
	r := &Runtime{
		cgroups:          cg,
		objects:          cfg.Objects,
		dns:              cfg.DNS,
		allocatable:      cfg.Allocatable,
		root:             root,
		clock:            cfg.Clock,
		log:              cfg.Logger,
		output:           cfg.Output,
		tethered:         cfg.Tethered,
		shimBinary:       shimBin,
		logRotation:      cfg.LogRotation,
		euid:             os.Geteuid,
		selinuxEnforcing: hostSELinuxEnforcing,
		hidden:           append([]string{root}, cfg.Hidden...),
		uts:              launch.CanUnshareUTS(),
		lock:             lock,
		agentLock:        agentLock,
		events:           make(chan runtime.Event, eventBuffer),
		warnings:         make(chan runtime.Warning, warningBuffer),
		done:             make(chan struct{}),
		ctx:              ctx,
		cancel:           cancel,
		mountpoints:      mountpoints{created: make(map[string]*createdPath)},
		instances:        make(map[string]*instance),
		byPod:            make(map[types.UID]map[string]*instance),
		watches:          make(map[*watch]struct{}),
		spares:           spareShims{want: cfg.SpareShims, marker: root, bin: shimBin},
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r
}

// Events reports the exit of every container instance this Runtime
// watches exactly once, after all its output is in its log (and was handed
// to Config.Output). The channel is buffered and never closed; no event is
// dropped while the Runtime is open. Exits that happened while no Runtime
// watched are not reported here but by ListContainers.
func (r *Runtime) Events() <-chan runtime.Event { return r.events }

// Close stops the runtime's own work and waits for it to end: watchers
// stop waiting for shims (exits from now on are for the next Runtime on
// the root to find), the following of running instances' logs stops, and
// StartContainer and Exec fail. An exit a watcher had already seen is
// finished: its log is read to the end for Config.Output, and its event
// is dropped unless the consumer takes it first. Close never stops a
// container or its shim; it ends the spare shims, which hold none. It
// releases the root. It is idempotent.
func (r *Runtime) Close() error {
	r.closeOnce.Do(func() {
		r.mu.Lock()
		r.closed = true
		r.mu.Unlock()
		close(r.done)
		r.cancel()
		r.spares.close()
		r.poller.close()
		r.abandonWatches()
		r.watchers.Wait()
		// Closing the files releases the locks.
		r.agentLock.Close()
		r.lock.Close()
	})
	return nil
}

func (r *Runtime) isClosed() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}

// LogPath is where the CRI log of the attempt-th instance of container
// lives. It does not say whether the file exists.
func (r *Runtime) LogPath(podUID types.UID, container string, attempt int) string {
	return filepath.Join(r.podDir(podUID), "logs", container, strconv.Itoa(attempt)+".log")
}

func (r *Runtime) podsDir() string { return filepath.Join(r.root, "pods") }

func (r *Runtime) podDir(uid types.UID) string {
	return filepath.Join(r.podsDir(), string(uid))
}

func (r *Runtime) volumesDir(uid types.UID) string { return filepath.Join(r.podDir(uid), "volumes") }

func (r *Runtime) volumeDir(uid types.UID, volume string) string {
	return filepath.Join(r.volumesDir(uid), volume)
}

func (r *Runtime) instancesDir(uid types.UID) string {
	return filepath.Join(r.podDir(uid), "instances")
}

func (r *Runtime) instanceDir(uid types.UID, id string) string {
	return filepath.Join(r.instancesDir(uid), id)
}

// orderDir is the directory the pod's shims share for its stop order
// (shim.Order.PodDir).
func (r *Runtime) orderDir(uid types.UID) string { return filepath.Join(r.podDir(uid), "order") }

// instance is one started container instance, running or exited.
type instance struct {
	id        string
	podUID    types.UID
	container string
	attempt   int
	pod       *model.Pod // for Output
	dir       string     // its state directory
	logPath   string
	startedAt time.Time // zero if it never started
	// proc is its container's main process (the shim's container.json),
	// zero if it never started: an exec joins its namespaces.
	proc shim.Ident
	// termFile is its termination-message file, "" when it has none.
	termFile string
	// env is the environment its container started with ("NAME=value"),
	// which an exec in it gets too; nil when unknown.
	env []string
	// cgroup is its container's cgroup, nil without cgroups.
	cgroup *cgroups.Placement

	mu   sync.Mutex
	exit *runtime.ExitStatus // nil while it runs
}

// newInstance is the instance of spec in dir, whose container started as
// started (zero if it never did). pod is the instance's pod, or nil to make
// a stand-in from the spec.
func newInstance(spec *shim.Spec, dir string, pod *model.Pod, started shim.Started) *instance {
	if pod == nil {
		pod = &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: spec.PodName, Namespace: spec.PodNamespace, UID: types.UID(spec.PodUID),
		}}}
	}
	return &instance{
		id:        spec.ID,
		podUID:    types.UID(spec.PodUID),
		container: spec.Container,
		attempt:   spec.Attempt,
		pod:       pod,
		dir:       dir,
		logPath:   spec.LogPath,
		startedAt: started.StartedAt,
		proc:      started.Process,
		termFile:  spec.TerminationMessage.File,
		cgroup:    spec.Process.Cgroup,
		env:       spec.Process.Env,
	}
}

// logger is log with the instance's keys. It is made when something is
// logged, not kept: a logger with attributes holds a copy of them, and
// thousands of instances log nothing for hours.
func (in *instance) logger(log *slog.Logger) *slog.Logger {
	return log.With("pod", in.pod.Key(), "podUID", in.podUID, "container", in.container, "id", in.id)
}

func (in *instance) exitStatus() *runtime.ExitStatus {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.exit
}

func (in *instance) setExit(st runtime.ExitStatus) {
	in.mu.Lock()
	in.exit = &st
	in.mu.Unlock()
}

func (in *instance) status() runtime.ContainerStatus {
	st := runtime.ContainerStatus{
		PodUID:    in.podUID,
		Container: in.container,
		Attempt:   in.attempt,
		ID:        in.id,
		StartedAt: in.startedAt,
		LogPath:   in.logPath,
	}
	if exit := in.exitStatus(); exit != nil {
		e := *exit
		st.Exit = &e
	}
	return st
}

// Signal sends sig to every process of the instance's process group,
// through its shim, which never lets a signal reach a group whose ID was
// reused. It returns once the shim has the request. Signalling an instance
// that already exited does nothing and is not an error. An ID the runtime
// does not know (or forgot when its pod was cleaned up) is
// runtime.ErrNotFound. ctx is not used: sending a signal does not block.
func (r *Runtime) Signal(_ context.Context, id string, sig syscall.Signal) error {
	r.mu.Lock()
	in := r.instances[id]
	r.mu.Unlock()
	if in == nil {
		return fmt.Errorf("signal container %s: %w", id, runtime.ErrNotFound)
	}
	if in.exitStatus() != nil {
		return nil
	}
	err := shim.Signal(in.dir, sig)
	if err != nil && !errors.Is(err, shim.ErrExited) {
		return fmt.Errorf("signal container %s (%s): %w", id, in.container, err)
	}
	return nil
}

// ListContainers returns every instance of the pod the runtime knows,
// running or exited, until CleanupPod: those it started and those it found
// when it attached. They are sorted by container name, then attempt, then
// start time. StartedAt is zero for an instance that never started (exit
// reason runtime.ReasonStartError). An instance's Exit is set once the runtime
// knows it: found at attach time, or read when its shim exited, just
// before its exit event is sent. The caller owns the result. ctx is not
// used: the runtime answers from memory.
func (r *Runtime) ListContainers(_ context.Context, podUID types.UID) ([]runtime.ContainerStatus, error) {
	r.mu.Lock()
	var list []runtime.ContainerStatus
	for _, in := range r.byPod[podUID] {
		list = append(list, in.status())
	}
	r.mu.Unlock()
	runtime.SortContainerStatuses(list)
	return list, nil
}

// ListPods returns, sorted, the UIDs of the pods that have state under the
// root other than logs (container instances or volumes): the pods
// CleanupPod was not called for yet, including those of an agent that
// died. The agent cleans up those it does not know any more.
func (r *Runtime) ListPods() ([]types.UID, error) {
	entries, err := os.ReadDir(r.podsDir())
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	var uids []types.UID
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		uid := types.UID(e.Name())
		if r.cgroups != nil && r.cgroups.hasPod(uid) {
			// A cgroup whose removal failed is removed again.
			uids = append(uids, uid)
			continue
		}
		for _, sub := range []string{r.instancesDir(uid), filepath.Join(r.podDir(uid), "volumes")} {
			_, err := os.Lstat(sub)
			if err == nil {
				uids = append(uids, uid)
				break
			}
			if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("list pods: %w", err)
			}
		}
	}
	return uids, nil
}

func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("container ID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
