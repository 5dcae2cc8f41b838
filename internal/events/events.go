package events

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/model"
)

// Event is one thing that happened to a pod or one of its containers, or
// to the node (Kind "Node": Pod then names the node).
type Event struct {
	// Kind of the object the event is about: "" or "Pod", or "Node".
	Kind      string
	Time      time.Time
	Type      string // v1.EventTypeNormal or v1.EventTypeWarning
	Reason    string // one of the Reason constants
	Namespace string
	Pod       string
	PodUID    types.UID
	// FieldPath names the container, e.g. "spec.containers{app}"; empty
	// when the event is about the whole pod.
	FieldPath string
	Message   string
	// Count is how many times the event happened, for an event of a
	// series (SeriesReason): Time is then the last time and Message the
	// last message. 0 or 1 is once.
	Count int32
	// FirstTime is when a series began; zero for an event that happened
	// once (Time is then the first time too).
	FirstTime time.Time
}

// Occurrences is how many times the event happened, at least 1.
func (e Event) Occurrences() int32 { return max(e.Count, 1) }

// First is when the event first happened: FirstTime, or Time for an event
// that happened once.
func (e Event) First() time.Time {
	if e.FirstTime.IsZero() {
		return e.Time
	}
	return e.FirstTime
}

// Line renders the event the way `podward run` prints it:
// "12:00:01 Normal Started spec.containers{app} Started container app".
func (e Event) Line() string {
	obj := e.FieldPath
	switch {
	case e.Kind == KindNode:
		obj = "node/" + e.Pod
	case obj == "":
		obj = "pod/" + e.Pod
	}
	line := fmt.Sprintf("%s %s %s %s %s", e.Time.Local().Format("15:04:05"), e.Type, e.Reason, obj, e.Message)
	if n := e.Occurrences(); n > 1 {
		line += fmt.Sprintf(" (x%d)", n)
	}
	return line
}

// Recorder keeps the newest events of each pod, and the newest of all, and
// fans every new event out to the watchers. It is safe for concurrent use,
// and recording never blocks on a slow watcher.
type Recorder struct {
	clock  clock.PassiveClock
	limits Limits

	mu    sync.Mutex
	byPod map[types.UID][]kept
	order []types.UID // pods in the order of their first event, for List
	// log names the pod of every kept event, oldest first, so that the
	// oldest of all goes first when there are more than limits.Total.
	// It also has entries of events dropped since (trimmed per pod or
	// forgotten with their pod), which are skipped, and compacted away
	// once they are as many as the kept ones.
	log      []logEntry
	total    int    // kept events
	seq      uint64 // the last event's number
	watchers map[*Watcher]struct{}
}

// kept is an event with its number in the order of recording.
type kept struct {
	Event
	seq uint64
}

type logEntry struct {
	uid types.UID
	seq uint64
}

// The default Limits.
const (
	// DefaultPerPod is how many events of one pod are kept.
	DefaultPerPod = 1000
	// DefaultTotal is how many events are kept in all: ten pods' worth of
	// DefaultPerPod, a few MB in memory and in the store. The API server
	// keeps events by age (an hour, --event-ttl); an agent keeps them by
	// count, so that a node that churns pods cannot grow them without end.
	DefaultTotal = 10 * DefaultPerPod
)

// Limits bound the events a Recorder keeps; the oldest go first.
type Limits struct {
	// PerPod is how many events of one pod (or of the node) are kept;
	// zero or less means DefaultPerPod.
	PerPod int
	// Total is how many events are kept in all; zero or less means
	// DefaultTotal.
	Total int
}

// NewRecorder keeps at most perPod events for each pod (older ones are
// dropped first), and DefaultTotal in all.
func NewRecorder(c clock.PassiveClock, perPod int) *Recorder {
	return NewRecorderWithLimits(c, Limits{PerPod: perPod})
}

// NewRecorderWithLimits keeps the events within limits.
func NewRecorderWithLimits(c clock.PassiveClock, limits Limits) *Recorder {
	if limits.PerPod <= 0 {
		limits.PerPod = DefaultPerPod
	}
	if limits.Total <= 0 {
		limits.Total = DefaultTotal
	}
	return &Recorder{clock: c, limits: limits, byPod: map[types.UID][]kept{}, watchers: map[*Watcher]struct{}{}}
}

