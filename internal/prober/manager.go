package prober

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/model"
)

// DefaultWorkers is how many probe attempts run at once when Config.Workers
// is not set.
const DefaultWorkers = 64

// coalesce is how early an attempt may start so that attempts due within a
// few milliseconds of each other share one wake-up of the scheduler. It
// is far below the one-second granularity of probe timings.
const coalesce = 5 * time.Millisecond

// The causes with which an attempt's context ends.
var (
	errTimeout = errors.New("probe timed out")
	errRemoved = errors.New("probe removed")
	errStopped = errors.New("prober stopped")
)

// Config is what a Manager needs.
type Config struct {
	// Execer runs exec probes; without it they fail.
	Execer Execer
	// Clock schedules attempts and their timeouts; a fake one in tests.
	Clock clock.WithTicker
	// Report is called for every failed attempt, every attempt that
	// succeeded with a warning and every change, from a worker goroutine. It must not block (the worker enqueues). Reports of
	// one probe come in order; one probe's reports are never concurrent.
	Report func(Result)
	Logger *slog.Logger
	// Workers bounds how many probe attempts run at once (default
	// DefaultWorkers).
	Workers int
	// PodIP, when set, gives the IP of a pod with a network of its own
	// ("" for a pod on the host's network): its network probes go there.
	PodIP func(podUID types.UID) string
}

// Manager runs the probes of every container instance it was given. Its
// methods are safe for concurrent use.
type Manager struct {
	cfg     Config
	clk     clock.WithTicker
	log     *slog.Logger
	workers int
	// wake rings the scheduler when the heap's first entry became earlier
	// than its timer.
	wake chan struct{}
	// work hands attempts to the workers. It holds at most Workers entries
	// (inflight bounds it), so sends never block.
	work chan *probe
	// notify, when set (tests), is rung whenever the scheduler goes to
	// sleep or an attempt ends.
	notify chan struct{}

	mu sync.Mutex
	// base is the parent of the attempts' contexts while Run runs, nil
	// otherwise. It does not end with Run's ctx: Run cancels the running
	// attempts itself, so an attempt's context costs no goroutine and no
	// registration in a shared parent.
	base    context.Context
	started bool
	pods    map[types.UID]map[string]*instance // by container name
	heap    probeHeap
	// backlog holds due probes while every worker is busy, first in first
	// out from head.
	backlog  []*probe
	head     int
	inflight int // attempts handed to workers and not finished
	timer    clock.Timer
	timerAt  time.Time // when the timer fires; zero when it is not armed
	sleeping bool      // the scheduler waits on its timer
}

// instance is one started container instance with its probes.
type instance struct {
	pod    *model.Pod
	ref    model.ContainerRef
	id     string
	probes [len(kinds)]*probe // by Kind-1; nil for a probe the container lacks
}

// phase is where a probe is in its schedule.
type phase int8

const (
	// phaseGated: liveness or readiness waiting for the startup probe.
	phaseGated phase = iota + 1
	// phaseWaiting: in the heap at its next attempt time.
	phaseWaiting
	// phaseQueued: due, in the backlog until a worker is free.
	phaseQueued
	// phaseRunning: an attempt runs; in the heap at its deadline until
	// that passes.
	phaseRunning
	// phaseStopped: removed, or done (startup succeeded, or startup or
	// liveness failed).
	phaseStopped
)

func (p phase) String() string {
	switch p {
	case phaseGated:
		return "Gated"
	case phaseWaiting:
		return "Waiting"
	case phaseQueued:
		return "Queued"
	case phaseRunning:
		return "Running"
	case phaseStopped:
		return "Stopped"
	default:
		return fmt.Sprintf("phase(%d)", int(p))
	}
}

// probe is one probe of one container instance.
type probe struct {
	inst             *instance
	kind             Kind
	act              action
	period, timeout  time.Duration
	successThreshold int32
	failureThreshold int32
	firstAt          time.Time // startedAt + initialDelaySeconds

	// Guarded by Manager.mu.
	phase   phase
	at      time.Time // heap key: next attempt, or the running attempt's deadline
	due     time.Time // when the next or running attempt was due
	started time.Time // when the running or last attempt started
	index   int       // in the heap; -1 when not there
	ctx     context.Context
	cancel  context.CancelCauseFunc

	// Owned by the attempt in flight (there is at most one per probe).
	tally tally
}

