package events

import (
	"context"
	"fmt"
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
	return fmt.Sprintf("%s %s %s %s %s", e.Time.Local().Format("15:04:05"), e.Type, e.Reason, obj, e.Message)
}

// Recorder keeps the newest events of each pod and fans every new event out
// to the watchers. It is safe for concurrent use, and recording never
// blocks on a slow watcher.
type Recorder struct {
	clock  clock.PassiveClock
	perPod int

	mu       sync.Mutex
	byPod    map[types.UID][]Event
	order    []types.UID // pods in the order of their first event, for List
	watchers map[*Watcher]struct{}
}

// NewRecorder keeps at most perPod events for each pod (older ones are
// dropped first).
func NewRecorder(c clock.PassiveClock, perPod int) *Recorder {
	if perPod <= 0 {
		perPod = 1000
	}
	return &Recorder{clock: c, perPod: perPod, byPod: map[types.UID][]Event{}, watchers: map[*Watcher]struct{}{}}
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

// NodeEventf records an event about the node itself (such as a bad static
// manifest). Its events are kept like one pod's, keyed "node:<name>".
func (r *Recorder) NodeEventf(node, eventType string, reason Reason, format string, args ...any) {
	r.Record(Event{
		Kind: KindNode,
		// Kubernetes keeps node events in the default namespace.
		Namespace: "default",
		Time:      r.clock.Now(),
		Type:      eventType,
		Reason:    string(reason),
		Pod:       node,
		PodUID:    types.UID("node:" + node),
		Message:   fmt.Sprintf(format, args...),
	})
}

// Record keeps a fully formed event and hands it to the watchers.
func (r *Recorder) Record(e Event) {
	r.mu.Lock()
	list, known := r.byPod[e.PodUID]
	if !known {
		r.order = append(r.order, e.PodUID)
	}
	list = append(list, e)
	if len(list) > r.perPod {
		list = append(list[:0:0], list[len(list)-r.perPod:]...)
	}
	r.byPod[e.PodUID] = list
	for w := range r.watchers {
		w.push(e)
	}
	r.mu.Unlock()
}

// List returns a copy of the kept events of one pod, oldest first.
func (r *Recorder) List(uid types.UID) []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.byPod[uid]...)
}

// Forget drops the events of a pod that is gone.
func (r *Recorder) Forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.byPod, uid)
	for i, u := range r.order {
		if u == uid {
			r.order = append(r.order[:i], r.order[i+1:]...)
			break
		}
	}
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
	var out []Event
	for _, uid := range r.order {
		out = append(out, r.byPod[uid]...)
	}
	return out
}

// Load puts back events kept from before a restart, oldest first, without
// handing them to watchers. Call it before anything records.
func (r *Recorder) Load(evs []Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range evs {
		list, known := r.byPod[e.PodUID]
		if !known {
			r.order = append(r.order, e.PodUID)
		}
		list = append(list, e)
		if len(list) > r.perPod {
			list = list[len(list)-r.perPod:]
		}
		r.byPod[e.PodUID] = list
	}
}