// Eventf records an event about pod; fieldPath may be empty.
func (r *Recorder) Eventf(pod *model.Pod, fieldPath, eventType string, reason Reason, format string, args ...any) {
	e := Event{
		Time:      r.clock.Now(),
		Type:      eventType,
		Reason:    string(reason),
		Namespace: pod.Namespace,
		Pod:       pod.Name,
		PodUID:    pod.UID,
		FieldPath: fieldPath,
		Message:   fmt.Sprintf(format, args...),
	}
	r.Record(e)
}

// KindNode marks events about the node rather than a pod.
const KindNode = "Node"

// nodeUIDPrefix starts the keys of the nodes' events, which no pod UID
// starts with (a UID has no colon).
const nodeUIDPrefix = "node:"

// NodeUID is the key the events about the node are kept under: their
// PodUID.
func NodeUID(node string) types.UID { return types.UID(nodeUIDPrefix + node) }

// IsNodeUID says whether uid keys the events of a node rather than a pod's.
func IsNodeUID(uid types.UID) bool { return strings.HasPrefix(string(uid), nodeUIDPrefix) }

// NodeEventf records an event about the node itself (such as a bad static
// manifest). Its events are kept like one pod's, keyed NodeUID(node).
func (r *Recorder) NodeEventf(node, eventType string, reason Reason, format string, args ...any) {
	r.Record(Event{
		Kind: KindNode,
		// Kubernetes keeps node events in the default namespace.
		Namespace: "default",
		Time:      r.clock.Now(),
		Type:      eventType,
		Reason:    string(reason),
		Pod:       node,
		PodUID:    NodeUID(node),
		Message:   fmt.Sprintf(format, args...),
	})
}

// Record keeps a fully formed event and hands it to the watchers. An event
// of a series reason (SeriesReason) that repeats one kept of the same
// object (pod and field path), type and reason, last seen at most
// SeriesWindow before, is not kept anew: that one counts it (Count, Time,
// Message become the repeat's; FirstTime stays) in its place, and the
// watchers get it as it is then, as the Kubernetes event recorder's
// correlator updates an event's count and lastTimestamp.
func (r *Recorder) Record(e Event) {
	r.mu.Lock()
	if agg, ok := r.aggregateLocked(e); ok {
		e = agg
	} else {
		r.keepLocked(e)
	}
	for w := range r.watchers {
		w.push(e)
	}
	r.mu.Unlock()
}

// SeriesWindow is how long after an event of a series its repeat still
// counts in it; a later one begins a series of its own. It is the
// Kubernetes event correlator's aggregation interval (10 minutes).
const SeriesWindow = 10 * time.Minute

// aggregateLocked counts e in the kept event of its series, if there is
// one, and returns that event as it is then. The kept events of e's pod
// are its index: a series takes no memory but its one event, and is
// looked for among at most Limits.PerPod events. r.mu must be held.
func (r *Recorder) aggregateLocked(e Event) (Event, bool) {
	if !SeriesReason(Reason(e.Reason)) {
		return Event{}, false
	}
	list := r.byPod[e.PodUID]
	for i := len(list) - 1; i >= 0; i-- {
		k := &list[i].Event
		if k.Kind != e.Kind || k.FieldPath != e.FieldPath || k.Type != e.Type || k.Reason != e.Reason {
			continue
		}
		if e.Time.Sub(k.Time) > SeriesWindow {
			return Event{}, false
		}
		k.FirstTime = k.First()
		k.Count = k.Occurrences() + e.Occurrences()
		k.Time, k.Message = e.Time, e.Message
		return *k, true
	}
	return Event{}, false
}

// keepLocked keeps e as its pod's newest event, then drops the pod's
// oldest beyond limits.PerPod and the oldest of all beyond limits.Total.
// r.mu must be held.
func (r *Recorder) keepLocked(e Event) {
	r.seq++
	list, known := r.byPod[e.PodUID]
	if !known {
		r.order = append(r.order, e.PodUID)
	}
	list = append(list, kept{Event: e, seq: r.seq})
	r.log = append(r.log, logEntry{uid: e.PodUID, seq: r.seq})
	r.total++
	if drop := len(list) - r.limits.PerPod; drop > 0 {
		list = append(list[:0:0], list[drop:]...)
		r.total -= drop
	}
	r.byPod[e.PodUID] = list
	for r.total > r.limits.Total && len(r.log) > 0 {
		r.dropOldestLocked()
	}
	if len(r.log) > 2*r.total+64 {
		r.compactLocked()
	}
}

