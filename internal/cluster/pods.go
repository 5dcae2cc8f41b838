package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
)

// PodAgent is what the pod source needs of the node's agent: the same
// agent, pod workers and runtime as standalone mode. The API server is only
// another source of pods.
type PodAgent interface {
	Sync(pod *model.Pod) error
	SyncEphemeralContainers(uid types.UID, generation int64, ecs []v1.EphemeralContainer) error
	SyncResources(uid types.UID, pod *v1.Pod) error
	SyncConditions(uid types.UID, conds []v1.PodCondition) error
	// SyncMetadata updates the labels and annotations of a pod the agent
	// runs and writes its downwardAPI volumes again; the same ones are
	// nothing to do.
	SyncMetadata(uid types.UID, labels, annotations map[string]string) error
	SetActiveDeadline(uid types.UID, seconds *int64, generation int64) error
	Known(uid types.UID) bool
	Delete(uid types.UID, grace *int64, reason agent.StopReason) error
	Get(uid types.UID) (*v1.Pod, agent.Phase, error)
	ListPods(ns string) []*v1.Pod
	WatchPods(ctx context.Context, ns string) <-chan agent.WatchEvent
	WatchEvents(ctx context.Context, ns string) <-chan v1.Event
}

// PodsConfig wires a Pods.
type PodsConfig struct {
	Client   kubernetes.Interface
	NodeName string
	Agent    PodAgent
	Logger   *slog.Logger
	// StatusDelay coalesces status writes: a pod's status is written at
	// most once per StatusDelay, with its latest state, so that a busy
	// node does not flood the API server. Default 200ms.
	StatusDelay time.Duration
}

// Reasons of pods this node rejects, as the kubelet marks them.
const (
	// ReasonUnsupported: the pod asks for something this node's runtime
	// cannot do (for example a container without a command on the
	// process runtime).
	ReasonUnsupported = "UnsupportedPodSpec"
)

// Pods keeps the agent's pods in step with the pods the API server binds to
// this node, and the API server's pods in step with what the agent does:
//
//   - a pod bound to the node is handed to the agent (Sync);
//   - a pod that gets a deletionTimestamp is killed with its deletion grace
//     period, and its API object deleted (grace 0, UID precondition) as soon
//     as the pod is terminated — not when the grace period ends; container
//     and volume removal go on afterwards and never hold the deletion up;
//   - a pod gone from the API server (force-deleted, or deleted while the
//     agent was down) is killed;
//   - the agent's status of each pod goes to the status subresource,
//     coalesced; the defer containers' statuses to their annotation;
//   - the agent's events go to core/v1 Events.
type Pods struct {
	cfg PodsConfig
	log *slog.Logger

	syncQ   workqueue.TypedDelayingInterface[types.UID]
	statusQ workqueue.TypedDelayingInterface[types.UID]

	mu sync.Mutex
	// api is the latest API object of each pod the informer gave, nil
	// once the API server no longer has it.
	api map[types.UID]*v1.Pod
	// written is the last status written per pod, to skip no-op writes
	// and to remove the conditions the node no longer has.
	written map[types.UID]writtenStatus
	// deleted: the API object was deleted (or found gone).
	deleted map[types.UID]bool
	// refused are the ephemeral containers of each pod that the agent
	// refused (syncEphemeral), by name, with the status that says why.
	refused map[types.UID]map[string]refusedContainer
	// handed is the metadata of each pod last handed to the agent
	// (syncMetadata), to hand it only what changed.
	handed map[types.UID]podMeta
}

// refusedContainer is an ephemeral container the node will not run: its
// index in the API server's spec.ephemeralContainers and its status.
type refusedContainer struct {
	index  int
	status v1.ContainerStatus
}

// ReasonCreateContainerConfigError is the waiting reason of an ephemeral
// container the node refused, the kubelet's for a container whose
// configuration it cannot make (pkg/kubelet/kuberuntime/kuberuntime_container.go,
// ErrCreateContainerConfig).
const ReasonCreateContainerConfigError = "CreateContainerConfigError"

