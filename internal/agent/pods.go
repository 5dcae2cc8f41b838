package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
)

// The agent's pod API by namespace and name, as the API server serves it.

// ApplyResult says what Apply did.
type ApplyResult int

// Apply outcomes.
const (
	Created ApplyResult = iota + 1
	// Unchanged: a pod with the same spec exists; nothing was done.
	Unchanged
	// Replaced: the spec changed. As in Kubernetes a pod's spec is
	// immutable, so the old pod is deleted gracefully and the new one is
	// created, with a new UID, once the old one is gone.
	Replaced
	// Updated: the spec changed only as the API server lets an update of
	// a running pod change it (a lower spec.activeDeadlineSeconds, its
	// labels or annotations): the running pod took the change.
	Updated
)

func (r ApplyResult) String() string {
	switch r {
	case Created:
		return "created"
	case Unchanged:
		return "unchanged"
	case Replaced:
		return "replaced"
	case Updated:
		return "updated"
	default:
		return fmt.Sprintf("ApplyResult(%d)", int(r))
	}
}

// GetPod returns the pod namespace/name with its status.
func (a *Agent) GetPod(ns, name string) (*v1.Pod, error) {
	a.mu.Lock()
	e := a.lookupLocked(ns, name)
	a.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("%w: pods %q", ErrNotFound, name)
	}
	p, _, err := a.Get(e.pod.UID)
	return p, err
}

