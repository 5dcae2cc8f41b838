package shutdown

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// Agent is what the manager drives: the node's pods and their admission.
// The agent (*agent.Agent) implements it.
type Agent interface {
	// ActivePods returns the pods a shutdown terminates: every pod of the
	// node that is not terminated. The caller owns them.
	ActivePods() []*v1.Pod
	// KillForShutdown asks for the pod's termination because the node
	// shuts down, with gracePeriodSeconds: the pod's normal termination,
	// as for a delete (defer containers, then the regular containers, then
	// the sidecars in reverse), but the pod is not deleted. A termination
	// in progress may be shortened by it, never lengthened. It returns at
	// once; an error for a pod the node does not know.
	KillForShutdown(uid types.UID, gracePeriodSeconds int64) error
	// WaitTerminated returns once the pod is terminated or gone (nil, or
	// an error for a pod the node does not know), or ctx.Err() once ctx
	// ends.
	WaitTerminated(ctx context.Context, uid types.UID) error
	// SetShuttingDown tells the node whether it is shutting down. While it
	// is, new pods are rejected (the kubelet's NodeShutdown admission). Once
	// it is not — the shutdown was cancelled — the pods the shutdown
	// terminated start again in standalone mode (in cluster mode their
	// controllers replace them). It must not block.
	SetShuttingDown(on bool)
	// ShutdownEvent records a Normal NodeShutdown event about the node.
	ShutdownEvent(message string)
}

// Store keeps the manager's record: the agent's store (its meta keys).
// Both calls are durable when they return; GetMeta returns "" for a key
// never put.
type Store interface {
	GetMeta(key string) (string, error)
	PutMeta(key, value string) error
}

// Config wires a Manager.
type Config struct {
	// Groups are the configured priority groups (see Groups); none means
	// node shutdown is not configured, and Begin then needs a grace.
	Groups []Group
	Agent  Agent
	Store  Store
	// Clock drives the budgets; a fake one in tests.
	Clock  clock.Clock
	Logger *slog.Logger
	// OnChange, when set, is called from the manager's goroutine after
	// every change of Status (the cluster's Node posts its Ready
	// condition then). It must not block.
	OnChange func()
}

// Errors of Begin, Cancel and Load.
var (
	// ErrShuttingDown is ShutdownStatus while the node shuts down, in the
	// kubelet's words (its Ready condition carries them).
	ErrShuttingDown = errors.New("node is shutting down")
	// ErrNotConfigured: Begin without a grace on a node whose shutdown is
	// not configured.
	ErrNotConfigured = errors.New("node shutdown is not configured: start the agent with --shutdown-grace-period (or --shutdown-grace-period-by-pod-priority), or give the shutdown a grace period")
	// ErrStopped: the manager's Run has returned (the agent is stopping).
	ErrStopped = errors.New("the node shutdown manager is stopped")
)

// Manager is the node shutdown manager: see the package doc for its
// trigger contract. Its methods are safe for concurrent use; one goroutine
// (Run) owns the shutdown in progress and carries it out.
type Manager struct {
	cfg      Config
	log      *slog.Logger
	requests chan request
	stopped  chan struct{} // closed when Run returns

	// Published by Run (or Load, before it), read by anyone.
	mu           sync.Mutex
	status       Status
	shuttingDown bool
	done         chan struct{}
	loaded       *record // Load's, taken by Run
}

// request is a Begin or a Cancel for the manager's goroutine.
type request struct {
	cancel bool
	grace  time.Duration
	reason Reason
	reply  chan error // 1-slot
}

// New returns a manager; Load then Run start it.
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Manager{
		cfg:      cfg,
		log:      cfg.Logger.With("component", "nodeshutdown"),
		requests: make(chan request),
		stopped:  make(chan struct{}),
	}
}