// NewPods returns a pod source for cfg.NodeName.
func NewPods(cfg PodsConfig) *Pods {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.StatusDelay == 0 {
		cfg.StatusDelay = 200 * time.Millisecond
	}
	return &Pods{
		cfg:     cfg,
		log:     cfg.Logger,
		syncQ:   workqueue.NewTypedDelayingQueue[types.UID](),
		statusQ: workqueue.NewTypedDelayingQueue[types.UID](),
		api:     map[types.UID]*v1.Pod{},
		written: map[types.UID]writtenStatus{},
		deleted: map[types.UID]bool{},
		refused: map[types.UID]map[string]refusedContainer{},
		handed:  map[types.UID]podMeta{},
	}
}

// Run watches the node's pods until ctx ends. Once the informer has
// synced, pods the agent runs but the API server does not have are killed:
// they were deleted while the agent was down.
func (p *Pods) Run(ctx context.Context) error {
	defer p.syncQ.ShutDown()
	defer p.statusQ.ShutDown()
	factory := informers.NewSharedInformerFactoryWithOptions(p.cfg.Client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", p.cfg.NodeName).String()
		}))
	inf := factory.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { p.observe(obj, false) },
		UpdateFunc: func(_, obj any) { p.observe(obj, false) },
		DeleteFunc: func(obj any) { p.observe(obj, true) },
	}); err != nil {
		return fmt.Errorf("watch the pods of node %s: %w", p.cfg.NodeName, err)
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return ctx.Err()
	}
	// Watch the agent before anything is handed to it: what it records
	// from then on must all reach the API server.
	agentPods := p.cfg.Agent.WatchPods(ctx, "")
	agentEvents := p.cfg.Agent.WatchEvents(ctx, "")
	p.killUnknown(inf.GetStore())

	var wg sync.WaitGroup
	wg.Add(4)
	go func() { defer wg.Done(); p.work(ctx, p.syncQ, p.syncPod) }()
	go func() { defer wg.Done(); p.work(ctx, p.statusQ, p.writeStatus) }()
	go func() { defer wg.Done(); p.watchAgent(agentPods) }()
	go func() { defer wg.Done(); p.postEvents(ctx, agentEvents) }()
	<-ctx.Done()
	p.syncQ.ShutDown()
	p.statusQ.ShutDown()
	wg.Wait()
	return nil
}

// observe records the informer's view of a pod and queues its sync.
func (p *Pods) observe(obj any, gone bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, gone = t.Obj, true
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	p.mu.Lock()
	if gone {
		p.api[pod.UID] = nil
	} else {
		p.api[pod.UID] = pod
	}
	p.mu.Unlock()
	p.syncQ.Add(pod.UID)
}

// killUnknown kills the agent's pods that the API server does not have.
func (p *Pods) killUnknown(store cache.Store) {
	inAPI := map[types.UID]bool{}
	for _, obj := range store.List() {
		if pod, ok := obj.(*v1.Pod); ok {
			inAPI[pod.UID] = true
		}
	}
	for _, pod := range p.cfg.Agent.ListPods("") {
		if inAPI[pod.UID] || pod.DeletionTimestamp != nil {
			continue
		}
		p.log.Info("killing a pod the API server no longer has", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID)
		p.mu.Lock()
		p.deleted[pod.UID] = true
		p.mu.Unlock()
		if err := p.cfg.Agent.Delete(pod.UID, nil, agent.StopDeletedFromAPI); err != nil && !errors.Is(err, agent.ErrNotFound) {
			p.log.Error("kill pod", "podUID", pod.UID, "err", err)
		}
	}
}

// work runs fn for each queued pod until the queue shuts down. A failed fn
// is retried a second later.
func (p *Pods) work(ctx context.Context, q workqueue.TypedDelayingInterface[types.UID], fn func(context.Context, types.UID) error) {
	for {
		uid, shutdown := q.Get()
		if shutdown {
			return
		}
		if err := fn(ctx, uid); err != nil && ctx.Err() == nil {
			p.log.Error("sync with the API server", "podUID", uid, "err", err)
			q.AddAfter(uid, time.Second)
		}
		q.Done(uid)
	}
}