// New returns a Manager; Run drives it.
func New(cfg Config) *Manager {
	m := &Manager{
		cfg:     cfg,
		clk:     cfg.Clock,
		log:     cfg.Logger,
		workers: cfg.Workers,
		wake:    make(chan struct{}, 1),
		pods:    make(map[types.UID]map[string]*instance),
	}
	if m.clk == nil {
		m.clk = clock.RealClock{}
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if m.workers <= 0 {
		m.workers = DefaultWorkers
	}
	m.work = make(chan *probe, m.workers)
	return m
}

// Run drives the probes until ctx ends, then cancels the attempts still
// running and returns once every goroutine it started has ended. It is
// called once. Containers may be added before Run starts; their probes
// begin when it does.
func (m *Manager) Run(ctx context.Context) {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		m.log.Error("prober: Run called twice")
		return
	}
	m.started = true
	m.base = context.WithoutCancel(ctx)
	m.timer = m.clk.NewTimer(time.Hour)
	m.timer.Stop()
	m.mu.Unlock()

	var wg sync.WaitGroup
	for range m.workers {
		wg.Go(func() { m.worker(ctx) })
	}
	m.schedule(ctx)

	m.mu.Lock()
	m.base = nil
	m.timer.Stop()
	var cancels []context.CancelCauseFunc
	for _, p := range m.heap {
		if p.phase == phaseRunning {
			cancels = append(cancels, p.cancel)
		}
	}
	m.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errStopped)
	}
	wg.Wait()
}

// AddContainer starts the probes of a container instance that has started
// (its process runs and its postStart hook is done). startedAt anchors
// initialDelaySeconds. It is idempotent per id; an instance with another
// id of the same container is replaced (its probes stop). A container
// without probes, or that pod lacks, is ignored.
func (m *Manager) AddContainer(pod *model.Pod, ref model.ContainerRef, id string, startedAt time.Time) {
	m.addContainer(pod, ref, id, startedAt, false)
}

// ResumeContainer is AddContainer for an instance that was running before
// the agent restarted, whose readiness verdict was kept across the restart
// (ready): its readiness probe starts from that verdict instead of from
// not ready, so that it changes (and a Result says so) only after
// failureThreshold failures in a row, as the kubelet since 1.35 keeps a
// running container's readiness across its own restart (KEP-4781: it sets
// no initial value for the probe; the first result that passes the
// threshold decides). Unready, it is AddContainer.
func (m *Manager) ResumeContainer(pod *model.Pod, ref model.ContainerRef, id string, startedAt time.Time, ready bool) {
	m.addContainer(pod, ref, id, startedAt, ready)
}

// addContainer is AddContainer, with the readiness probe's verdict
// starting at ready (success) when ready is set.
func (m *Manager) addContainer(pod *model.Pod, ref model.ContainerRef, id string, startedAt time.Time, ready bool) {
	spec := pod.Container(ref)
	if spec == nil {
		m.log.Error("probes of a container the pod does not have", "pod", pod.Key(), "podUID", pod.UID, "container", ref.Name)
		return
	}
	specs := [len(kinds)]*v1.Probe{spec.StartupProbe, spec.ReadinessProbe, spec.LivenessProbe}
	if specs == [len(kinds)]*v1.Probe{} {
		return
	}
	inst := &instance{pod: pod, ref: ref, id: id}
	podIP := ""
	if m.cfg.PodIP != nil {
		podIP = m.cfg.PodIP(pod.UID)
	}
	for i, k := range kinds {
		if specs[i] != nil {
			inst.probes[i] = newProbe(inst, k, spec, specs[i], startedAt, podIP)
			if k == Readiness && ready {
				inst.probes[i].tally.state = stateSuccess
			}
		}
	}

	m.mu.Lock()
	ctrs := m.pods[pod.UID]
	if ctrs == nil {
		ctrs = make(map[string]*instance)
		m.pods[pod.UID] = ctrs
	}
	var cancels []context.CancelCauseFunc
	if old := ctrs[ref.Name]; old != nil {
		if old.id == id {
			m.mu.Unlock()
			return
		}
		cancels = m.stopLocked(old, cancels)
	}
	ctrs[ref.Name] = inst
	now := m.clk.Now()
	gated := inst.probes[Startup-1] != nil
	for _, p := range inst.probes {
		switch {
		case p == nil:
		case gated && p.kind != Startup:
			p.phase = phaseGated
		default:
			m.waitLocked(p, later(p.firstAt, now))
		}
	}
	ring := m.needWakeLocked()
	m.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errRemoved)
	}
	if ring {
		m.ring()
	}
}

// RemoveContainer stops the probes of instance id of the container (it
// exited or is being stopped); a running attempt is cancelled and does
// not report — except one that was already reporting as RemoveContainer
// ran, which is why results carry the instance ID. It is idempotent, and
// does nothing when the container's probes belong to another instance.
func (m *Manager) RemoveContainer(podUID types.UID, container, id string) {
	m.mu.Lock()
	var cancels []context.CancelCauseFunc
	ctrs := m.pods[podUID]
	if inst := ctrs[container]; inst != nil && inst.id == id {
		cancels = m.stopLocked(inst, nil)
		delete(ctrs, container)
		if len(ctrs) == 0 {
			delete(m.pods, podUID)
		}
	}
	m.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errRemoved)
	}
}