// Load reads the shutdown the last agent left in the store, before the
// agent recovers its pods (so that none starts that the shutdown stopped)
// and before Run. After a reboot (rebooted) that shutdown is over: its
// record is dropped. Otherwise a shutdown in progress or over makes the
// node shutting down again, and Run goes on with it where it was. A record
// that cannot be read is logged and dropped: it must not keep a node from
// starting.
func (m *Manager) Load(rebooted bool) error {
	raw, err := m.cfg.Store.GetMeta(metaKey)
	if err != nil {
		return fmt.Errorf("load the node shutdown: %w", err)
	}
	if raw == "" {
		return nil
	}
	rec, err := decodeRecord(raw)
	if err != nil || rebooted {
		if err != nil {
			m.log.Error("dropping a node shutdown record that cannot be read", "err", err)
		} else {
			m.log.Info("the node rebooted: the node shutdown of the previous boot is over", "state", rec.State, "began", rec.BeganAt)
		}
		if err := m.cfg.Store.PutMeta(metaKey, ""); err != nil {
			return fmt.Errorf("clear the node shutdown: %w", err)
		}
		return nil
	}
	m.log.Info("node shutdown found in the store", "state", rec.State, "reason", rec.Reason, "began", rec.BeganAt)
	on := rec.State != Cancelled
	if on {
		m.cfg.Agent.SetShuttingDown(true)
	}
	done := make(chan struct{})
	if rec.State != Terminating {
		close(done)
	}
	m.mu.Lock()
	m.loaded, m.status, m.shuttingDown, m.done = rec, rec.status(), on, done
	m.mu.Unlock()
	return nil
}

// Begin starts a node shutdown (see the package doc): it returns once the
// shutdown is recorded and its first group's pods are being killed. grace
// 0 means the configured budgets; a positive grace shorter than their sum
// shrinks each in proportion; without configured groups, it is the budget
// of one group of every pod. A shutdown begun already, in progress or
// over, is left as it is (nil). ctx bounds the wait for the manager to take
// the request.
func (m *Manager) Begin(ctx context.Context, grace time.Duration, reason Reason) error {
	if grace < 0 {
		return fmt.Errorf("node shutdown: grace period %v must be >= 0", grace)
	}
	if _, err := reason.MarshalText(); err != nil {
		return err
	}
	return m.ask(ctx, request{grace: grace, reason: reason})
}

// Cancel calls the shutdown in progress off (see the package doc); nil
// when there is none. It is durable when it returns nil.
func (m *Manager) Cancel(ctx context.Context) error {
	return m.ask(ctx, request{cancel: true})
}

func (m *Manager) ask(ctx context.Context, req request) error {
	req.reply = make(chan error, 1)
	select {
	case m.requests <- req:
	case <-ctx.Done():
		return ctx.Err()
	case <-m.stopped:
		return ErrStopped
	}
	select {
	case err := <-req.reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Done returns a channel closed once the last begun shutdown is over —
// every group terminated or out of budget, or cancelled — nil before any
// began (since the agent's start, or the last reboot).
func (m *Manager) Done() <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.done
}

// Status returns the last shutdown, as the API shows it; the zero Status
// when there was none. The caller owns it.
func (m *Manager) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return copyStatus(m.status)
}

// ShutdownStatus is ErrShuttingDown from Begin until a Cancel (or the
// reboot), nil otherwise: the kubelet's ShutdownStatus, which its Ready
// condition reports.
func (m *Manager) ShutdownStatus() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shuttingDown {
		return ErrShuttingDown
	}
	return nil
}

// Run carries shutdowns out until ctx ends: it goes on with the one Load
// found, then serves Begin and Cancel. Ending ctx (the agent stopping)
// leaves a shutdown in progress where it is, in the store, for the next
// agent; it never stops a pod.
func (m *Manager) Run(ctx context.Context) {
	defer close(m.stopped)
	m.mu.Lock()
	r := &runner{m: m, ctx: ctx, rec: m.loaded}
	m.loaded = nil
	m.mu.Unlock()
	if r.rec != nil && r.rec.State == Terminating {
		r.advance()
	}
	for {
		var budget <-chan time.Time
		var terminated <-chan struct{}
		if g := r.group; g != nil {
			budget, terminated = g.timer.C(), g.terminated
		}
		select {
		case <-ctx.Done():
			r.stopGroup()
			return
		case req := <-m.requests:
			if req.cancel {
				req.reply <- r.cancel()
			} else {
				req.reply <- r.begin(req.grace, req.reason)
			}
		case <-budget:
			r.endGroup("its budget is spent")
		case <-terminated:
			r.endGroup("its pods are terminated")
		}
	}
}

// runner is the state Run owns: the shutdown (nil before any) and its
// group in progress.
type runner struct {
	m     *Manager
	ctx   context.Context
	rec   *record
	group *groupRun
}