// syncPod hands the API server's view of one pod to the agent.
func (p *Pods) syncPod(ctx context.Context, uid types.UID) error {
	p.mu.Lock()
	pod, seen := p.api[uid]
	p.mu.Unlock()
	if !seen {
		return nil
	}
	known := p.cfg.Agent.Known(uid)
	switch {
	case pod == nil:
		// Gone from the API server (force-deleted): kill what runs.
		p.mu.Lock()
		delete(p.api, uid)
		delete(p.refused, uid)
		delete(p.handed, uid)
		p.deleted[uid] = true
		p.mu.Unlock()
		if known {
			if err := p.cfg.Agent.Delete(uid, nil, agent.StopDeletedFromAPI); err != nil && !errors.Is(err, agent.ErrNotFound) {
				return err
			}
		}
		return nil
	case pod.DeletionTimestamp != nil:
		if !known {
			// Nothing of it runs here, and nothing will.
			return p.deleteObject(ctx, pod.Namespace, pod.Name, uid)
		}
		if err := p.cfg.Agent.Delete(uid, pod.DeletionGracePeriodSeconds, agent.StopDeleted); err != nil && !errors.Is(err, agent.ErrNotFound) {
			return err
		}
		p.statusQ.Add(uid) // it may be terminated already
		return nil
	case known:
		if err := p.syncConditions(pod); err != nil {
			return err
		}
		if err := p.syncActiveDeadline(pod); err != nil {
			return err
		}
		if err := p.syncEphemeral(pod); err != nil {
			return err
		}
		if err := p.syncMetadata(pod); err != nil {
			return err
		}
		return p.syncResources(pod)
	case pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed:
		// It ran to its end (here, before a reboot, or was rejected):
		// a finished pod never runs again.
		return nil
	}
	mp, err := fromAPI(pod)
	if err == nil {
		err = p.cfg.Agent.Sync(mp)
	}
	if err == nil {
		p.setHanded(uid, metaOf(mp.Pod))
	}
	if errors.Is(err, agent.ErrInvalid) || errors.Is(err, model.ErrInvalidManifest) || errors.Is(err, agent.ErrRejected) {
		return p.reject(ctx, pod, err)
	}
	return err
}

// syncConditions hands the agent the conditions of a pod it runs as the
// API server has them: those others set through the status subresource
// (a readiness gate's) are the agent's to keep and to compute Ready from,
// at once, as the kubelet syncs a pod again whose readiness they changed
// (kubelet.go, HandlePodReconcile).
func (p *Pods) syncConditions(pod *v1.Pod) error {
	err := p.cfg.Agent.SyncConditions(pod.UID, pod.Status.Conditions)
	if errors.Is(err, agent.ErrNotFound) {
		return nil
	}
	return err
}

// syncActiveDeadline hands the agent the spec.activeDeadlineSeconds of a
// pod it runs: an update may set or lower it (the API server checked
// that), and the node enforces the new value, as the kubelet's active
// deadline handler reads the spec it has at each sync.
func (p *Pods) syncActiveDeadline(pod *v1.Pod) error {
	err := p.cfg.Agent.SetActiveDeadline(pod.UID, pod.Spec.ActiveDeadlineSeconds, pod.Generation)
	if errors.Is(err, agent.ErrNotFound) {
		return nil
	}
	return err
}

// syncEphemeral hands the agent the ephemeral containers of a pod it runs:
// the ephemeralcontainers subresource (kubectl debug) grows
// spec.ephemeralContainers of the running pod, the only change of a pod's
// spec the node acts on. The API server only ever appends to that list.
// A new one the agent refuses (a runtime that cannot run it: on the
// process runtime, one without a command, as `kubectl debug -it POD
// --image=busybox` adds) is refused alone and for good: it is left out of
// what the agent is handed from then on, so that the ones added after it
// still start, and its status says why, as the kubelet reports a container
// it cannot create (waiting, CreateContainerConfigError, the reason as the
// message, which kubectl debug prints while it waits for the container).
func (p *Pods) syncEphemeral(pod *v1.Pod) error {
	if len(pod.Spec.EphemeralContainers) == 0 {
		return nil
	}
	var accepted []v1.EphemeralContainer
	p.mu.Lock()
	for _, ec := range pod.Spec.EphemeralContainers {
		if _, ok := p.refused[pod.UID][ec.Name]; !ok {
			accepted = append(accepted, ec)
		}
	}
	p.mu.Unlock()
	err := p.cfg.Agent.SyncEphemeralContainers(pod.UID, pod.Generation, accepted)
	switch {
	case errors.Is(err, agent.ErrInvalid):
		return p.refuseEphemeral(pod, accepted)
	case errors.Is(err, agent.ErrNotFound):
		return nil
	}
	return err
}

