package process

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// eventBuffer is how many exit events wait for the consumer before watchers
// start to wait for it.
const eventBuffer = 128

// errClosed is returned by StartContainer and Exec after Close.
var errClosed = errors.New("process runtime is closed")

// Config is what the process runtime needs from the agent.
type Config struct {
	// Root is the runtime's state directory: Root/pods/<podUID>/volumes/<name>
	// for emptyDirs, Root/pods/<podUID>/logs/<container>/<attempt>.log for
	// logs.
	Root string
	// Clock stamps start and finish times and log records. Default: the
	// real clock.
	Clock clock.Clock
	// Logger gets the runtime's own messages. Default: discarded.
	Logger *slog.Logger
	// Output, when set, also receives every line a container writes (lines
	// longer than 16 KiB in 16 KiB pieces), for `podward run`, which prints
	// it prefixed by the container name. It is called from the runtime's
	// copy goroutines, one per stream and instance, and must not block for
	// long: the container's writes wait for it. line is only valid during
	// the call.
	Output func(pod *model.Pod, container string, stream string, line []byte)
}

// Runtime runs containers as host processes. All its methods are safe for
// concurrent use.
type Runtime struct {
	root   string
	clock  clock.Clock
	log    *slog.Logger
	output func(pod *model.Pod, container string, stream string, line []byte)
	euid   func() int // os.Geteuid; tests pretend not to be root

	events    chan runtime.Event
	done      chan struct{} // closed by Close
	closeOnce sync.Once

	mountpoints mountpoints

	mu        sync.Mutex
	instances map[string]*instance // by ID, until their pod is cleaned up
}

// New returns a runtime keeping its state under cfg.Root, which it creates.
func New(cfg Config) (*Runtime, error) {
	if cfg.Root == "" {
		return nil, errors.New("process runtime: Config.Root is required")
	}
	root, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("process runtime root: %w", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "pods"), 0o750); err != nil {
		return nil, fmt.Errorf("process runtime root: %w", err)
	}
	r := &Runtime{
		root:        root,
		clock:       cfg.Clock,
		log:         cfg.Logger,
		output:      cfg.Output,
		euid:        os.Geteuid,
		events:      make(chan runtime.Event, eventBuffer),
		done:        make(chan struct{}),
		mountpoints: mountpoints{created: make(map[string]*createdPath)},
		instances:   make(map[string]*instance),
	}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

// Events reports every container instance's exit exactly once, after all
// its output is in its log. The channel is buffered and never closed; no
// event is dropped while the Runtime is open.
func (r *Runtime) Events() <-chan runtime.Event { return r.events }

// Close stops the runtime's own work: watchers of instances that exit from
// now on drop their event instead of waiting for a consumer, and
// StartContainer and Exec fail. Close never stops a container. It is
// idempotent.
func (r *Runtime) Close() error {
	r.closeOnce.Do(func() { close(r.done) })
	return nil
}

func (r *Runtime) closed() bool {
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

func (r *Runtime) podDir(uid types.UID) string {
	return filepath.Join(r.root, "pods", string(uid))
}

func (r *Runtime) volumeDir(uid types.UID, volume string) string {
	return filepath.Join(r.podDir(uid), "volumes", volume)
}

// checkUID makes sure a pod UID is usable as a directory name.
func checkUID(uid types.UID) error {
	s := string(uid)
	if s == "" || s == "." || s == ".." || strings.ContainsAny(s, "/\x00") {
		return fmt.Errorf("pod UID %q is not usable as a directory name", s)
	}
	return nil
}

// instance is one started container instance.
type instance struct {
	id        string
	podUID    types.UID
	container string
	pgid      int // the main process's PID, leader of its group

	mu sync.Mutex
	// reaped is set just before the main process is reaped: from then on
	// its PID, and so the group ID, may belong to someone else.
	reaped bool
}

// signalGroup sends sig to the instance's process group unless its leader
// was reaped. A group that is gone is not an error.
func (in *instance) signalGroup(sig syscall.Signal) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.reaped {
		return nil
	}
	if err := unix.Kill(-in.pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return os.NewSyscallError("kill", err)
	}
	return nil
}

func (in *instance) markReaped() {
	in.mu.Lock()
	in.reaped = true
	in.mu.Unlock()
}

func (in *instance) isReaped() bool {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.reaped
}

// Signal sends sig to every process of the instance's process group.
// Signalling an instance that already exited does nothing and is not an
// error. An ID the runtime does not know (or forgot when its pod was cleaned
// up) is runtime.ErrNotFound. ctx is not used: sending a signal does not
// block.
func (r *Runtime) Signal(_ context.Context, id string, sig syscall.Signal) error {
	r.mu.Lock()
	in := r.instances[id]
	r.mu.Unlock()
	if in == nil {
		return fmt.Errorf("signal container %s: %w", id, runtime.ErrNotFound)
	}
	if err := in.signalGroup(sig); err != nil {
		return fmt.Errorf("signal container %s (%s): %w", id, in.container, err)
	}
	return nil
}

func newID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("container ID: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