// groupRun is a group whose pods are being terminated.
type groupRun struct {
	index int
	timer clock.Timer
	// terminated is closed once every pod of the group is terminated (or
	// gone); never when stop ended the watch first.
	terminated <-chan struct{}
	// stop ends the watch of the pods; watched is closed once its
	// goroutines have returned.
	stop    context.CancelFunc
	watched <-chan struct{}
}

// begin starts a shutdown unless one is in progress or over.
func (r *runner) begin(grace time.Duration, reason Reason) error {
	m := r.m
	if r.rec != nil && r.rec.State != Cancelled {
		m.log.Info("node shutdown asked again: the one begun goes on", "reason", reason, "state", r.rec.State)
		return nil
	}
	groups := scale(m.cfg.Groups, grace)
	if len(groups) == 0 {
		if grace == 0 {
			return ErrNotConfigured
		}
		groups = []Group{{Priority: 0, Budget: grace}}
	}
	// Reject new pods before listing the pods: none comes in between.
	m.cfg.Agent.SetShuttingDown(true)
	now := m.cfg.Clock.Now()
	rec := newRecord(groups, m.cfg.Agent.ActivePods(), reason, now)
	if err := m.save(rec); err != nil {
		m.cfg.Agent.SetShuttingDown(false)
		return fmt.Errorf("begin the node shutdown: %w", err)
	}
	r.rec = rec
	m.mu.Lock()
	m.done = make(chan struct{})
	m.mu.Unlock()
	msg := "Shutdown manager detected shutdown event"
	if reason == ReasonAPI {
		msg += " (podward shutdown)"
	}
	m.cfg.Agent.ShutdownEvent(msg)
	m.log.Info("node shutdown begins", "reason", reason, "groups", FormatGroups(groups), "grace", grace)
	r.advance()
	return nil
}

// newRecord is a shutdown beginning at now: every pod in its group, with
// its grace period; deadlines come when each group starts.
func newRecord(groups []Group, pods []*v1.Pod, reason Reason, now time.Time) *record {
	rec := &record{Version: recordVersion, State: Terminating, Reason: reason, BeganAt: now}
	for _, g := range groups {
		rec.Groups = append(rec.Groups, groupRecord{Priority: g.Priority, Budget: g.Budget})
	}
	for _, p := range pods {
		prio := PodPriority(p)
		g := &rec.Groups[groupOf(groups, prio)]
		g.Pods = append(g.Pods, podRecord{
			Namespace: p.Namespace, Name: p.Name, UID: p.UID, Priority: prio,
			Grace: podGrace(p, g.Budget),
		})
	}
	return rec
}

// advance starts the first group not over yet, or, when every group is,
// ends the shutdown. A group without pods is over at once (the kubelet
// does not wait for an empty group). A group started before a restart goes
// on with its start, its deadlines and its budget's end.
func (r *runner) advance() {
	m := r.m
	now := m.cfg.Clock.Now()
	for i := range r.rec.Groups {
		g := &r.rec.Groups[i]
		if !g.EndedAt.IsZero() {
			continue
		}
		if len(g.Pods) == 0 {
			g.StartedAt, g.EndedAt = now, now
			continue
		}
		resumed := !g.StartedAt.IsZero()
		if !resumed {
			// Write-ahead: the start and every deadline are in the store
			// before any pod is killed.
			g.StartedAt = now
			for j := range g.Pods {
				g.Pods[j].Deadline = now.Add(time.Duration(g.Pods[j].Grace) * time.Second)
			}
			r.persist()
		}
		r.startGroup(i, resumed, now)
		return
	}
	r.rec.State, r.rec.EndedAt = Terminated, now
	r.persist()
	// Published before Done closes: whoever Done wakes reads the end.
	r.publish()
	m.mu.Lock()
	if m.done == nil {
		m.done = make(chan struct{})
	}
	close(m.done)
	m.mu.Unlock()
	m.log.Info("node shutdown: every group is over; the node may go down", "took", now.Sub(r.rec.BeganAt))
}

