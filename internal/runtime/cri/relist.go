package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

// Exits are found by relisting, the way the kubelet's PLEG does it:
//
//	StartContainer ──> tracked (created) ──> started: tracked (running) ──> poke
//	relist: ListContainers(state RUNNING, our labels) ──> tracked running
//	        instances missing from the list ──> ContainerStatus each
//	        ──> exited (or gone): untracked ──> log read to its end for
//	        Output ──> runtime.Event
//
// The steady state, where nothing changed, costs one ListContainers of the
// running containers and a map lookup per container. A relist runs every
// RelistPeriod, at once when poked (a start, a stop, an event from the
// runtime's stream), and after a start a few more at 25 ms, 50 ms, 100 ms...
// up to the period, so that a short-lived container's exit is seen fast.

// firstFastRelist is the first delay of the quick relists after a poke.
const firstFastRelist = 25 * time.Millisecond

// instState is where a tracked instance stands.
type instState int

const (
	// stateCreated: created, StartContainer not returned yet. The relist
	// leaves it alone.
	stateCreated instState = iota + 1
	// stateRunning: started (or found running); the relist watches it.
	stateRunning
	// stateRemoving: its start failed and it is being removed; the relist
	// leaves it alone.
	stateRemoving
)

func (s instState) String() string {
	switch s {
	case stateCreated:
		return "created"
	case stateRunning:
		return "running"
	case stateRemoving:
		return "removing"
	default:
		return fmt.Sprintf("instState(%d)", int(s))
	}
}

// instance is a container instance the Runtime watches for its exit.
// Its fields are set before it is shared, but state, seen and follower,
// which r.mu guards.
type instance struct {
	id        string
	podUID    types.UID
	container string
	attempt   int
	pod       *model.Pod // for Output
	logPath   string

	state    instState
	seen     uint64 // the last relist that listed it running
	follower *crilog.Follower
}

// running marks in as started, from which on the relist watches it, and
// starts following its log from offset for Output.
func (r *Runtime) running(in *instance, offset int64) {
	var f *crilog.Follower
	if r.output != nil {
		f = r.follow(in, offset)
	}
	r.mu.Lock()
	in.state = stateRunning
	in.follower = f
	closed := r.closed
	r.mu.Unlock()
	if closed {
		// Close did not see this follower.
		f.Stop()
	}
}

// pokeRelist asks for a relist now.
func (r *Runtime) pokeRelist() {
	select {
	case r.poke <- struct{}{}:
	default:
	}
}

// period is the relist period: longer while the event stream delivers.
func (r *Runtime) period() time.Duration {
	if r.streaming.Load() {
		return r.relistPeriod * streamRelistFactor
	}
	return r.relistPeriod
}

func (r *Runtime) relistLoop() {
	defer r.wg.Done()
	var fast time.Duration // the next quick relist's delay; 0: none
	failing := false
	for {
		delay := r.period()
		if fast > 0 && fast < delay {
			delay = fast
			fast *= 2
		} else {
			fast = 0
		}
		t := r.clock.NewTimer(delay)
		if r.loopWaiting != nil {
			r.loopWaiting(delay)
		}
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-r.poke:
			t.Stop()
			fast = firstFastRelist
		case <-t.C():
		}
		err := r.relist(r.ctx)
		switch {
		case err != nil && r.ctx.Err() != nil:
			return
		case err != nil && !failing:
			// Logged once per outage, not once a period.
			r.log.Warn("relist the containers", "err", err)
			failing = true
		case err == nil && failing:
			r.log.Info("relisting the containers works again")
			failing = false
		}
	}
}