// refuseEphemeral finds which of the new ephemeral containers in accepted
// the agent refuses, handing them to it one at a time after those it
// has, records them in p.refused and queues a status write.
func (p *Pods) refuseEphemeral(pod *v1.Pod, accepted []v1.EphemeralContainer) error {
	cur, _, err := p.cfg.Agent.Get(pod.UID)
	if errors.Is(err, agent.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	has := map[string]bool{}
	for _, ec := range cur.Spec.EphemeralContainers {
		has[ec.Name] = true
	}
	index := map[string]int{}
	for i, ec := range pod.Spec.EphemeralContainers {
		index[ec.Name] = i
	}
	var base []v1.EphemeralContainer
	for _, ec := range accepted {
		if has[ec.Name] {
			base = append(base, ec)
		}
	}
	refused := map[string]refusedContainer{}
	for _, ec := range accepted {
		if has[ec.Name] {
			continue
		}
		try := append(slices.Clip(base), ec)
		err := p.cfg.Agent.SyncEphemeralContainers(pod.UID, pod.Generation, try)
		var invalid *agent.InvalidError
		switch {
		case err == nil:
			base = try
			continue
		case errors.Is(err, agent.ErrNotFound):
			return nil
		case !errors.As(err, &invalid):
			return err
		}
		// The agent names the field by its index in what it was handed.
		msg := strings.ReplaceAll(invalid.Problems(),
			fmt.Sprintf("spec.ephemeralContainers[%d]", len(base)), fmt.Sprintf("spec.ephemeralContainers[%d]", index[ec.Name]))
		p.log.Error("ephemeral container refused", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "container", ec.Name, "err", msg)
		refused[ec.Name] = refusedContainer{index: index[ec.Name], status: v1.ContainerStatus{
			Name:  ec.Name,
			Image: ec.Image,
			State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ReasonCreateContainerConfigError, Message: msg}},
		}}
	}
	if len(refused) == 0 {
		return nil
	}
	p.mu.Lock()
	if p.refused[pod.UID] == nil {
		p.refused[pod.UID] = map[string]refusedContainer{}
	}
	maps.Copy(p.refused[pod.UID], refused)
	p.mu.Unlock()
	p.statusQ.Add(pod.UID)
	return nil
}

// withRefused is the agent's statuses of a pod's ephemeral containers
// with those of the ones the node refused put back where they are in its
// spec (the agent's are in spec order, the refused ones left out).
func withRefused(statuses []v1.ContainerStatus, refused map[string]refusedContainer) []v1.ContainerStatus {
	if len(refused) == 0 {
		return statuses
	}
	rs := slices.SortedFunc(maps.Values(refused), func(a, b refusedContainer) int { return a.index - b.index })
	out := slices.Clone(statuses)
	for _, r := range rs {
		out = slices.Insert(out, min(r.index, len(out)), r.status)
	}
	return out
}

// syncResources hands the agent the containers' resources of a pod it
// runs: the resize subresource (kubectl patch --subresource resize,
// KEP-1287) changes them in the running pod's spec, and the pod worker
// applies them. The kubelet sees a resize the same way, as a pod update
// whose container resources differ from what it allocated
// (pkg/kubelet/kubelet.go, HandlePodUpdates and the allocation manager).
// One the agent refuses is logged, not retried.
func (p *Pods) syncResources(pod *v1.Pod) error {
	err := p.cfg.Agent.SyncResources(pod.UID, pod)
	switch {
	case errors.Is(err, agent.ErrInvalid):
		p.log.Error("resize refused", "pod", pod.Namespace+"/"+pod.Name, "podUID", pod.UID, "err", err)
		return nil
	case errors.Is(err, agent.ErrNotFound):
		return nil
	}
	return err
}