// RemovePod stops every probe of the pod (it is terminating), as
// RemoveContainer does for each of its containers. It is idempotent.
func (m *Manager) RemovePod(podUID types.UID) {
	m.mu.Lock()
	var cancels []context.CancelCauseFunc
	for _, inst := range m.pods[podUID] {
		cancels = m.stopLocked(inst, cancels)
	}
	delete(m.pods, podUID)
	m.mu.Unlock()
	for _, cancel := range cancels {
		cancel(errRemoved)
	}
}

func newProbe(inst *instance, k Kind, spec *v1.Container, p *v1.Probe, startedAt time.Time, podIP string) *probe {
	return &probe{
		inst:             inst,
		kind:             k,
		act:              prepare(spec, p, podIP),
		period:           seconds(p.PeriodSeconds, 10),
		timeout:          seconds(p.TimeoutSeconds, 1),
		successThreshold: p.SuccessThreshold,
		failureThreshold: p.FailureThreshold,
		firstAt:          startedAt.Add(time.Duration(max(p.InitialDelaySeconds, 0)) * time.Second),
		index:            -1,
		tally:            tally{state: initialState(k), last: stateUnknown},
	}
}

// seconds is a probe timing, or def when it is not positive.
func seconds(s, def int32) time.Duration {
	if s <= 0 {
		s = def
	}
	return time.Duration(s) * time.Second
}

