// Package fake is an in-memory container runtime for tests of the pod
// worker and the agent: it records every call, lets a test make containers
// exit, and can hold a setup open to exercise races.
package fake

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// The fake has the contract and what a restarted agent needs; ImageRuntime
// adds images.
var (
	_ runtime.Runtime         = (*Runtime)(nil)
	_ runtime.ContainerLister = (*Runtime)(nil)
	_ runtime.PodLister       = (*Runtime)(nil)
	_ runtime.PodLogRemover   = (*Runtime)(nil)
	_ runtime.ImageService    = (*ImageRuntime)(nil)
	_ runtime.ResourceUpdater = (*Runtime)(nil)
)

// Runtime is a fake container runtime. Its zero value is not usable; use New.
type Runtime struct {
	clock  clock.PassiveClock
	events chan runtime.Event

	// PrepareHook, when set, runs inside PreparePod (e.g. to block until
	// ctx is done, like a slow pull).
	PrepareHook func(ctx context.Context) error
	// StartHook, when set, runs inside StartContainer before the start.
	StartHook func(ctx context.Context, ref model.ContainerRef) error
	// CheckErr is what Check returns.
	CheckErr error
	// CheckHook, when set, is what Check returns instead (e.g. to refuse
	// one container of a pod).
	CheckHook func(pod *model.Pod) error
	// CleanupHook, when set, runs inside CleanupPod first (e.g. to block
	// like a slow removal of a big volume).
	CleanupHook func(ctx context.Context)
	// ExecHook, when set, runs inside Exec (e.g. to block like a slow hook)
	// and gives its result.
	ExecHook func(ctx context.Context, ref model.ContainerRef, cmd []string) ([]byte, int, error)

	mu        sync.Mutex
	calls     []string
	instances map[string]*instance
	ignore    map[string]bool // container name -> ignores its stop signal
	changed   chan struct{}
	nextID    int
	// logs are the pods that have logs, with their last write: every
	// start writes one, and they outlive CleanupPod and a reboot.
	logs map[types.UID]time.Time
	// resizeErr, when set, is what UpdateContainerResources returns.
	resizeErr error
}

// FailResize makes UpdateContainerResources fail with err (a limit the
// kernel refuses), or succeed again with nil.
func (r *Runtime) FailResize(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.resizeErr = err
}

type instance struct {
	podUID    types.UID
	name      string
	id        string
	attempt   int
	running   bool
	startedAt time.Time
	exit      *runtime.ExitStatus
}

// New returns a fake runtime that stamps times from c.
func New(c clock.PassiveClock) *Runtime {
	return &Runtime{
		clock:     c,
		events:    make(chan runtime.Event, 1024),
		instances: map[string]*instance{},
		ignore:    map[string]bool{},
		changed:   make(chan struct{}),
		logs:      map[types.UID]time.Time{},
	}
}

// Events carries exits, like a real runtime's.
func (r *Runtime) Events() <-chan runtime.Event { return r.events }

// record appends a call and wakes every waiter; r.mu must be held.
func (r *Runtime) record(format string, args ...any) {
	r.calls = append(r.calls, fmt.Sprintf(format, args...))
	close(r.changed)
	r.changed = make(chan struct{})
}

// Note records a line among the calls. It is for a test's wrapper of the
// fake: what the wrapper does itself (a listing it fails, a probe it is
// asked for) then reads in order with the fake's own calls.
func (r *Runtime) Note(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record(format, args...)
}

// Changed returns a channel closed at the next recorded call or exit.
func (r *Runtime) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

// Calls returns the calls so far, e.g. "start app", "signal app terminated".
func (r *Runtime) Calls() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.calls...)
}

// CountCalls returns how many of the calls so far are call, e.g. "start app".
func (r *Runtime) CountCalls(call string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, c := range r.calls {
		if c == call {
			n++
		}
	}
	return n
}

// IgnoreStopSignal makes the named container survive anything but SIGKILL,
// like a shell that is PID 1.
func (r *Runtime) IgnoreStopSignal(name string) {
	r.mu.Lock()
	r.ignore[name] = true
	r.mu.Unlock()
}

// Running lists the names of running containers of a pod.
func (r *Runtime) Running(uid types.UID) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, in := range r.instances {
		if in.podUID == uid && in.running {
			out = append(out, in.name)
		}
	}
	return out
}

// LogPath names a log file that the fake never writes.
func (r *Runtime) LogPath(podUID types.UID, container string, attempt int) string {
	return fmt.Sprintf("/nonexistent/%s/%s/%d.log", podUID, container, attempt)
}

// Check returns CheckHook's error when it is set, else CheckErr.
func (r *Runtime) Check(pod *model.Pod) error {
	if r.CheckHook != nil {
		return r.CheckHook(pod)
	}
	return r.CheckErr
}

