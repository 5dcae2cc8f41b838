package agent

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/google/uuid"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/podworker"
	"github.com/podward/podward/internal/prober"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/timeline"
)

// ErrInvalid wraps a pod that failed validation or cannot run on this
// runtime: bad input, nothing was started.
var ErrInvalid = errors.New("invalid pod")

// ErrNotFound is returned for a pod the agent does not know.
var ErrNotFound = errors.New("pod not found")

// ErrAlreadyExists is returned when creating a pod whose namespace/name is
// taken by a pod that is not terminated.
var ErrAlreadyExists = errors.New("pod already exists")

// Clock is what the agent needs of time: timers for the pod workers,
// tickers for the probes. clock.RealClock and the fake clock have both.
type Clock interface {
	clock.WithDelayedExecution
	clock.WithTicker
}

// Config wires an Agent.
type Config struct {
	Runtime  runtime.Runtime
	Clock    Clock
	Planner  planner.Config
	Logger   *slog.Logger
	NodeName string
	// NodeIP is the node's address: the pods' hostIP, and the podIP of
	// those on the host's network (a runtime.PodAddresser gives the
	// others theirs). Default 127.0.0.1.
	NodeIP string
	// EventsPerPod bounds the events kept per pod.
	EventsPerPod int
	// MaxEvents bounds the events kept in all; the oldest go first.
	MaxEvents int
	// KeepTerminatedPodLogs is how long the logs of a removed pod are kept
	// once its runtime clean-up is done, by a runtime that can remove them
	// (runtime.PodLogRemover): 0 (DefaultKeepTerminatedPodLogs) removes
	// them then, a negative value never.
	KeepTerminatedPodLogs time.Duration
	// Allocatable is the machine's allocatable resources (those a cluster's
	// Node reports); of them, cpu and memory are what a resize that asks
	// for more must fit in with the other pods' allocations (KEP-1287, see
	// podworker.Config.Allocatable). Nil: resizes are not checked.
	Allocatable v1.ResourceList
	// MaxPods is how many pods the agent runs at once, as the kubelet's
	// --max-pods (0: DefaultMaxPods). A pod created beyond it is rejected
	// (RejectedError, as one created while the node shuts down): in the
	// pod API it is Failed with reason OutOfpods; Sync returns the
	// rejection to its caller.
	MaxPods int
	// Store, when set, makes the agent durable: pods, their workers'
	// checkpoints and events survive a restart (see Recover).
	Store Store
	// RestartShutdownPods starts the pods a node shutdown terminated again
	// once the node no longer shuts down — after the reboot, or when the
	// shutdown is cancelled — as standalone mode wants (see
	// SetShuttingDown). Without it (cluster mode) they stay terminated, for
	// their controllers to replace. It needs a Store.
	RestartShutdownPods bool
	// Metrics, when set, receives what the agent and its pod workers
	// measure.
	Metrics Metrics
	// Objects reads what the pods reference besides their spec (the
	// runtime's own Objects): the agent tells its Getter which pods
	// reference what (objects.Registrar) and its Tokens which pods are
	// gone. Zero: nothing to tell.
	Objects runtime.Objects
	// Sysctls are the sysctls a pod may set (NewSysctlAllowlist: the safe
	// ones of the machine's kernel and the kubelet's
	// --allowed-unsafe-sysctls); a pod that sets another is rejected,
	// reason SysctlForbidden. Nil: the safe ones.
	Sysctls *SysctlAllowlist
}

// Metrics receives what the agent measures, and its pod workers'
// measures (podworker.Metrics). Its calls must not block.
type Metrics interface {
	podworker.Metrics
	// PodRestarted: a pod was started again under its UID after it had
	// terminated (a node shutdown that was cancelled, or a reboot); static
	// is the kubelet's label, true for a pod that is not the cluster's.
	PodRestarted(static bool)
}