// fromAPI turns an API pod into podward's model, as if decoded from a
// manifest: defer containers from their annotation, the legacy
// init-containers annotation moved into the spec, defaults applied.
func fromAPI(pod *v1.Pod) (*model.Pod, error) {
	cp := pod.DeepCopy()
	cp.APIVersion, cp.Kind = "v1", "Pod"
	cp.ManagedFields = nil
	restoreLegacyInitContainers(cp)
	data, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	pods, err := model.Decode(data)
	if err != nil {
		return nil, err
	}
	return pods[0], nil
}

// lastAppliedAnnotation is where kubectl apply keeps the manifest it
// applied.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// restoreLegacyInitContainers puts back the legacy init-containers
// annotation that the API server drops on create (it has ignored it since
// Kubernetes 1.8), from the manifest kubectl apply recorded, so that a pod
// written for it — like the original defer-containers demo — runs its init
// containers here too. A pod created otherwise has lost them for good.
func restoreLegacyInitContainers(pod *v1.Pod) {
	if len(pod.Spec.InitContainers) > 0 || pod.Annotations[model.LegacyInitContainersAnnotation] != "" {
		return
	}
	raw := pod.Annotations[lastAppliedAnnotation]
	if raw == "" {
		return
	}
	var applied struct {
		Metadata struct {
			Annotations map[string]string `json:"annotations"`
		} `json:"metadata"`
	}
	if json.Unmarshal([]byte(raw), &applied) != nil {
		return
	}
	if legacy := applied.Metadata.Annotations[model.LegacyInitContainersAnnotation]; legacy != "" {
		pod.Annotations[model.LegacyInitContainersAnnotation] = legacy
	}
}

// reject marks a pod this node cannot run, or does not admit now, as Failed,
// as the kubelet does for pods it rejects at admission (kubelet.go,
// rejectPod: the status message "Pod was rejected: " and the admission's
// message): a pod the node does not admit (agent.RejectedError: a forbidden
// sysctl, another OS, no room, or the node shuts down) with the kubelet's
// reason and message, which the event has without the status's "Pod was
// rejected: ", any other with ReasonUnsupported.
func (p *Pods) reject(ctx context.Context, pod *v1.Pod, cause error) error {
	p.log.Info("rejecting a pod this node cannot run", "pod", pod.Namespace+"/"+pod.Name, "err", cause)
	msg := fmt.Sprintf("Pod was rejected: %v", cause)
	st := v1.PodStatus{Phase: v1.PodFailed, Reason: ReasonUnsupported, Message: msg}
	var rejected *agent.RejectedError
	if errors.As(cause, &rejected) {
		st, msg = rejected.Status(pod), rejected.Message
	}
	if err := p.patchStatus(ctx, pod.Namespace, pod.Name, pod.UID, st); err != nil {
		return err
	}
	ev := v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x", pod.Name, time.Now().UnixNano()), Namespace: pod.Namespace},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Reason:         st.Reason, Message: msg, Type: v1.EventTypeWarning,
		Source:         v1.EventSource{Component: "podward", Host: p.cfg.NodeName},
		FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(), Count: 1,
	}
	if _, err := p.cfg.Client.CoreV1().Events(pod.Namespace).Create(ctx, &ev, metav1.CreateOptions{}); err != nil {
		p.log.Error("post event", "pod", pod.Namespace+"/"+pod.Name, "err", err)
	}
	return nil
}

// watchAgent queues a status write for every change the agent reports.
func (p *Pods) watchAgent(changes <-chan agent.WatchEvent) {
	for ev := range changes {
		p.statusQ.AddAfter(ev.Pod.UID, p.cfg.StatusDelay)
	}
}