// nextAttempt is when a probe runs next whose last attempt was due at due
// and started at started, at now: on the period's grid from due, at the
// first grid time after the attempt started — or at once when that has
// passed already (the attempt ran long), as a ticker that keeps one missed
// tick. It returns the time to run and the grid time the run counts as.
func nextAttempt(due, started time.Time, period time.Duration, now time.Time) (at, gridDue time.Time) {
	at = due.Add(period)
	if !at.After(started) {
		at = at.Add((started.Sub(at)/period + 1) * period)
	}
	return later(at, now), at
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// stopLocked stops the probes of inst and appends the cancel functions of
// their running attempts to cancels.
func (m *Manager) stopLocked(inst *instance, cancels []context.CancelCauseFunc) []context.CancelCauseFunc {
	for _, p := range inst.probes {
		if p == nil {
			continue
		}
		if p.index >= 0 {
			m.heap.remove(p.index)
		}
		if p.phase == phaseRunning {
			cancels = append(cancels, p.cancel)
		}
		// A queued probe stays in the backlog and is skipped there.
		p.phase = phaseStopped
	}
	return cancels
}

// waitLocked schedules p's next attempt at at.
func (m *Manager) waitLocked(p *probe, at time.Time) {
	p.phase = phaseWaiting
	p.due = at
	m.heap.set(p, at)
}

// startLocked starts an attempt of p: the caller hands p to a worker.
func (m *Manager) startLocked(p *probe, now time.Time) {
	p.phase = phaseRunning
	p.started = now
	p.ctx, p.cancel = context.WithCancelCause(m.base)
	m.heap.set(p, now.Add(p.timeout))
	m.inflight++
}

// needWakeLocked says whether the scheduler's timer fires later than the
// first entry of the heap.
func (m *Manager) needWakeLocked() bool {
	return len(m.heap) > 0 && (m.timerAt.IsZero() || m.heap[0].at.Before(m.timerAt))
}

func (m *Manager) ring() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

func (m *Manager) poke() {
	if m.notify != nil {
		select {
		case m.notify <- struct{}{}:
		default:
		}
	}
}

// schedule is the scheduler goroutine: it starts due attempts, cancels
// those past their deadline, and sleeps on one timer until the heap's
// first entry is due.
func (m *Manager) schedule(ctx context.Context) {
	var (
		dispatch []*probe
		cancels  []context.CancelCauseFunc
	)
	for {
		m.mu.Lock()
		m.sleeping = false
		dispatch, cancels = m.collectLocked(m.clk.Now(), dispatch, cancels)
		m.mu.Unlock()
		for _, cancel := range cancels {
			cancel(errTimeout)
		}
		for _, p := range dispatch {
			m.work <- p // never blocks: inflight bounds the channel's contents
		}
		clear(dispatch)
		clear(cancels)
		dispatch, cancels = dispatch[:0], cancels[:0]

		m.mu.Lock()
		now := m.clk.Now()
		if len(m.heap) > 0 && !m.heap[0].at.After(now.Add(coalesce)) {
			m.mu.Unlock()
			continue // became due meanwhile
		}
		if !m.timer.Stop() {
			select { // a fake timer keeps a value it fired with
			case <-m.timer.C():
			default:
			}
		}
		m.timerAt = time.Time{}
		if len(m.heap) > 0 {
			m.timerAt = m.heap[0].at
			m.timer.Reset(m.timerAt.Sub(now))
			// Reset counts from the clock's time at Reset, not from now:
			// if the clock moved on meanwhile (a stall, or a fake clock
			// stepped), the timer fires late; look again.
			if m.clk.Since(now) > coalesce {
				m.mu.Unlock()
				continue
			}
		}
		m.sleeping = true
		m.mu.Unlock()
		m.poke()

		select {
		case <-ctx.Done():
			return
		case <-m.timer.C():
		case <-m.wake:
		}
	}
}

// collectLocked takes every heap entry due by now (give or take coalesce):
// an attempt past its deadline has its cancel appended to cancels; a probe
// due to run is started and appended to dispatch, or queued when every
// worker is busy.
func (m *Manager) collectLocked(now time.Time, dispatch []*probe, cancels []context.CancelCauseFunc) ([]*probe, []context.CancelCauseFunc) {
	limit := now.Add(coalesce)
	for len(m.heap) > 0 && !m.heap[0].at.After(limit) {
		p := m.heap.remove(0)
		switch p.phase {
		case phaseRunning:
			cancels = append(cancels, p.cancel)
		case phaseWaiting:
			if m.inflight < m.workers && m.head == len(m.backlog) {
				m.startLocked(p, now)
				dispatch = append(dispatch, p)
			} else {
				p.phase = phaseQueued
				m.backlog = append(m.backlog, p)
			}
		}
	}
	return dispatch, cancels
}

// nextQueuedLocked starts the first probe of the backlog, if any.
func (m *Manager) nextQueuedLocked(now time.Time) *probe {
	for m.head < len(m.backlog) {
		p := m.backlog[m.head]
		m.backlog[m.head] = nil
		m.head++
		if m.head == len(m.backlog) {
			m.backlog, m.head = m.backlog[:0], 0
		}
		if p.phase == phaseQueued {
			m.startLocked(p, now)
			return p
		}
	}
	return nil
}

// worker runs attempts until ctx ends. After each it takes the next probe
// of the backlog, if any, so a backlog drains without the scheduler.
func (m *Manager) worker(ctx context.Context) {
	for {
		var p *probe
		select {
		case <-ctx.Done():
			return
		case p = <-m.work:
		}
		for p != nil {
			p = m.attempt(p)
		}
	}
}

// attempt runs one attempt of p, reports it, schedules p's next one, and
// returns the next probe to run from the backlog.
func (m *Manager) attempt(p *probe) *probe {
	inst := p.inst
	ok, output, warning := p.act.run(p.ctx, m.cfg.Execer, inst.pod, inst.ref, p.timeout)

	// Report before p may run again, so that one probe's reports keep
	// their order.
	m.mu.Lock()
	live := p.phase == phaseRunning && m.base != nil
	m.mu.Unlock()
	if live {
		prev := p.tally.state
		p.tally = next(p.tally, ok, p.successThreshold, p.failureThreshold)
		changed := p.tally.state != prev
		if changed || !ok || warning != "" {
			r := Result{
				PodUID:    inst.pod.UID,
				Container: inst.ref.Name,
				ID:        inst.id,
				Kind:      p.kind,
				Healthy:   healthy(p.kind, p.tally.state),
				Changed:   changed,
				Failed:    !ok,
				Output:    output,
				Warning:   warning,
			}
			if changed {
				m.log.Debug("probe changed", "pod", inst.pod.Key(), "podUID", inst.pod.UID, "container", inst.ref.Name,
					"probe", p.kind, "healthy", r.Healthy, "output", output)
			}
			if m.cfg.Report != nil {
				m.cfg.Report(r)
			}
		}
	}

	m.mu.Lock()
	now := m.clk.Now()
	if p.index >= 0 {
		m.heap.remove(p.index)
	}
	cancel := p.cancel
	p.ctx, p.cancel = nil, nil
	m.inflight--
	switch {
	case p.phase != phaseRunning:
		// Removed while it ran.
	case m.base == nil:
		// Run has ended: leave p as it would be before its next attempt.
		m.waitLocked(p, now)
	case p.kind == Startup && p.tally.state == stateSuccess:
		p.phase = phaseStopped
		for _, q := range inst.probes {
			if q != nil && q.phase == phaseGated {
				m.waitLocked(q, later(q.firstAt, now))
			}
		}
	case p.kind != Readiness && p.tally.state == stateFailure:
		// The container will be killed: hold until a new instance.
		p.phase = phaseStopped
	default:
		at, due := nextAttempt(p.due, p.started, p.period, now)
		m.waitLocked(p, at)
		p.due = due
	}
	var q *probe
	if m.base != nil {
		q = m.nextQueuedLocked(now)
	}
	ring := m.needWakeLocked()
	m.mu.Unlock()
	cancel(nil)
	if ring {
		m.ring()
	}
	m.poke()
	return q
}