// Agent is one node's pod engine.
type Agent struct {
	cfg      Config
	workers  *podworker.Workers
	recorder *events.Recorder
	history  *timeline.History // the pods' timelines (timeline.go)
	logs     *logCollector     // nil when the runtime keeps every log
	log      *slog.Logger
	health   *stateHealth
	usage    usageSamples // the last CPU samples of podward top (usage.go)

	ctx context.Context

	// specChangeMu serialises the changes of a running pod's spec (updateSpec's
	// callers: setEphemeral, setResources, SyncConditions), each a read,
	// check and write of one pod; never held with mu.
	specChangeMu sync.Mutex

	mu   sync.Mutex
	pods map[types.UID]*entry
	// forced are pods a forced delete (grace period 0) took out of the
	// pod API at once while their workers still stop their containers;
	// each is reaped like a deleted pod once terminated.
	forced  map[types.UID]*entry
	rv      uint64        // the last resource version handed out (bumpLocked)
	changes *changeLog    // the pods of the last changes, for the watches
	changed chan struct{} // closed and replaced on every change
	// final keeps the last status of removed pods, newest last, so that
	// whoever waited for a pod can still read how it ended.
	final      map[types.UID]*v1.Pod
	finalOrder []types.UID
	// orphans are pods being killed because the store no longer knows
	// them: their exits go to these channels instead of a worker.
	orphans map[types.UID]chan struct{}
	// shuttingDown: the node shuts down (SetShuttingDown); new pods are
	// refused.
	shuttingDown bool

	// bootOnce decides Rebooted once: whether the boot ID changed
	// (rebooted, or bootErr), and this boot's ID.
	bootOnce sync.Once
	rebooted bool
	bootErr  error
	bootID   string

	// wg counts the agent's goroutines; spawnMu orders a goroutine's
	// start (spawn) before Wait, or refuses it once the agent ends: pod
	// workers outlive a.wg and report to the agent until they return.
	wg      sync.WaitGroup
	spawnMu sync.Mutex
}

// entry is a pod the agent knows.
type entry struct {
	pod     *model.Pod
	rv      uint64
	reaping bool
	// replacement is created once this pod is removed (apply of a changed
	// spec).
	replacement *model.Pod
	// deletion is the deletionTimestamp asked for (and stored), with its
	// grace period; the worker's own, exact one wins once it has it. Set,
	// it means the pod is removed once terminated.
	deletion      *metav1.Time
	deletionGrace int64
	// rerunning: the pod, terminated by a node shutdown, is to start
	// again once its worker is done (maybeRerun).
	rerunning bool
}

// maxFinal bounds how many removed pods' last statuses (and events) are
// kept.
const maxFinal = 256