// writeStatus writes the agent's status of one pod to the API server; once
// a deleted pod is terminated, it deletes the API object instead.
func (p *Pods) writeStatus(ctx context.Context, uid types.UID) error {
	pod, phase, err := p.cfg.Agent.Get(uid)
	if errors.Is(err, agent.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	p.mu.Lock()
	api := p.api[uid]
	gone := p.deleted[uid]
	p.mu.Unlock()
	if gone {
		return nil
	}
	if phase == agent.Terminated && pod.DeletionTimestamp != nil {
		// Terminated: nothing runs and nothing will. The final status
		// first, for whoever watches, then the object goes at once.
		if err := p.writePodStatus(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
			p.log.Error("write final status", "pod", pod.Namespace+"/"+pod.Name, "err", err)
		}
		return p.deleteObject(ctx, pod.Namespace, pod.Name, uid)
	}
	if api == nil {
		return nil // not (or no longer) an API pod
	}
	return p.writePodStatus(ctx, pod)
}

// writtenStatus is what writePodStatus last wrote of a pod.
type writtenStatus struct {
	// key is the status patch and the defer statuses, to skip a write
	// that would change nothing.
	key string
	// conds are the types of the conditions the patch set.
	conds []v1.PodConditionType
}

// writePodStatus writes pod's status and defer statuses when they changed.
func (p *Pods) writePodStatus(ctx context.Context, pod *v1.Pod) error {
	st := pod.Status
	p.mu.Lock()
	st.EphemeralContainerStatuses = withRefused(st.EphemeralContainerStatuses, p.refused[pod.UID])
	prev := p.written[pod.UID]
	var inAPI []v1.PodCondition
	if api := p.api[pod.UID]; api != nil {
		inAPI = api.Status.Conditions
	}
	p.mu.Unlock()
	// The node's conditions it had written, or that the API server has, and
	// no longer has itself: removed.
	var gone []v1.PodConditionType
	had := slices.Clone(prev.conds)
	for _, c := range inAPI {
		had = append(had, c.Type)
	}
	for _, t := range had {
		if model.PodConditionByKubelet(t) && !slices.Contains(gone, t) &&
			!slices.ContainsFunc(st.Conditions, func(c v1.PodCondition) bool { return c.Type == t }) {
			gone = append(gone, t)
		}
	}
	body, conds, err := statusPatch(st, gone)
	if err != nil {
		return err
	}
	deferSt := pod.Annotations[model.DeferContainerStatusesAnnotation]
	key := string(body) + "\x00" + deferSt
	if prev.key == key {
		return nil
	}
	if deferSt != "" {
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid":         pod.UID, // a precondition: never another pod of that name
			"annotations": map[string]string{model.DeferContainerStatusesAnnotation: deferSt},
		}})
		if _, err := p.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("write defer container statuses of %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	if err := p.sendStatus(ctx, pod.Namespace, pod.Name, pod.UID, body); err != nil {
		return err
	}
	p.mu.Lock()
	p.written[pod.UID] = writtenStatus{key: key, conds: conds}
	p.mu.Unlock()
	return nil
}

// patchStatus writes st, the status of a pod the node does not run (a
// rejection), through the status subresource; see statusPatch.
func (p *Pods) patchStatus(ctx context.Context, ns, name string, uid types.UID, st v1.PodStatus) error {
	body, _, err := statusPatch(st, nil)
	if err != nil {
		return err
	}
	return p.sendStatus(ctx, ns, name, uid, body)
}

// statusPatch is the status part of a strategic merge patch of the status
// subresource that writes st as the kubelet's status manager writes a
// status (pkg/util/pod, PatchPodStatus): every field of the node's,
// and of the conditions only those the node sets (model.PodConditionByKubelet,
// and a DisruptionTarget of its own), each whole, merged by type, with
// the types of gone removed. The conditions others set (a readiness
// gate's) are never in it: the API server keeps them as they are now,
// also when they changed since the node last saw them, where a patch of
// the whole list would put back what the node saw. It returns the types
// of the conditions it sets.
func statusPatch(st v1.PodStatus, gone []v1.PodConditionType) ([]byte, []v1.PodConditionType, error) {
	conds := st.Conditions
	st.Conditions = nil
	raw, err := json.Marshal(st)
	if err != nil {
		return nil, nil, err
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, nil, err
	}
	var list []any
	var set []v1.PodConditionType
	for _, c := range conds {
		own := model.PodConditionByKubelet(c.Type) ||
			c.Type == v1.DisruptionTarget && c.Reason == v1.PodReasonTerminationByKubelet
		if !own {
			continue
		}
		list = append(list, wholeCondition(c))
		set = append(set, c.Type)
	}
	for _, t := range gone {
		list = append(list, map[string]any{"type": t, "$patch": "delete"})
	}
	if len(list) > 0 {
		fields["conditions"] = list
	}
	// The other lists the API merges by key are the node's alone: each is
	// written whole. Merged, a pod's podIPs would keep the host's address
	// it had before its sandbox got its own, beside the new one, which the
	// API server refuses ("may specify no more than one IP for each IP
	// family") — every later status write with it.
	for _, key := range replacedLists {
		if l, ok := fields[key].([]any); ok {
			fields[key] = append([]any{map[string]any{"$patch": "replace"}}, l...)
		}
	}
	body, err := json.Marshal(fields)
	return body, set, err
}