// relist finds the exits among the tracked running instances and reports
// them; it also starts watching running containers of this root that it
// did not know (a start whose answer was lost). One relist runs at a time.
func (r *Runtime) relist(ctx context.Context) error {
	r.relistMu.Lock()
	defer r.relistMu.Unlock()
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: r.selector(),
	}})
	cancel()
	if err != nil {
		return fmt.Errorf("list running containers: %w", err)
	}
	var unknown []*runtimeapi.Container
	var missing []*instance
	r.mu.Lock()
	r.relistGen++
	gen := r.relistGen
	for _, c := range resp.Containers {
		if in, ok := r.tracked[c.Id]; ok {
			in.seen = gen
		} else {
			unknown = append(unknown, c)
		}
	}
	for _, in := range r.tracked {
		if in.state == stateRunning && in.seen != gen {
			missing = append(missing, in)
		}
	}
	r.mu.Unlock()

	for _, c := range unknown {
		r.adopt(c)
	}
	var errs []error
	for _, in := range missing {
		exit, err := r.exitOf(ctx, in)
		if err != nil {
			// Tried again at the next relist.
			errs = append(errs, err)
			continue
		}
		if exit == nil {
			continue
		}
		r.mu.Lock()
		mine := r.tracked[in.id] == in
		if mine {
			delete(r.tracked, in.id)
		}
		r.mu.Unlock()
		if mine {
			r.deliver(in, *exit)
		}
	}
	return errors.Join(errs...)
}

// exitOf asks the runtime how a tracked instance that is not listed
// running any more stands: its exit, or nil when it still runs after all
// (it started after the list was taken). An instance the runtime lost gets
// exit code 137, runtime.ReasonStatusUnknown.
func (r *Runtime) exitOf(ctx context.Context, in *instance) (*runtime.ExitStatus, error) {
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ContainerStatus(cctx, &runtimeapi.ContainerStatusRequest{ContainerId: in.id})
	cancel()
	if isNotFound(err) {
		r.log.Warn("a running container vanished from the runtime", "podUID", in.podUID, "container", in.container, "id", in.id)
		return &runtime.ExitStatus{
			ExitCode:   137,
			Reason:     runtime.ReasonStatusUnknown,
			Message:    "the container was removed from the runtime before its exit was seen",
			FinishedAt: r.clock.Now(),
		}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("status of container %s: %w", in.id, err)
	}
	st := resp.GetStatus()
	if st.GetState() != runtimeapi.ContainerState_CONTAINER_EXITED {
		return nil, nil
	}
	exit := exitStatus(st, in.logPath)
	return &exit, nil
}

// exitStatus is how an exited container ended, as the runtime reports it,
// with its termination message read from its file or from its log at
// logPath (terminationMessage; the runtime's own message, which containerd
// sets only for a start error, comes first). A finish time before the start
// time (containerd 1.6 stamps the start after the process runs and the exit
// from the shim's event, so a container that exits at once can seem to end
// before it started) is the start time.
func exitStatus(st *runtimeapi.ContainerStatus, logPath string) runtime.ExitStatus {
	e := runtime.ExitStatus{ExitCode: st.ExitCode, Reason: runtime.ExitReason(st.Reason), Message: st.Message}
	if st.FinishedAt > 0 {
		e.FinishedAt = time.Unix(0, max(st.FinishedAt, st.StartedAt))
	}
	if e.Reason == "" {
		e.Reason = runtime.ReasonError
		if e.ExitCode == 0 {
			e.Reason = runtime.ReasonCompleted
		}
	}
	if p := st.GetLogPath(); p != "" {
		logPath = p
	}
	e.Message = terminationMessage(st).Message(e, logPath)
	return e
}

// deliver reports the exit of in, once its log was read to the end for
// Output, from a goroutine of its own: a slow consumer or Output never
// holds up the relist.
func (r *Runtime) deliver(in *instance, exit runtime.ExitStatus) {
	ev := runtime.Event{PodUID: in.podUID, Container: in.container, ID: in.id, Exit: exit}
	r.mu.Lock()
	f := in.follower
	r.mu.Unlock()
	started := r.goTracked(func() {
		f.Finish()
		r.log.Debug("container exited", "podUID", in.podUID, "container", in.container, "id", in.id,
			"exitCode", exit.ExitCode, "reason", exit.Reason)
		select {
		case r.events <- ev:
		case <-r.ctx.Done():
			r.log.Debug("runtime closed; exit event dropped", "podUID", in.podUID, "container", in.container, "id", in.id)
		}
	})
	if !started {
		f.Stop()
	}
}