// New starts an agent whose goroutines live until ctx is done. Ending ctx
// stops the agent, never a container.
func New(ctx context.Context, cfg Config) *Agent {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.NodeName == "" {
		cfg.NodeName = "localhost"
	}
	if cfg.Sysctls == nil {
		cfg.Sysctls = allSafeSysctls()
	}
	a := &Agent{
		cfg:      cfg,
		recorder: events.NewRecorderWithLimits(cfg.Clock, events.Limits{PerPod: cfg.EventsPerPod, Total: cfg.MaxEvents}),
		history:  timeline.NewHistory(timeline.Limits{}),
		logs:     newLogCollector(cfg.Runtime, cfg.KeepTerminatedPodLogs, cfg.Clock, cfg.Logger),
		log:      cfg.Logger,
		ctx:      ctx,
		pods:     map[types.UID]*entry{},
		forced:   map[types.UID]*entry{},
		changes:  newChangeLog(maxChanges),
		changed:  make(chan struct{}),
		final:    map[types.UID]*v1.Pod{},
		orphans:  map[types.UID]chan struct{}{},
	}
	a.health = newStateHealth(a.recorder, cfg.NodeName)
	wcfg := podworker.Config{
		Runtime:  cfg.Runtime,
		Recorder: a.recorder,
		Clock:    cfg.Clock,
		Planner:  cfg.Planner,
		Logger:   cfg.Logger,
		HostIP:   cfg.NodeIP,
		OnChange: a.podChanged,
		Timeline: a.history,

		Allocatable: cfg.Allocatable,
	}
	if cfg.Metrics != nil {
		wcfg.Metrics = cfg.Metrics
	}
	pm := prober.New(prober.Config{
		Execer: cfg.Runtime,
		Clock:  cfg.Clock,
		Logger: cfg.Logger,
		PodIP:  podIPOf(cfg.Runtime),
		Report: func(r prober.Result) { a.workers.HandleProbe(r) },
	})
	wcfg.Prober = pm
	if cfg.Store != nil {
		wcfg.Checkpointer = checkpointer{s: cfg.Store, health: a.health}
	}
	a.workers = podworker.New(ctx, wcfg)
	if cfg.Store != nil {
		// The events' and timelines' writers end after the pod workers,
		// so that what a worker records last before a stop is saved too.
		persistCtx, workersStopped := context.WithCancel(context.WithoutCancel(ctx))
		a.spawn(func() {
			<-ctx.Done()
			a.workers.Wait()
			workersStopped()
		})
		evs := a.recorder.Watch()
		if !a.spawn(func() { a.persistEvents(persistCtx, evs) }) {
			evs.Stop()
		}
		if ts, ok := cfg.Store.(TimelineStore); ok {
			a.spawn(func() { a.persistTimelines(persistCtx, ts) })
		}
	}
	a.spawn(func() { pm.Run(ctx) })
	if a.logs != nil {
		a.spawn(func() { a.logs.run(ctx) })
	}
	a.spawn(func() { a.dispatch(ctx) })
	return a
}

// podIPOf is the runtime's primary PodIPs when it gives pods networks of
// their own.
func podIPOf(rt runtime.Runtime) func(types.UID) string {
	pa, ok := rt.(runtime.PodAddresser)
	if !ok {
		return nil
	}
	return func(uid types.UID) string {
		if ips := pa.PodIPs(uid); len(ips) > 0 {
			return ips[0]
		}
		return ""
	}
}

// Wait returns, once the ctx given to New is done, when every goroutine
// of the agent and of its pod workers has returned.
func (a *Agent) Wait() {
	<-a.ctx.Done()
	a.spawnMu.Lock()
	a.spawnMu.Unlock() // a barrier: every spawn before it is counted in a.wg, none after it starts
	a.wg.Wait()
	a.workers.Wait()
}

// spawn runs f on a goroutine of the agent's (Wait waits for it), unless
// the agent has ended: then it returns false and f never runs. What f
// would wait for ends with the agent too.
func (a *Agent) spawn(f func()) bool {
	a.spawnMu.Lock()
	defer a.spawnMu.Unlock()
	if a.ctx.Err() != nil {
		return false
	}
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		f()
	}()
	return true
}

// Recorder gives access to the events.
func (a *Agent) Recorder() *events.Recorder { return a.recorder }

// Workers gives access to the pod workers' queries.
func (a *Agent) Workers() *podworker.Workers { return a.workers }

func (a *Agent) notify() {
	a.mu.Lock()
	close(a.changed)
	a.changed = make(chan struct{})
	a.mu.Unlock()
}

// InvalidError is a pod that failed validation (Errs is set) or that the
// runtime cannot run (Err is set). It matches ErrInvalid.
type InvalidError struct {
	Errs field.ErrorList
	Err  error
}

func (e *InvalidError) Error() string { return ErrInvalid.Error() + ": " + e.Problems() }