// replacedLists are the fields of v1.PodStatus whose lists a strategic
// merge patch merges by key (patchStrategy merge) but that the node alone
// writes: statusPatch replaces them whole.
var replacedLists = []string{"podIPs", "hostIPs", "resourceClaimStatuses", "nodeAllocatableResourceClaimStatuses"}

// wholeCondition is c with every field, null when unset: a strategic merge
// patch merges a condition's fields into the one of its type, and one
// left out would be kept from before (a reason that no longer holds).
func wholeCondition(c v1.PodCondition) map[string]any {
	orNull := func(s string) any {
		if s == "" {
			return nil
		}
		return s
	}
	timeOrNull := func(t metav1.Time) any {
		if t.IsZero() {
			return nil
		}
		return t
	}
	m := map[string]any{
		"type": c.Type, "status": c.Status,
		"reason": orNull(c.Reason), "message": orNull(c.Message),
		"lastTransitionTime": timeOrNull(c.LastTransitionTime), "lastProbeTime": timeOrNull(c.LastProbeTime),
		"observedGeneration": nil,
	}
	if c.ObservedGeneration != 0 {
		m["observedGeneration"] = c.ObservedGeneration
	}
	return m
}

// sendStatus sends the status part of a strategic merge patch (statusPatch)
// of the pod's status subresource. A patch needs no resourceVersion, so it
// cannot conflict; the UID in it is a precondition.
func (p *Pods) sendStatus(ctx context.Context, ns, name string, uid types.UID, status []byte) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"uid": uid}, "status": json.RawMessage(status)})
	if err != nil {
		return err
	}
	_, err = p.cfg.Client.CoreV1().Pods(ns).Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil // gone, or another pod of that name now
	}
	if err != nil {
		return fmt.Errorf("write status of %s/%s: %w", ns, name, err)
	}
	return nil
}

// deleteObject deletes a terminated pod's API object with grace period 0
// and a UID precondition, as the kubelet does.
func (p *Pods) deleteObject(ctx context.Context, ns, name string, uid types.UID) error {
	zero := int64(0)
	err := p.cfg.Client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
		GracePeriodSeconds: &zero,
		Preconditions:      &metav1.Preconditions{UID: &uid},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete terminated pod %s/%s: %w", ns, name, err)
	}
	p.mu.Lock()
	p.deleted[uid] = true
	p.mu.Unlock()
	p.log.Info("deleted the terminated pod's API object", "pod", ns+"/"+name, "podUID", uid)
	return nil
}

// postEvents posts the agent's events as core/v1 Events.
func (p *Pods) postEvents(ctx context.Context, recorded <-chan v1.Event) {
	for ev := range recorded {
		ev := ev
		ev.InvolvedObject.APIVersion = "v1"
		if ev.Namespace == "" {
			ev.Namespace = metav1.NamespaceDefault
		}
		ev.Source = v1.EventSource{Component: "podward", Host: p.cfg.NodeName}
		if _, err := p.cfg.Client.CoreV1().Events(ev.Namespace).Create(ctx, &ev, metav1.CreateOptions{}); err != nil && ctx.Err() == nil {
			p.log.Error("post event", "reason", ev.Reason, "err", err)
		}
	}
}