// PreparePod records the call and runs PrepareHook.
func (r *Runtime) PreparePod(ctx context.Context, pod *model.Pod) error {
	if r.PrepareHook != nil {
		if err := r.PrepareHook(ctx); err != nil {
			return err
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.record("prepare")
	return nil
}

// StartContainer starts a fake instance; with ctx done it starts nothing.
func (r *Runtime) StartContainer(ctx context.Context, pod *model.Pod, ref model.ContainerRef, attempt int) (runtime.Container, error) {
	if r.StartHook != nil {
		if err := r.StartHook(ctx, ref); err != nil {
			return runtime.Container{}, err
		}
	}
	if err := ctx.Err(); err != nil {
		return runtime.Container{}, err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	id := fmt.Sprintf("%s-%d", ref.Name, r.nextID)
	r.instances[id] = &instance{podUID: pod.UID, name: ref.Name, id: id, attempt: attempt, running: true, startedAt: r.clock.Now()}
	r.logs[pod.UID] = r.clock.Now()
	r.record("start %s", ref.Name)
	return runtime.Container{ID: id, StartedAt: r.clock.Now()}, nil
}

// Signal records the signal; SIGKILL, and any signal to a container that
// does not ignore it, ends the instance with 128+signal.
func (r *Runtime) Signal(ctx context.Context, id string, sig syscall.Signal) error {
	r.mu.Lock()
	in, ok := r.instances[id]
	if !ok {
		r.mu.Unlock()
		return runtime.ErrNotFound
	}
	r.record("signal %s %s", in.name, sig)
	exits := in.running && (sig == syscall.SIGKILL || !r.ignore[in.name])
	r.mu.Unlock()
	if exits {
		r.exit(id, 128+int32(sig), true)
	}
	return nil
}

// UpdateContainerResources records "resize NAME cpu=LIMIT memory=LIMIT"
// with the container's limits in pod's spec, or fails (FailResize).
func (r *Runtime) UpdateContainerResources(ctx context.Context, pod *model.Pod, ref model.ContainerRef, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	in, ok := r.instances[id]
	if !ok || !in.running {
		return runtime.ErrNotFound
	}
	if r.resizeErr != nil {
		r.record("resize %s failed", in.name)
		return r.resizeErr
	}
	lim := pod.Container(ref).Resources.Limits
	r.record("resize %s cpu=%s memory=%s", in.name, lim.Cpu(), lim.Memory())
	return nil
}

// ListContainers reports every instance of a pod, as a runtime that
// survives the agent does after a restart.
func (r *Runtime) ListContainers(ctx context.Context, uid types.UID) ([]runtime.ContainerStatus, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []runtime.ContainerStatus
	for _, in := range r.instances {
		if in.podUID != uid {
			continue
		}
		st := runtime.ContainerStatus{PodUID: uid, Container: in.name, Attempt: in.attempt, ID: in.id, StartedAt: in.startedAt}
		if in.exit != nil {
			e := *in.exit
			st.Exit = &e
		}
		out = append(out, st)
	}
	return out, nil
}

// Exec records the hook command and succeeds, or runs ExecHook.
func (r *Runtime) Exec(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string) ([]byte, int, error) {
	r.mu.Lock()
	r.record("exec %s %v", ref.Name, cmd)
	hook := r.ExecHook
	r.mu.Unlock()
	if hook != nil {
		return hook(ctx, ref, cmd)
	}
	return nil, 0, nil
}

// CleanupPod forgets the pod's instances and records the call; like a real
// runtime it refuses while one of them runs.
func (r *Runtime) CleanupPod(ctx context.Context, pod *model.Pod) error {
	if r.CleanupHook != nil {
		r.CleanupHook(ctx)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, in := range r.instances {
		if in.podUID == pod.UID && in.running {
			return fmt.Errorf("container %s of pod %s still runs", in.name, pod.UID)
		}
	}
	for id, in := range r.instances {
		if in.podUID == pod.UID {
			delete(r.instances, id)
		}
	}
	r.record("cleanup")
	return nil
}

// RemovePodLogs forgets the pod's logs and records the call; like a real
// runtime it refuses while it has instances of the pod (before CleanupPod).
func (r *Runtime) RemovePodLogs(ctx context.Context, uid types.UID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, in := range r.instances {
		if in.podUID == uid {
			return fmt.Errorf("pod %s is not cleaned up", uid)
		}
	}
	delete(r.logs, uid)
	r.record("remove logs %s", uid)
	return nil
}

// PodLogs names the pods that have logs, with their last write.
func (r *Runtime) PodLogs() (map[types.UID]time.Time, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.logs), nil
}

// ListPods names every pod the fake has instances of.
func (r *Runtime) ListPods() ([]types.UID, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[types.UID]bool{}
	var out []types.UID
	for _, in := range r.instances {
		if !seen[in.podUID] {
			seen[in.podUID] = true
			out = append(out, in.podUID)
		}
	}
	return out, nil
}

// Reboot makes every instance vanish without an event, as a machine
// reboot does.
func (r *Runtime) Reboot() {
	r.mu.Lock()
	defer r.mu.Unlock()
	clear(r.instances)
	r.record("reboot")
}

// Exit makes the running instance of the named container of pod exit.
func (r *Runtime) Exit(uid types.UID, name string, code int32) { r.exitNamed(uid, name, code, true) }

// ExitQuietly makes the container exit without an event, as an exit that
// happens while the agent is down: only ListContainers tells of it.
func (r *Runtime) ExitQuietly(uid types.UID, name string, code int32) {
	r.exitNamed(uid, name, code, false)
}

func (r *Runtime) exitNamed(uid types.UID, name string, code int32, notify bool) {
	r.mu.Lock()
	var id string
	for i, in := range r.instances {
		if in.podUID == uid && in.name == name && in.running {
			id = i
		}
	}
	r.mu.Unlock()
	if id == "" {
		panic("fake: no running container " + name)
	}
	r.exit(id, code, notify)
}

func (r *Runtime) exit(id string, code int32, notify bool) {
	r.mu.Lock()
	in := r.instances[id]
	if !in.running {
		r.mu.Unlock()
		return
	}
	in.running = false
	r.record("exit %s %d", in.name, code)
	ev := runtime.Event{PodUID: in.podUID, Container: in.name, ID: id, Exit: runtime.ExitStatus{ExitCode: code, Reason: reason(code), FinishedAt: r.clock.Now()}}
	in.exit = &ev.Exit
	r.mu.Unlock()
	if notify {
		r.events <- ev
	}
}

func reason(code int32) runtime.ExitReason {
	if code == 0 {
		return runtime.ReasonCompleted
	}
	return runtime.ReasonError
}