// Problems says what is wrong, without Error's "invalid pod: " head: the
// field errors one per line, or the runtime's refusal (one line per joined
// error). It is for whoever shows the problems to a user in its own words.
func (e *InvalidError) Problems() string {
	if len(e.Errs) > 0 {
		return model.FormatErrors(e.Errs)
	}
	return e.Err.Error()
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func (e *InvalidError) Unwrap() error { return e.Err }

// Admit validates a pod for this agent without creating it: Kubernetes
// validation and the runtime's own check. The error is an *InvalidError. A
// valid pod the node's own admission rejects for what it is (its sysctls,
// its OS, see PodRejection) is admitted here without the runtime's check: it
// will be created rejected, as the kubelet rejects it, and nothing of it
// will run.
func (a *Agent) Admit(pod *model.Pod) error {
	if errs := model.Validate(pod); len(errs) > 0 {
		return &InvalidError{Errs: errs}
	}
	if a.podRejection(pod) != nil {
		return nil
	}
	if err := a.cfg.Runtime.Check(pod); err != nil {
		return &InvalidError{Err: err}
	}
	return nil
}

// Create admits a pod, gives it a UID and hands it to a new pod worker. The
// agent owns pod afterwards.
func (a *Agent) Create(pod *model.Pod) (*model.Pod, error) {
	model.Default(pod)
	if err := a.Admit(pod); err != nil {
		return nil, err
	}
	a.mu.Lock()
	if e := a.lookupLocked(pod.Namespace, pod.Name); e != nil {
		a.mu.Unlock()
		return nil, fmt.Errorf("%w: pods %q", ErrAlreadyExists, pod.Name)
	}
	a.addLocked(pod)
	a.mu.Unlock()
	if err := a.launch(pod); err != nil {
		return nil, err
	}
	return pod, nil
}

// addLocked gives pod its identity and records it; a.mu must be held. As the
// API server does on create, the status written in the manifest is dropped
// and metadata.generation is 1 (registry/core/pod/strategy.go,
// PrepareForCreate). A pod the node does not admit now (admitLocked: a
// forbidden sysctl, another OS, no room, or the node shuts down) is recorded
// rejected (see isRejected); launch then starts nothing of it.
func (a *Agent) addLocked(pod *model.Pod) {
	pod.UID = types.UID(uuid.NewString())
	pod.Generation = 1
	pod.CreationTimestamp = metav1.NewTime(a.cfg.Clock.Now())
	pod.Spec.NodeName = a.cfg.NodeName
	pod.Status = v1.PodStatus{}
	if why := a.admitLocked(pod); why != nil {
		reject(pod, why)
	}
	a.recordLocked(pod)
}

// recordLocked records a pod that has its identity; a.mu must be held.
func (a *Agent) recordLocked(pod *model.Pod) {
	a.pods[pod.UID] = &entry{pod: pod, rv: a.bumpLocked(pod.UID)}
}

// bumpLocked hands out the next resource version, to a change of the pod
// uid, and logs the change for the watches; a.mu must be held.
func (a *Agent) bumpLocked(uid types.UID) uint64 {
	a.rv++
	a.changes.add(a.rv, uid)
	return a.rv
}

// Sync hands the agent a pod that another source owns — in cluster mode the
// API server, which gave it its UID and node. A pod it does not know is
// admitted and started (InvalidError when it cannot run here, RejectedError
// when the node does not admit it now — a forbidden sysctl, another OS, no
// room, or it shuts down: nothing is recorded then, the source reports the
// rejection); one it knows is left as it is: the changes of a running
// pod's spec come through their own calls (SyncEphemeralContainers,
// SyncResources, SetActiveDeadline), its deletion through Delete. Pods are told apart by UID only: a
// pod deleted and created again under the same name is another pod.
func (a *Agent) Sync(pod *model.Pod) error {
	model.Default(pod)
	a.mu.Lock()
	known := a.knownLocked(pod.UID)
	a.mu.Unlock()
	if known {
		return nil
	}
	if err := a.admitSynced(pod); err != nil {
		return err
	}
	a.mu.Lock()
	if a.knownLocked(pod.UID) {
		a.mu.Unlock()
		return nil
	}
	if why := a.admitLocked(pod); why != nil {
		a.mu.Unlock()
		return why
	}
	a.recordLocked(pod)
	a.mu.Unlock()
	return a.launch(pod)
}

// Known says whether the agent has the pod (running, terminating, or
// terminated and not yet removed), in its pod API or, force-deleted, still
// stopping its containers.
func (a *Agent) Known(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.knownLocked(uid)
}

// knownLocked is Known; a.mu must be held.
func (a *Agent) knownLocked(uid types.UID) bool {
	return a.pods[uid] != nil || a.forced[uid] != nil
}

// entryLocked finds the entry of uid, in the pod API or force-deleted;
// a.mu must be held.
func (a *Agent) entryLocked(uid types.UID) *entry {
	if e := a.pods[uid]; e != nil {
		return e
	}
	return a.forced[uid]
}

// launch stores a pod just added (write-ahead: before anything of it runs)
// and hands it to its worker; a rejected pod gets no worker, only the
// kubelet's warning event. When the store fails, the pod is dropped.
func (a *Agent) launch(pod *model.Pod) error {
	if err := a.persistPod(pod); err != nil {
		a.mu.Lock()
		delete(a.pods, pod.UID)
		a.bumpLocked(pod.UID) // a watch that sent it sends it DELETED
		a.mu.Unlock()
		a.notify()
		return err
	}
	a.recorder.Eventf(pod, "", events.Normal, events.Scheduled, "Successfully assigned %s to %s", pod.Key(), a.cfg.NodeName)
	if isRejected(pod) {
		a.recordRejection(pod)
		a.notify()
		return nil
	}
	a.registerPod(pod)
	a.workers.UpdatePod(podworker.UpdateOptions{Pod: pod})
	a.notify()
	return nil
}

// lookupLocked finds the pod that holds namespace/name; a.mu must be held.
// recorded returns the pod uid as the agent records it, or ErrNotFound.
// The changes of a running pod's spec or conditions (ephemeral containers,
// resizes, a lowered deadline, others' conditions) call it under
// specChangeMu, which keeps the pod theirs to change until they store it.
func (a *Agent) recorded(uid types.UID) (*model.Pod, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e := a.pods[uid]
	if e == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	return e.pod, nil
}

func (a *Agent) lookupLocked(ns, name string) *entry {
	for _, e := range a.pods {
		if e.pod.Namespace == ns && e.pod.Name == name {
			return e
		}
	}
	return nil
}

// podChanged is the workers' OnChange: it bumps the pod's resource version
// and, for a deleted pod that has terminated, removes it once its worker is
// done.
func (a *Agent) podChanged(uid types.UID) {
	a.mu.Lock()
	e := a.entryLocked(uid)
	ok := e != nil
	if ok {
		e.rv = a.bumpLocked(uid)
	}
	terminated := ok && a.workers.IsPodKnownTerminated(uid)
	reap := terminated && e.deletion != nil && !e.reaping
	if reap {
		e.reaping = true
	}
	a.mu.Unlock()
	a.notify()
	if reap {
		a.reap(uid)
	} else if terminated {
		a.maybeRerun(uid)
	}
}

// reap removes a terminated, deleted pod, then creates its replacement if
// an apply asked for one, and once the pod's worker has finished its
// clean-up, schedules the removal of its logs.
func (a *Agent) reap(uid types.UID) {
	done := a.workers.Terminated(uid)
	cleanedUp := a.workers.Done(uid)
	a.spawn(func() {
		select {
		case <-done:
		case <-a.ctx.Done():
			return
		}
		last, _, _ := a.workers.PodStatus(uid)
		a.health.removing(uid)
		a.remove(uid, last)
		// Nothing of the pod is to be saved any more once its worker has
		// made its last save, and its clean-up is done: its logs may go.
		select {
		case <-cleanedUp:
			a.logs.removed(uid)
		case <-a.ctx.Done():
			return
		}
		a.health.forget(uid)
	})
}

// remove takes a pod that has finished, whose last status is last (nil when
// unknown), out of the store and of the agent — its worker too — keeping
// last for a while, then creates its replacement if an apply asked for one.
func (a *Agent) remove(uid types.UID, last *v1.Pod) {
	if a.cfg.Store != nil {
		if err := a.cfg.Store.DeletePod(uid); err != nil {
			a.log.Error("remove pod from the store", "podUID", uid, "err", err)
		}
	}
	a.mu.Lock()
	e := a.entryLocked(uid)
	delete(a.pods, uid)
	delete(a.forced, uid)
	// Under the lock (agent, then workers: the order used everywhere),
	// so that no one sees the pod gone but its worker still there.
	a.workers.Forget(uid)
	if last != nil {
		a.final[uid] = last
		a.finalOrder = append(a.finalOrder, uid)
		if len(a.finalOrder) > maxFinal {
			// The events of a pod removed long ago go with it, so
			// that memory does not grow with pod churn.
			old := a.finalOrder[0]
			delete(a.final, old)
			a.recorder.Forget(old)
			a.history.Forget(string(old))
			a.finalOrder = a.finalOrder[1:]
		}
	}
	a.bumpLocked(uid)
	next := a.takeReplacementLocked(e)
	a.mu.Unlock()
	if e != nil {
		a.forgetPod(e.pod)
	}
	a.notify()
	a.launchReplacement(uid, next)
}

// takeReplacementLocked records, with its identity, the pod an apply asked
// to replace e with, now that e is gone from the pod API, and returns it
// (nil when there is none). a.mu must be held.
func (a *Agent) takeReplacementLocked(e *entry) *model.Pod {
	if e == nil || e.replacement == nil {
		return nil
	}
	next := e.replacement
	e.replacement = nil
	a.addLocked(next)
	return next
}

// launchReplacement starts next, the replacement of the pod old, and
// clears the stored record of it; a nil next does nothing.
func (a *Agent) launchReplacement(old types.UID, next *model.Pod) {
	if next == nil {
		return
	}
	if err := a.launch(next); err != nil {
		a.log.Error("create replacement pod", "pod", next.Key(), "err", err)
	}
	a.clearReplacement(old)
}

// Delete asks for the pod's graceful termination; grace overrides its
// terminationGracePeriodSeconds when set. It returns at once: the
// termination goes on in the pod's worker, and the pod is removed once it
// is terminated.
//
// A grace period of 0 (given, or the pod's own) is a forced delete, as in
// Kubernetes' API: the pod leaves the pod API at once — it is no longer
// listed, watchers see it DELETED, its name is free, an apply's
// replacement is created now — while its worker still stops its
// containers, each with its stop signal and the kubelet's minimum before
// SIGKILL, and is reaped once terminated. The deletion recorded in the
// store (grace period 0) keeps it so across an agent restart. A rejected
// pod (see isRejected) has nothing to stop: it is removed at once.
//
// A deletion the store cannot save (a full disk) does not hold the pod
// back: stopping is always safe, so the pod is stopped and removed as
// asked, with a Warning event (FailedCheckpoint) and the agent's StateError
// saying so; only an agent that restarts before the disk has room again
// does not know of the deletion.
func (a *Agent) Delete(uid types.UID, grace *int64, reason StopReason) error {
	wr, err := reason.workerReason()
	if err != nil {
		return err
	}
	a.mu.Lock()
	e, ok := a.pods[uid]
	a.mu.Unlock()
	if !ok {
		return fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	if isRejected(e.pod) {
		// Nothing of it runs, nor ever ran: it goes at once.
		return a.removeRejected(e)
	}
	// Records the deletion (e.deletion), which marks the pod for removal.
	forced, err := a.persistDeletion(e.pod, grace)
	if err != nil {
		a.log.Error("store the deletion of a pod; stopping it all the same", "pod", e.pod.Key(), "podUID", uid, "err", err)
		a.recorder.Eventf(e.pod, "", events.Warning, events.FailedCheckpoint,
			"Cannot save the pod's deletion: %v; the pod is stopped all the same, but an agent that restarts before it is saved would not know of it", err)
	}
	if forced {
		a.mu.Lock()
		next := a.forceRemoveLocked(uid)
		a.mu.Unlock()
		a.notify()
		a.launchReplacement(uid, next)
	}
	a.workers.UpdatePod(podworker.UpdateOptions{Pod: e.pod, Kill: &podworker.KillOptions{GracePeriodSeconds: grace, Reason: wr}})
	a.mu.Lock()
	still := a.knownLocked(uid)
	a.mu.Unlock()
	if !still {
		// A concurrent delete removed the pod meanwhile: the kill above
		// made a worker for a pod that is gone; drop it.
		a.workers.Forget(uid)
		return nil
	}
	// A pod that had already terminated (it completed) changes no more:
	// check for removal now.
	a.podChanged(uid)
	return nil
}

// forceRemoveLocked moves the entry of uid from the pod API to the
// force-deleted pods and returns the replacement to launch, if an apply
// asked for one. a.mu must be held.
func (a *Agent) forceRemoveLocked(uid types.UID) *model.Pod {
	e := a.pods[uid]
	if e == nil {
		return nil
	}
	delete(a.pods, uid)
	a.forced[uid] = e
	a.bumpLocked(uid)
	return a.takeReplacementLocked(e)
}

// Get returns the pod with its current status, a copy owned by the caller.
// Its spec is the one recorded last, as the API server returns the stored
// object: the worker may not have taken a change just made (an ephemeral
// container, a resize) when it published its status, and a read after a
// write must see the write. A removed pod is still found, with its last
// status, for a while; a pod recorded whose worker is not made yet (launch
// is storing it) is found Pending, as the API server shows a pod just
// created.
func (a *Agent) Get(uid types.UID) (*v1.Pod, Phase, error) {
	if p, phase, ok := a.workers.PodStatus(uid); ok {
		a.mu.Lock()
		if e := a.entryLocked(uid); e != nil {
			e.annotate(p)
			p.Spec = *e.pod.Spec.DeepCopy()
			p.Generation = e.pod.Generation
		}
		a.mu.Unlock()
		return p, phaseOf(phase), nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if p, ok := a.final[uid]; ok {
		return p.DeepCopy(), Terminated, nil
	}
	if e, ok := a.pods[uid]; ok {
		// Only read: a worker made meanwhile reads the pod too, and
		// writes none of it.
		p := e.pod.Pod.DeepCopy()
		if isRejected(e.pod) {
			e.annotate(p)
			return p, Terminated, nil
		}
		p.Status = v1.PodStatus{Phase: v1.PodPending}
		e.annotate(p)
		return p, Syncing, nil
	}
	return nil, 0, fmt.Errorf("%w: %s", ErrNotFound, uid)
}

// annotate gives p, a copy of the entry's pod, what the agent knows of it
// besides its worker: its resource version, and a deletion the worker has
// not taken yet. a.mu must be held.
func (e *entry) annotate(p *v1.Pod) {
	p.ResourceVersion = strconv.FormatUint(e.rv, 10)
	if p.DeletionTimestamp == nil && e.deletion != nil {
		ts, g := *e.deletion, e.deletionGrace
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, &g
	}
}

// WaitTerminated waits until the pod is terminated — nothing of it runs —
// or ctx ends. The removal of its content goes on in the background and is
// not waited for.
func (a *Agent) WaitTerminated(ctx context.Context, uid types.UID) error {
	term := a.workers.Terminated(uid)
	if term == nil {
		a.mu.Lock()
		_, gone := a.final[uid]
		e := a.pods[uid]
		a.mu.Unlock()
		if gone || (e != nil && isRejected(e.pod)) {
			return nil
		}
		return fmt.Errorf("%w: %s", ErrNotFound, uid)
	}
	select {
	case <-term:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