// attach starts watching the running containers an earlier Runtime on the
// root left. Those that exited meanwhile are not reported on Events.
func (r *Runtime) attach(ctx context.Context) error {
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: r.selector(),
	}})
	cancel()
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	n := 0
	for _, c := range resp.Containers {
		switch c.State {
		case runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_UNKNOWN:
			// An unknown state (the runtime is still finding out) is
			// settled by the relist's ContainerStatus.
			r.adopt(c)
			n++
		}
	}
	r.log.Debug("attached to running containers", "count", n, "total", len(resp.Containers))
	return nil
}

// adopt starts watching a running container this Runtime did not start,
// following its log from its current end for Output.
func (r *Runtime) adopt(c *runtimeapi.Container) {
	id := identify(c.Labels, c.Metadata)
	in := &instance{
		id: c.Id, podUID: id.podUID, container: id.container, attempt: id.attempt,
		pod: &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{
			Name: id.podName, Namespace: id.podNamespace, UID: id.podUID,
		}}},
		logPath: r.LogPath(id.podUID, id.container, id.attempt),
		state:   stateRunning,
	}
	offset, err := hostfs.FileSize(in.logPath)
	if err != nil {
		r.log.Warn("size of an adopted container's log", "podUID", in.podUID, "container", in.container, "id", in.id, "err", err)
	}
	r.mu.Lock()
	_, known := r.tracked[c.Id]
	if !known {
		r.tracked[c.Id] = in
	}
	r.mu.Unlock()
	if known {
		return
	}
	r.log.Debug("watching a running container", "podUID", in.podUID, "container", in.container, "id", in.id)
	r.running(in, offset)
}

// follow starts following in's log from offset for Output. Close stops
// the followers of running instances itself, and lets those of exited
// ones read to the end.
func (r *Runtime) follow(in *instance, offset int64) *crilog.Follower {
	log := r.log.With("pod", in.pod.Key(), "podUID", in.podUID, "container", in.container, "id", in.id)
	return crilog.Follow(in.logPath, offset, log, func(stream string, line []byte) {
		r.output(in.pod, in.container, stream, line)
	})
}

// watchEvents follows the runtime's container event stream, where it has
// one, and pokes a relist for each stop it reports; the relist then runs
// at a longer period as a safety net. A runtime without the stream
// (Unimplemented: containerd 1.6) is relisted at the normal period.
func (r *Runtime) watchEvents() {
	defer r.wg.Done()
	backoff := time.Second
	for {
		err := r.followEvents()
		r.streaming.Store(false)
		if r.ctx.Err() != nil {
			return
		}
		if status.Code(err) == codes.Unimplemented {
			r.log.Debug("the CRI runtime has no container event stream; relisting", "period", r.relistPeriod)
			return
		}
		r.log.Debug("container event stream broke; relisting meanwhile", "err", err, "retryIn", backoff)
		t := r.clock.NewTimer(backoff)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
		backoff = min(backoff*2, 30*time.Second)
	}
}

// followEvents reads the event stream until it breaks.
func (r *Runtime) followEvents() error {
	stream, err := r.rt.GetContainerEvents(r.ctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		return err
	}
	for {
		ev, err := stream.Recv()
		if err != nil {
			return err
		}
		if !r.streaming.Swap(true) {
			r.log.Debug("following the CRI runtime's container events", "relistPeriod", r.period())
		}
		if ev.ContainerEventType == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
			r.pokeRelist()
		}
	}
}