// startGroup kills the pods of group i and watches them until they are
// terminated or the group's budget is spent. A resumed group's pods are
// killed again with the time left to their recorded deadlines, which
// changes nothing for those whose worker had the kill (a kill only
// shortens) and gives the others the deadline they were given.
func (r *runner) startGroup(i int, resumed bool, now time.Time) {
	m := r.m
	g := &r.rec.Groups[i]
	m.log.Info("node shutdown: terminating a group", "priority", g.Priority, "budget", g.Budget, "pods", len(g.Pods), "resumed", resumed)
	for _, p := range g.Pods {
		grace := p.Grace
		if resumed {
			grace = secondsUntil(p.Deadline, now)
		}
		if err := m.cfg.Agent.KillForShutdown(p.UID, grace); err != nil {
			m.log.Info("node shutdown: pod not killed", "pod", p.Namespace+"/"+p.Name, "podUID", p.UID, "err", err)
		}
	}
	ctx, stop := context.WithCancel(r.ctx)
	terminated, watched := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	for _, p := range g.Pods {
		wg.Go(func() { _ = m.cfg.Agent.WaitTerminated(ctx, p.UID) })
	}
	go func() {
		defer close(watched)
		wg.Wait()
		// A watch ended by stop (the group ended otherwise, or the agent
		// stops) says nothing of the pods.
		if ctx.Err() == nil {
			close(terminated)
		}
	}()
	left := g.StartedAt.Add(g.Budget).Sub(now)
	r.group = &groupRun{index: i, timer: m.cfg.Clock.NewTimer(max(left, 0)), terminated: terminated, stop: stop, watched: watched}
	r.publish()
	if left <= 0 {
		r.endGroup("its budget was spent before the agent restarted")
	}
}

// secondsUntil is the time from now to deadline in whole seconds, rounded
// up so that a deadline is never brought forward, never negative.
func secondsUntil(deadline, now time.Time) int64 {
	return max(int64(math.Ceil(deadline.Sub(now).Seconds())), 0)
}

// endGroup ends the group in progress and starts the next.
func (r *runner) endGroup(why string) {
	g := r.group
	r.stopGroup()
	rg := &r.rec.Groups[g.index]
	rg.EndedAt = r.m.cfg.Clock.Now()
	r.m.log.Info("node shutdown: group over", "priority", rg.Priority, "why", why, "took", rg.EndedAt.Sub(rg.StartedAt))
	r.persist()
	r.advance()
}

// stopGroup stops watching the group in progress, if any, and waits for
// its watchers to return.
func (r *runner) stopGroup() {
	g := r.group
	if g == nil {
		return
	}
	r.group = nil
	g.timer.Stop()
	g.stop()
	<-g.watched
}

// cancel calls the shutdown off: recorded first, then no further group,
// the node admits pods again and Done is closed.
func (r *runner) cancel() error {
	m := r.m
	if r.rec == nil || r.rec.State == Cancelled {
		return nil
	}
	now := m.cfg.Clock.Now()
	next := *r.rec
	next.State, next.EndedAt = Cancelled, now
	if err := m.save(&next); err != nil {
		return fmt.Errorf("cancel the node shutdown: %w", err)
	}
	r.stopGroup()
	prev := r.rec.State
	r.rec.State, r.rec.EndedAt = Cancelled, now
	m.cfg.Agent.SetShuttingDown(false)
	m.cfg.Agent.ShutdownEvent("Shutdown manager detected shutdown cancellation")
	r.publish()
	m.mu.Lock()
	if m.done != nil && prev == Terminating {
		close(m.done)
	}
	m.mu.Unlock()
	m.log.Info("node shutdown cancelled", "was", prev)
	return nil
}

// persist saves the record; a failure is logged, and the next save writes
// it whole again: the shutdown goes on, the machine is going down anyway.
func (r *runner) persist() {
	if err := r.m.save(r.rec); err != nil {
		r.m.log.Error("save the node shutdown", "err", err)
	}
}

func (m *Manager) save(rec *record) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode the node shutdown record: %w", err)
	}
	return m.cfg.Store.PutMeta(metaKey, string(data))
}

// publish stores the status for the readers and tells OnChange.
func (r *runner) publish() {
	m := r.m
	st := r.rec.status()
	m.mu.Lock()
	m.status = st
	m.shuttingDown = r.rec.State != Cancelled
	m.mu.Unlock()
	if m.cfg.OnChange != nil {
		m.cfg.OnChange()
	}
}

// copy is a deep copy of the status.
func copyStatus(s Status) Status {
	c := s
	c.Groups = nil
	for _, g := range s.Groups {
		g.Pods = append([]PodStatus(nil), g.Pods...)
		c.Groups = append(c.Groups, g)
	}
	return c
}