// dropOldestLocked drops the oldest kept event. r.mu must be held.
func (r *Recorder) dropOldestLocked() {
	for len(r.log) > 0 {
		en := r.log[0]
		r.log = r.log[1:]
		list := r.byPod[en.uid]
		if len(list) == 0 || list[0].seq != en.seq {
			continue // dropped already
		}
		r.total--
		if len(list) == 1 {
			r.forgetLocked(en.uid)
			return
		}
		r.byPod[en.uid] = list[1:]
		return
	}
}

// compactLocked drops the log's entries of events dropped already. Each
// pod's kept events are the newest it had, so an entry is of a kept event
// when it is not older than its pod's oldest. r.mu must be held.
func (r *Recorder) compactLocked() {
	live := make([]logEntry, 0, r.total)
	for _, en := range r.log {
		if list := r.byPod[en.uid]; len(list) > 0 && en.seq >= list[0].seq {
			live = append(live, en)
		}
	}
	r.log = live
}

// forgetLocked drops the events of uid; r.mu must be held.
func (r *Recorder) forgetLocked(uid types.UID) {
	r.total -= len(r.byPod[uid])
	delete(r.byPod, uid)
	for i, u := range r.order {
		if u == uid {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
}

// List returns a copy of the kept events of one pod, oldest first.
func (r *Recorder) List(uid types.UID) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return appendEvents(nil, r.byPod[uid])
}

func appendEvents(dst []Event, list []kept) []Event {
	for _, k := range list {
		dst = append(dst, k.Event)
	}
	return dst
}

// Forget drops the events of a pod that is gone.
func (r *Recorder) Forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.forgetLocked(uid)
}

// Watch returns a watcher that receives every event recorded from now on,
// until Stop.
func (r *Recorder) Watch() *Watcher {
	w := &Watcher{r: r, ready: make(chan struct{}, 1)}
	r.mu.Lock()
	r.watchers[w] = struct{}{}
	r.mu.Unlock()
	return w
}

// Watcher is an unbounded queue of events: the recorder never waits for it.
type Watcher struct {
	r     *Recorder
	mu    sync.Mutex
	queue []Event
	ready chan struct{}
}

// push is called with the recorder's lock held; it only appends and rings
// a 1-slot channel, so it never blocks.
func (w *Watcher) push(e Event) {
	w.mu.Lock()
	w.queue = append(w.queue, e)
	w.mu.Unlock()
	select {
	case w.ready <- struct{}{}:
	default:
	}
}

// Next returns the next event, waiting for one until ctx is done.
func (w *Watcher) Next(ctx context.Context) (Event, error) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			e := w.queue[0]
			w.queue = w.queue[1:]
			w.mu.Unlock()
			return e, nil
		}
		w.mu.Unlock()
		select {
		case <-w.ready:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// NextBatch returns every queued event, oldest first, waiting for one
// until ctx is done: a consumer that is slower than the recorder (one disk
// commit per call) takes what piled up meanwhile in one go. The caller owns
// the returned slice.
func (w *Watcher) NextBatch(ctx context.Context) ([]Event, error) {
	for {
		w.mu.Lock()
		if len(w.queue) > 0 {
			batch := w.queue
			w.queue = nil
			w.mu.Unlock()
			return batch, nil
		}
		w.mu.Unlock()
		select {
		case <-w.ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// Stop detaches the watcher from the recorder.
func (w *Watcher) Stop() {
	w.r.mu.Lock()
	delete(w.r.watchers, w)
	w.r.mu.Unlock()
}

// Convenience names for event types, so callers need not import core/v1.
const (
	Normal  = v1.EventTypeNormal
	Warning = v1.EventTypeWarning
)

// All returns a copy of every kept event, pods in the order of their first
// event, each pod's oldest first.
func (r *Recorder) All() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Event, 0, r.total)
	for _, uid := range r.order {
		out = appendEvents(out, r.byPod[uid])
	}
	return out
}

// Load puts back events kept from before a restart, oldest first, without
// handing them to watchers; the limits hold for them too. Call it before
// anything records.
func (r *Recorder) Load(evs []Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range evs {
		r.keepLocked(e)
	}
}