// ListContainers returns every instance of the pod the CRI runtime has,
// running or exited, until CleanupPod (and but the last exited one of each
// container, which StartContainer removes when the next attempt starts),
// sorted by container name, then attempt, then start time. An instance
// created but never started is reported exited with code 128,
// runtime.ReasonStartError. The caller owns the result.
func (r *Runtime) ListContainers(ctx context.Context, podUID types.UID) ([]runtime.ContainerStatus, error) {
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: r.selector(LabelPodUID, string(podUID)),
	}})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("list containers of pod %s: %w", podUID, err)
	}
	list := make([]runtime.ContainerStatus, 0, len(resp.Containers))
	for _, c := range resp.Containers {
		cctx, cancel := r.call(ctx)
		sresp, err := r.rt.ContainerStatus(cctx, &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		cancel()
		if isNotFound(err) {
			continue // removed meanwhile
		}
		if err != nil {
			return nil, fmt.Errorf("list containers of pod %s: status of %s: %w", podUID, c.Id, err)
		}
		st := sresp.GetStatus()
		id := identify(c.Labels, c.Metadata)
		cs := runtime.ContainerStatus{
			PodUID:    podUID,
			Container: id.container,
			Attempt:   id.attempt,
			ID:        c.Id,
			LogPath:   st.GetLogPath(),
		}
		if cs.LogPath == "" {
			cs.LogPath = r.LogPath(podUID, id.container, id.attempt)
		}
		if st.GetStartedAt() > 0 {
			cs.StartedAt = time.Unix(0, st.StartedAt)
		}
		switch st.GetState() {
		case runtimeapi.ContainerState_CONTAINER_EXITED:
			exit := exitStatus(st, cs.LogPath)
			cs.Exit = &exit
		case runtimeapi.ContainerState_CONTAINER_CREATED:
			if r.isTracked(c.Id) {
				continue // being started right now
			}
			cs.Exit = &runtime.ExitStatus{
				ExitCode: 128, Reason: runtime.ReasonStartError,
				Message:    "the container was created but never started",
				FinishedAt: time.Unix(0, st.GetCreatedAt()),
			}
		}
		list = append(list, cs)
	}
	runtime.SortContainerStatuses(list)
	return list, nil
}

// ListPods returns, sorted, the UIDs of the pods that have sandboxes or
// containers of this root in the CRI runtime, or volumes or termination
// message files under the root, or a cgroup (with Config.Cgroups) of a
// pod with a directory under the root:
// the pods CleanupPod was not called for yet, including those of an agent
// that died. The agent cleans up those it does not know any more. It
// bounds its calls with the call timeout.
func (r *Runtime) ListPods() ([]types.UID, error) {
	ctx, cancel := r.call(r.ctx)
	defer cancel()
	seen := map[types.UID]struct{}{}
	sbs, err := r.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: r.selector()},
	})
	if err != nil {
		return nil, fmt.Errorf("list pods: sandboxes: %w", err)
	}
	for _, sb := range sbs.Items {
		if uid := sb.Labels[LabelPodUID]; uid != "" {
			seen[types.UID(uid)] = struct{}{}
		}
	}
	ctrs, err := r.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: r.selector()},
	})
	if err != nil {
		return nil, fmt.Errorf("list pods: containers: %w", err)
	}
	for _, c := range ctrs.Containers {
		if uid := c.Labels[LabelPodUID]; uid != "" {
			seen[types.UID(uid)] = struct{}{}
		}
	}
	entries, err := os.ReadDir(r.podsDir())
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	for _, e := range entries {
		uid := types.UID(e.Name())
		if r.hasPodCgroup(uid) {
			// A cgroup whose removal failed is removed again.
			seen[uid] = struct{}{}
			continue
		}
		for _, dir := range []string{r.volumesDir(uid), r.messagesDir(uid)} {
			if _, err := os.Lstat(dir); err == nil {
				seen[uid] = struct{}{}
			} else if !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("list pods: %w", err)
			}
		}
	}
	uids := make([]types.UID, 0, len(seen))
	for uid := range seen {
		uids = append(uids, uid)
	}
	slices.Sort(uids)
	return uids, nil
}