// ListPods returns the pods of namespace ns ("" for all), sorted by
// namespace and name.
func (a *Agent) ListPods(ns string) []*v1.Pod {
	a.mu.Lock()
	var uids []types.UID
	for uid, e := range a.pods {
		if ns == "" || e.pod.Namespace == ns {
			uids = append(uids, uid)
		}
	}
	a.mu.Unlock()
	out := make([]*v1.Pod, 0, len(uids))
	for _, uid := range uids {
		if p, _, err := a.Get(uid); err == nil {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// Apply creates the pod, or replaces the pod of the same namespace/name
// when its spec changed, or does nothing when it did not. A change the API
// server lets an update of a running pod make, and the only one — its
// spec.activeDeadlineSeconds set or lowered (ValidatePodUpdate) — is made
// to the pod instead while it runs (not deleted, rejected nor terminated),
// as kubectl apply makes it (Updated; see SetActiveDeadline). A pod it creates — the replacement too, once the old
// pod is gone — that the node does not admit then is recorded rejected, as
// by Create.
func (a *Agent) Apply(pod *model.Pod) (*v1.Pod, ApplyResult, error) {
	return a.apply(pod, true)
}

// ApplyStatic is Apply for a static pod (a manifest file's): any change of
// its spec replaces it, as the kubelet makes a static pod whose manifest
// changed another pod (its file source derives the pod's UID from the
// manifest's content).
func (a *Agent) ApplyStatic(pod *model.Pod) (*v1.Pod, ApplyResult, error) {
	return a.apply(pod, false)
}

// apply is Apply; inPlace says whether a change a running pod may take is
// made to it rather than replacing it.
func (a *Agent) apply(pod *model.Pod, inPlace bool) (*v1.Pod, ApplyResult, error) {
	model.Default(pod)
	if err := a.Admit(pod); err != nil {
		return nil, 0, err
	}
	pod.Spec.NodeName = a.cfg.NodeName
	a.mu.Lock()
	e := a.lookupLocked(pod.Namespace, pod.Name)
	if e == nil {
		a.addLocked(pod)
		a.mu.Unlock()
		if err := a.launch(pod); err != nil {
			return nil, 0, err
		}
		p, _, err := a.Get(pod.UID)
		return p, Created, err
	}
	if e.replacement == nil && sameSpec(e.pod, pod) {
		a.mu.Unlock()
		p, _, err := a.Get(e.pod.UID)
		return p, Unchanged, err
	}
	if e.replacement != nil && sameSpec(e.replacement, pod) {
		a.mu.Unlock()
		p, _, err := a.Get(e.pod.UID)
		return p, Unchanged, err
	}
	if inPlace && e.replacement == nil && e.deletion == nil && !isRejected(e.pod) &&
		!a.workers.IsPodKnownTerminated(e.pod.UID) && deadlineUpdate(e.pod, pod) {
		uid := e.pod.UID
		a.mu.Unlock()
		if _, err := a.setActiveDeadline(uid, pod.Spec.ActiveDeadlineSeconds, 0, true); err != nil {
			return nil, 0, err
		}
		// Get answers with the recorded spec, which the worker publishes
		// only at its next step.
		p, _, err := a.Get(uid)
		if err != nil {
			return nil, 0, err
		}
		return p, Updated, nil
	}
	if inPlace && e.replacement == nil && e.deletion == nil && !isRejected(e.pod) &&
		!a.workers.IsPodKnownTerminated(e.pod.UID) && metadataUpdate(e.pod, pod) {
		uid := e.pod.UID
		a.mu.Unlock()
		if err := a.SyncMetadata(uid, pod.Labels, pod.Annotations); err != nil {
			return nil, 0, err
		}
		p, _, err := a.Get(uid)
		if err != nil {
			return nil, 0, err
		}
		// The worker publishes the new metadata at its next step.
		p.Labels, p.Annotations = pod.Labels, pod.Annotations
		return p, Updated, nil
	}
	e.replacement = pod
	old := e.pod.UID
	a.mu.Unlock()
	return a.replace(old, pod)
}

// replace carries out an apply that has just handed next over as the
// replacement of the pod old (entry.replacement, under a.mu): it stores
// the replacement, asks for the old pod's deletion and answers Replaced
// with the old pod as it is now.
//
// From the handover on, the replacement is the old pod's to create: only
// its reap, or a forced delete (grace period 0) taking it out of the pod
// API, removes a pod, and either reads entry.replacement under a.mu when it
// does. So the old pod may be gone by the time its deletion is asked — it
// had been deleted already (by an earlier apply, or forced) and finished
// terminating meanwhile — and then its removal has created next: the apply
// did what it asked for, which is no "not found".
func (a *Agent) replace(old types.UID, next *model.Pod) (*v1.Pod, ApplyResult, error) {
	if err := a.persistReplacement(old, next); err != nil {
		return nil, 0, err
	}
	switch err := a.Delete(old, nil, StopReplaced); {
	case errors.Is(err, ErrNotFound):
		// The removal may have cleared the stored replacement before
		// persistReplacement wrote it: the old pod is gone, and so goes
		// its replacement's record.
		a.clearReplacement(old)
	case err != nil:
		return nil, 0, err
	}
	// A removed pod's last status is kept (Get), so the old pod is found.
	p, _, err := a.Get(old)
	return p, Replaced, err
}

// deadlineUpdate reports whether next asks for what old does but for its
// spec.activeDeadlineSeconds, which it sets or lowers: the one change of a
// running pod's spec the API server allows (ValidatePodUpdate: never
// raised, never unset; besides images, tolerations added and scheduling
// gates removed, which podward does not take in place) that the node acts
// on.
func deadlineUpdate(old, next *model.Pod) bool {
	was, now := old.Spec.ActiveDeadlineSeconds, next.Spec.ActiveDeadlineSeconds
	if now == nil || was != nil && *now >= *was {
		return false
	}
	cp := &model.Pod{Pod: next.Pod.DeepCopy(), Defer: next.Defer}
	cp.Spec.ActiveDeadlineSeconds = was
	return sameSpec(old, cp)
}

// SetActiveDeadline is an update of the running pod uid that sets its
// spec.activeDeadlineSeconds to seconds (cluster mode: the API server's
// pod was updated so, having checked that it is set or lowered); the
// generation is the API server's for that spec. The pod's worker counts
// the new deadline from the pod's start time at once, as the kubelet's
// active deadline handler reads the spec at each sync
// (pkg/kubelet/active_deadline.go): a pod already active that long ends
// Failed, DeadlineExceeded. The same value is nothing to do.
func (a *Agent) SetActiveDeadline(uid types.UID, seconds *int64, generation int64) error {
	_, err := a.setActiveDeadline(uid, seconds, generation, false)
	return err
}

// setActiveDeadline makes seconds the spec.activeDeadlineSeconds of the
// pod uid: stored, then handed to its worker (updateSpec). Its generation
// is nextGeneration's. It returns the pod it recorded.
func (a *Agent) setActiveDeadline(uid types.UID, seconds *int64, generation int64, ownAPI bool) (*model.Pod, error) {
	a.specChangeMu.Lock()
	defer a.specChangeMu.Unlock()
	cur, err := a.recorded(uid)
	if err != nil {
		return nil, err
	}
	if equality.Semantic.DeepEqual(cur.Spec.ActiveDeadlineSeconds, seconds) {
		return cur, nil
	}
	next := &model.Pod{Pod: cur.Pod.DeepCopy(), Defer: cur.Defer}
	if seconds != nil {
		s := *seconds
		next.Spec.ActiveDeadlineSeconds = &s
	} else {
		next.Spec.ActiveDeadlineSeconds = nil
	}
	next.Generation = nextGeneration(cur, generation, ownAPI)
	return a.updateSpec(uid, next)
}

// sameSpec reports whether two pods ask for the same thing: the spec, the
// defer containers, labels and annotations. The ephemeral containers added
// to the running pod do not count: a manifest never has them (they cannot
// be set on create), and applying it again leaves them be.
func sameSpec(old, next *model.Pod) bool {
	a, b := old.Spec, next.Spec
	a.EphemeralContainers, b.EphemeralContainers = nil, nil
	return equality.Semantic.DeepEqual(a, b) &&
		equality.Semantic.DeepEqual(old.Defer, next.Defer) &&
		equality.Semantic.DeepEqual(old.Labels, next.Labels) &&
		equality.Semantic.DeepEqual(old.Annotations, next.Annotations)
}

// DeletePod asks for the graceful termination of namespace/name and
// returns the pod as it is now (with its deletionTimestamp once the worker
// has taken the kill). A grace period of 0 is a forced delete: the pod
// leaves the pod API at once (see Delete).
func (a *Agent) DeletePod(ns, name string, grace *int64) (*v1.Pod, error) {
	a.mu.Lock()
	e := a.lookupLocked(ns, name)
	a.mu.Unlock()
	if e == nil {
		return nil, fmt.Errorf("%w: pods %q", ErrNotFound, name)
	}
	if err := a.Delete(e.pod.UID, grace, StopDeleted); err != nil {
		return nil, err
	}
	p, _, err := a.Get(e.pod.UID)
	return p, err
}

// LogPath returns the CRI log file of a container of namespace/name: the
// current instance, or the previous one. container may be empty when the
// pod has a single regular container.
func (a *Agent) LogPath(ns, name, container string, previous bool) (string, error) {
	p, err := a.GetPod(ns, name)
	if err != nil {
		return "", err
	}
	if container == "" {
		if len(p.Spec.Containers) != 1 {
			names := make([]string, 0, len(p.Spec.Containers))
			for _, c := range p.Spec.Containers {
				names = append(names, c.Name)
			}
			return "", BadRequestf("a container name must be specified for pod %s, choose one of: %v", name, names)
		}
		container = p.Spec.Containers[0].Name
	}
	restarts, ok := restartCount(p, container)
	if !ok {
		return "", BadRequestf("container %s is not valid for pod %s", container, name)
	}
	attempt := restarts
	if previous {
		if restarts == 0 {
			return "", BadRequestf("previous terminated container %q in pod %q not found", container, name)
		}
		attempt--
	}
	return a.cfg.Runtime.LogPath(p.UID, container, attempt), nil
}

// ErrBadRequest is matched (errors.Is) by every *BadRequestError.
var ErrBadRequest = errors.New("bad request")

// BadRequestError is a request that cannot be served as asked. Message says
// why, in words meant for the client: the API servers send it as it is (a
// 400 of the pod API, the kubelet API's refusal). It matches ErrBadRequest.
type BadRequestError struct {
	Message string
}

func (e *BadRequestError) Error() string { return ErrBadRequest.Error() + ": " + e.Message }

// Is makes errors.Is(err, ErrBadRequest) true.
func (e *BadRequestError) Is(target error) bool { return target == ErrBadRequest }

// BadRequestf is a *BadRequestError whose message is formatted as by
// fmt.Sprintf.
func BadRequestf(format string, args ...any) error {
	return &BadRequestError{Message: fmt.Sprintf(format, args...)}
}

// restartCount finds a container's restart count in the pod's statuses,
// the defer containers' annotation included.
func restartCount(p *v1.Pod, name string) (int, bool) {
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, deferStatuses(p), p.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name {
				return int(cs.RestartCount), true
			}
		}
	}
	return 0, false
}

func deferStatuses(p *v1.Pod) []v1.ContainerStatus {
	mp, err := model.FromV1(p)
	if err != nil {
		return nil
	}
	return mp.DeferStatuses()
}

// WatchEvent is one change of a pod, as Kubernetes watch events are.
type WatchEvent struct {
	Type string // "ADDED", "MODIFIED" or "DELETED"
	Pod  *v1.Pod
}

// WatchPods sends an ADDED event for every pod of ns ("" for all) that
// exists when it is called, then one event per change, until ctx ends. The
// channel is closed then. The first look is taken before WatchPods
// returns, so a pod removed right after the call is seen as DELETED.
func (a *Agent) WatchPods(ctx context.Context, ns string) <-chan WatchEvent {
	out := make(chan WatchEvent)
	// What was sent of each pod: its resource version, and its identity
	// for a DELETED event that comes after the agent forgot the pod
	// (only maxFinal removed pods are kept): a watch that lags behind a
	// mass delete still names every pod it says is gone.
	sent := map[types.UID]uint64{}
	names := map[types.UID]metav1.ObjectMeta{}
	changed, gone, since, ch := a.watchLook(ns, 0, sent)
	started := a.spawn(func() {
		defer close(out)
		for {
			for _, it := range changed {
				p, _, err := a.Get(it.uid)
				if err != nil {
					continue
				}
				typ := "MODIFIED"
				if _, seen := sent[it.uid]; !seen {
					typ = "ADDED"
				}
				sent[it.uid] = it.rv
				names[it.uid] = metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID}
				if !send(ctx, out, WatchEvent{Type: typ, Pod: p}) {
					return
				}
			}
			for _, uid := range gone {
				delete(sent, uid)
				p, _, err := a.Get(uid)
				if err != nil {
					p = &v1.Pod{ObjectMeta: names[uid]}
				}
				delete(names, uid)
				if !send(ctx, out, WatchEvent{Type: "DELETED", Pod: p}) {
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-ch:
			case <-a.ctx.Done():
				return
			}
			changed, gone, since, ch = a.watchLook(ns, since, sent)
		}
	})
	if !started {
		close(out)
	}
	return out
}

// watchItem is a pod a watch has to send: its UID, its resource version.
type watchItem struct {
	uid types.UID
	rv  uint64
}

// watchLook returns, under a.mu, the pods of ns ("" for all) whose
// resource version is above since and those of sent that are gone, with
// the agent's resource version and the channel its next change closes.
// It looks at the pods the change log says changed after since; a watch
// behind by more than the log holds looks at every pod once, and at
// sent's only when some of them were removed. sent (a pod's UID: the
// resource version sent of it) is the calling watch's.
func (a *Agent) watchLook(ns string, since uint64, sent map[types.UID]uint64) (changed []watchItem, gone []types.UID, rv uint64, ch <-chan struct{}) {
	a.mu.Lock()
	defer a.mu.Unlock()
	looked := map[types.UID]bool{}
	logged := a.changes.since(since, a.rv, func(uid types.UID) {
		if looked[uid] {
			return
		}
		looked[uid] = true
		e, ok := a.pods[uid]
		switch {
		case ok && (ns == "" || e.pod.Namespace == ns) && e.rv > since:
			changed = append(changed, watchItem{uid, e.rv})
		case !ok:
			if _, was := sent[uid]; was {
				gone = append(gone, uid)
			}
		}
	})
	if logged {
		return changed, gone, a.rv, a.changed
	}
	changed, gone = nil, nil
	n, added := 0, 0
	for uid, e := range a.pods {
		if ns != "" && e.pod.Namespace != ns {
			continue
		}
		n++
		if e.rv > since {
			changed = append(changed, watchItem{uid, e.rv})
			if _, ok := sent[uid]; !ok {
				added++
			}
		}
	}
	if len(sent)+added > n {
		for uid := range sent {
			if _, ok := a.pods[uid]; !ok {
				gone = append(gone, uid)
			}
		}
	}
	return changed, gone, a.rv, a.changed
}

func send[T any](ctx context.Context, ch chan<- T, v T) bool {
	select {
	case ch <- v:
		return true
	case <-ctx.Done():
		return false
	}
}

// ListEvents returns the kept events of namespace ns ("" for all), or of
// one pod when name is set, oldest first, as Kubernetes Events.
func (a *Agent) ListEvents(ns, name string) []v1.Event {
	var out []v1.Event
	for _, e := range a.recorder.All() {
		if (ns == "" || e.Namespace == ns) && (name == "" || (e.Kind != events.KindNode && e.Pod == name)) {
			out = append(out, ToV1(e, a.cfg.NodeName))
		}
	}
	return out
}

// WatchEvents sends every event recorded from now on in namespace ns (""
// for all) until ctx ends; the channel is closed then.
func (a *Agent) WatchEvents(ctx context.Context, ns string) <-chan v1.Event {
	out := make(chan v1.Event)
	w := a.recorder.Watch()
	started := a.spawn(func() {
		defer close(out)
		defer w.Stop()
		for {
			e, err := w.Next(ctx)
			if err != nil {
				return
			}
			if ns != "" && e.Namespace != ns {
				continue
			}
			if !send(ctx, out, ToV1(e, a.cfg.NodeName)) {
				return
			}
		}
	})
	if !started {
		w.Stop()
		close(out)
	}
	return out
}

func involved(e events.Event) v1.ObjectReference {
	if e.Kind == events.KindNode {
		return v1.ObjectReference{Kind: "Node", APIVersion: "v1", Name: e.Pod}
	}
	return v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: e.Namespace, Name: e.Pod, UID: e.PodUID, FieldPath: e.FieldPath}
}

