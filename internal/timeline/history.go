package timeline

import (
	"fmt"
	"slices"
	"sync"
	"time"
)

// NoteKind says what a Note tells.
type NoteKind int

// Note kinds start at one so that the zero value is never valid.
const (
	// NoteStarted: an instance (Container, Role, Attempt) started at At.
	NoteStarted NoteKind = iota + 1
	// NoteStopRequested: the worker began the instance's stop.
	NoteStopRequested
	// NoteSignalled: the instance's stop signal (Signal) went out.
	NoteSignalled
	// NoteKilled: the worker sent the instance SIGKILL.
	NoteKilled
	// NoteExited: the instance exited at At with ExitCode and Reason.
	NoteExited
	// NoteProbeFailed: a probe attempt of the instance failed (Detail is
	// the probe).
	NoteProbeFailed
	// NoteTerminationBegan: the pod's termination began at At (Detail is
	// why), with its deadline (Deadline; GraceSeconds).
	NoteTerminationBegan
	// NoteDeadlineShortened: a later request brought the deadline
	// forward to Deadline.
	NoteDeadlineShortened
	// NoteTerminated: nothing of the pod runs any more.
	NoteTerminated
)

// Note is one thing the pod worker tells the History, as it happens.
type Note struct {
	Kind         NoteKind
	At           time.Time
	Container    string
	Role         Role
	Attempt      int
	Signal       string
	ExitCode     int32
	Reason       string
	Detail       string
	Deadline     time.Time
	GraceSeconds int64
}

// The default Limits.
const (
	// DefaultInstancesPerPod is how many instances of one pod are kept.
	DefaultInstancesPerPod = 100
	// DefaultMarksPerPod is how many marks of one pod are kept.
	DefaultMarksPerPod = 100
	// DefaultTotal is how many instances and marks are kept in all: fifty
	// pods' worth, a few MB at most.
	DefaultTotal = 50 * (DefaultInstancesPerPod + DefaultMarksPerPod)
)

// Limits bound what a History keeps; the oldest goes first. Zero or less
// means the default.
type Limits struct {
	InstancesPerPod int
	MarksPerPod     int
	Total           int
}

// History keeps the timelines of the pods, bounded per pod and in all,
// and says which changed since they were last taken (for whoever persists
// them). It is safe for concurrent use, and Note never blocks.
type History struct {
	limits Limits

	mu    sync.Mutex
	pods  map[string]*Pod // by UID
	total int             // instances and marks kept
	dirty map[string]bool
	// changed has a value while dirty is not empty.
	changed chan struct{}
}

// NewHistory keeps timelines within limits.
func NewHistory(limits Limits) *History {
	if limits.InstancesPerPod <= 0 {
		limits.InstancesPerPod = DefaultInstancesPerPod
	}
	if limits.MarksPerPod <= 0 {
		limits.MarksPerPod = DefaultMarksPerPod
	}
	if limits.Total <= 0 {
		limits.Total = DefaultTotal
	}
	return &History{limits: limits, pods: map[string]*Pod{}, dirty: map[string]bool{}, changed: make(chan struct{}, 1)}
}

// Note records n about the pod ref. A note about an instance the History
// no longer has (dropped) is ignored.
func (h *History) Note(ref PodRef, n Note) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p := h.pods[ref.UID]
	if p == nil {
		p = &Pod{PodRef: ref}
		h.pods[ref.UID] = p
	}
	before := len(p.Instances) + len(p.Marks)
	apply(p, n)
	h.total += len(p.Instances) + len(p.Marks) - before
	h.trimPod(p)
	h.trimTotal()
	h.markDirty(ref.UID)
}

// apply changes p as n tells.
func apply(p *Pod, n Note) {
	switch n.Kind {
	case NoteStarted:
		if in := p.instance(n.Container, n.Attempt); in != nil {
			in.StartedAt = n.At // told again (an instance adopted after a restart)
			return
		}
		p.Instances = append(p.Instances, Instance{Container: n.Container, Role: n.Role, Attempt: n.Attempt, StartedAt: n.At})
	case NoteStopRequested, NoteSignalled, NoteKilled, NoteExited:
		if in := p.instance(n.Container, n.Attempt); in != nil {
			applyToInstance(in, n)
		}
	case NoteProbeFailed:
		p.Marks = append(p.Marks, Mark{Kind: MarkProbeFailed, At: n.At, Container: n.Container, Attempt: n.Attempt, Detail: n.Detail})
	case NoteTerminationBegan:
		p.Marks = append(p.Marks,
			Mark{Kind: MarkTerminationRequested, At: n.At, Detail: n.Detail},
			Mark{Kind: MarkDeadline, At: n.Deadline, Detail: graceDetail(n.GraceSeconds)})
	case NoteDeadlineShortened:
		if m := p.mark(MarkDeadline); m != nil {
			m.At, m.Detail = n.Deadline, graceDetail(n.GraceSeconds)
		}
	case NoteTerminated:
		p.Marks = append(p.Marks, Mark{Kind: MarkTerminated, At: n.At})
	}
}

func applyToInstance(in *Instance, n Note) {
	switch n.Kind {
	case NoteStopRequested:
		if in.StopRequestedAt.IsZero() {
			in.StopRequestedAt = n.At
		}
	case NoteSignalled:
		if in.SignalledAt.IsZero() {
			in.SignalledAt, in.Signal = n.At, n.Signal
		}
	case NoteKilled:
		if in.KilledAt.IsZero() {
			in.KilledAt = n.At
		}
	case NoteExited:
		in.FinishedAt, in.ExitCode, in.Reason = n.At, n.ExitCode, n.Reason
	}
}

func graceDetail(s int64) string {
	return fmt.Sprintf("%ds grace period", s)
}

// instance returns the newest instance of container with attempt, or nil.
func (p *Pod) instance(container string, attempt int) *Instance {
	for i := len(p.Instances) - 1; i >= 0; i-- {
		if in := &p.Instances[i]; in.Container == container && in.Attempt == attempt {
			return in
		}
	}
	return nil
}

// trimPod drops p's oldest instances and marks beyond the per-pod
// limits; of the marks, probe failures go first. h.mu must be held.
func (h *History) trimPod(p *Pod) {
	if drop := len(p.Instances) - h.limits.InstancesPerPod; drop > 0 {
		p.Instances = slices.Delete(p.Instances, 0, drop)
		h.dropped(p, drop)
	}
	for len(p.Marks) > h.limits.MarksPerPod {
		i := slices.IndexFunc(p.Marks, func(m Mark) bool { return m.Kind == MarkProbeFailed })
		p.Marks = slices.Delete(p.Marks, max(i, 0), max(i, 0)+1)
		h.dropped(p, 1)
	}
}

func (h *History) dropped(p *Pod, n int) {
	p.Dropped += n
	h.total -= n
}

// trimTotal drops the oldest instance or mark of all while more than
// limits.Total are kept. h.mu must be held.
func (h *History) trimTotal() {
	for h.total > h.limits.Total {
		var oldest *Pod
		var at time.Time
		for _, p := range h.pods {
			if t, ok := p.oldest(); ok && (oldest == nil || t.Before(at)) {
				oldest, at = p, t
			}
		}
		if oldest == nil {
			return
		}
		if len(oldest.Instances) > 0 && oldest.Instances[0].StartedAt.Equal(at) {
			oldest.Instances = slices.Delete(oldest.Instances, 0, 1)
		} else {
			oldest.Marks = slices.Delete(oldest.Marks, 0, 1)
		}
		h.dropped(oldest, 1)
		h.markDirty(oldest.UID)
		if len(oldest.Instances)+len(oldest.Marks) == 0 {
			delete(h.pods, oldest.UID)
		}
	}
}

// oldest is the time of p's oldest instance or mark.
func (p *Pod) oldest() (time.Time, bool) {
	var t time.Time
	ok := false
	if len(p.Instances) > 0 {
		t, ok = p.Instances[0].StartedAt, true
	}
	if len(p.Marks) > 0 && (!ok || p.Marks[0].At.Before(t)) {
		t, ok = p.Marks[0].At, true
	}
	return t, ok
}

// markDirty notes that uid changed; h.mu must be held. It rings changed
// without blocking.
func (h *History) markDirty(uid string) {
	h.dirty[uid] = true
	select {
	case h.changed <- struct{}{}:
	default:
	}
}

// Get returns a copy of the timeline of the pod uid, owned by the caller,
// without Now; false when the History has none.
func (h *History) Get(uid string) (*Pod, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.pods[uid]
	if !ok {
		return nil, false
	}
	return p.clone(), true
}

func (p *Pod) clone() *Pod {
	c := *p
	c.Instances = slices.Clone(p.Instances)
	c.Marks = slices.Clone(p.Marks)
	return &c
}

// Forget drops the timeline of a pod, without marking it changed: its
// persisted record goes with the pod's other records.
func (h *History) Forget(uid string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.pods[uid]; ok {
		h.total -= len(p.Instances) + len(p.Marks)
		delete(h.pods, uid)
	}
	delete(h.dirty, uid)
}

// Load puts back a timeline kept from before a restart, within the
// limits. Call it before anything notes.
func (h *History) Load(p *Pod) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := p.clone()
	c.Gone, c.Now = false, time.Time{}
	if old, ok := h.pods[c.UID]; ok {
		h.total -= len(old.Instances) + len(old.Marks)
	}
	h.pods[c.UID] = c
	h.total += len(c.Instances) + len(c.Marks)
	h.trimPod(c)
	h.trimTotal()
}

// Changed has a value once a timeline changed since the last Take.
func (h *History) Changed() <-chan struct{} { return h.changed }

// Take returns copies of the timelines that changed since the last Take,
// by UID; a timeline dropped meanwhile is nil.
func (h *History) Take() map[string]*Pod {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]*Pod, len(h.dirty))
	for uid := range h.dirty {
		if p, ok := h.pods[uid]; ok {
			out[uid] = p.clone()
		} else {
			out[uid] = nil
		}
	}
	clear(h.dirty)
	select {
	case <-h.changed:
	default:
	}
	return out
}