// ManifestError reports a static manifest that cannot be used as an event
// about the node. Pods of other files are not affected.
func (a *Agent) ManifestError(file string, err error) {
	// The source has logged it already: record the event only.
	a.recorder.NodeEventf(a.cfg.NodeName, events.Warning, events.FailedManifest, "Static pod manifest %s: %v", file, err)
}

// ToV1 renders a recorded event as a Kubernetes core/v1 Event. The events
// of one series (events.SeriesReason) have one name, from their first
// time, with their count and last time.
func ToV1(e events.Event, host string) v1.Event {
	first := e.First()
	return v1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      e.Pod + "." + strconv.FormatInt(first.UnixNano(), 16),
			Namespace: e.Namespace,
		},
		InvolvedObject: involved(e),
		Reason:         e.Reason,
		Message:        e.Message,
		Type:           e.Type,
		Source:         v1.EventSource{Component: "podward", Host: host},
		FirstTimestamp: metav1.NewTime(first),
		LastTimestamp:  metav1.NewTime(e.Time),
		Count:          e.Occurrences(),
	}
}

// LogEnded returns a channel closed once the container instance whose log
// is path (as LogPath gave it for ns/name's container) no longer runs: it
// exited, a newer instance replaced it, or the pod is gone. A follower of
// the log then reads it to its end and stops, as `kubectl logs -f` does
// when the container ends. The watch it holds ends with ctx.
func (a *Agent) LogEnded(ctx context.Context, ns, name, container, path string) <-chan struct{} {
	done := make(chan struct{})
	events := a.WatchPods(ctx, ns)
	ended := func() bool {
		p, err := a.GetPod(ns, name)
		if err != nil {
			return true
		}
		if cur, err := a.LogPath(ns, name, container, false); err != nil || cur != path {
			return true
		}
		return !containerRunning(p, container)
	}
	go func() {
		defer func() {
			for range events { // until ctx ends
			}
		}()
		if ended() {
			close(done)
			return
		}
		for ev := range events {
			if ev.Pod.Name == name && ended() {
				close(done)
				return
			}
		}
	}()
	return done
}

// containerRunning says whether the pod's status shows the container
// running.
func containerRunning(p *v1.Pod, name string) bool {
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses, deferStatuses(p), p.Status.EphemeralContainerStatuses} {
		for _, cs := range list {
			if cs.Name == name {
				return cs.State.Running != nil
			}
		}
	}
	return false
}
