package clusterobjects

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
)

// ErrNotRegistered is the error of a read of an object no registered pod
// references: the managers do not watch it, and the Node authorizer would
// not let the node read it.
var ErrNotRegistered = errors.New("no pod registered on this node references it")

// Config is what Managers need.
type Config struct {
	// Client is the node's client of the API server.
	Client kubernetes.Interface
	// OnChange is told of each object created, updated or deleted while it
	// is watched (not of the objects the first list of a watch finds). It
	// is called from the watch's goroutine and must not block. nil: no one
	// is told.
	OnChange func(objects.Change)
	// Logger gets the managers' messages. Default: discarded.
	Logger *slog.Logger
}

// Managers read the ConfigMaps and Secrets the registered pods reference
// from the API server, one watch per object (the kubelet's watch-based
// managers). A watch starts with the first pod that references its object
// and stops with the last; while the API server is away, the last value
// read keeps serving. Their goroutines are bounded by the objects
// referenced, and end with the ctx given to New or with Close.
// All methods are safe for concurrent use.
type Managers struct {
	ctx context.Context
	cfg Config
	log *slog.Logger

	mu      sync.Mutex
	pods    map[types.UID][]objects.Ref
	watches map[objects.Ref]*objectWatch
	wg      sync.WaitGroup
}

var (
	_ objects.Getter    = (*Managers)(nil)
	_ objects.Registrar = (*Managers)(nil)
)

// objectWatch is the list+watch of one object and how many registered pods
// reference it.
type objectWatch struct {
	refs   int
	store  cache.Store
	synced cache.DoneChecker
	stop   context.CancelFunc
	// stopped is closed once the watch is stopped.
	stopped <-chan struct{}
}

// New returns Managers watching nothing yet. Their watches end with ctx.
func New(ctx context.Context, cfg Config) *Managers {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &Managers{ctx: ctx, cfg: cfg, log: log, pods: map[types.UID][]objects.Ref{}, watches: map[objects.Ref]*objectWatch{}}
}

// RegisterPod watches the objects pod references (objects.Refs), and stops
// watching those its previous registration referenced and this one no
// longer does. It is idempotent.
func (m *Managers) RegisterPod(pod *model.Pod) {
	refs := objects.Refs(pod)
	m.mu.Lock()
	defer m.mu.Unlock()
	old := m.pods[pod.UID]
	m.pods[pod.UID] = refs
	// New references first, so that an object both registrations
	// reference is never stopped and started again.
	for _, ref := range refs {
		m.acquireLocked(ref)
	}
	for _, ref := range old {
		m.releaseLocked(ref)
	}
}

// UnregisterPod stops watching the objects no other registered pod
// references. Unregistering a pod never registered does nothing.
func (m *Managers) UnregisterPod(pod *model.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, ref := range m.pods[pod.UID] {
		m.releaseLocked(ref)
	}
	delete(m.pods, pod.UID)
}

// Close stops every watch and waits for their goroutines. The Managers
// serve nothing after it.
func (m *Managers) Close() {
	m.mu.Lock()
	for ref, w := range m.watches {
		w.stop()
		delete(m.watches, ref)
	}
	m.pods = map[types.UID][]objects.Ref{}
	m.mu.Unlock()
	m.wg.Wait()
}

func (m *Managers) acquireLocked(ref objects.Ref) {
	if w, ok := m.watches[ref]; ok {
		w.refs++
		return
	}
	w := m.startLocked(ref)
	w.refs = 1
	m.watches[ref] = w
}

func (m *Managers) releaseLocked(ref objects.Ref) {
	w, ok := m.watches[ref]
	if !ok {
		return
	}
	if w.refs--; w.refs == 0 {
		w.stop()
		delete(m.watches, ref)
	}
}

// startLocked starts the informer of ref: a list+watch of its namespace
// with the field selector metadata.name=<name>.
func (m *Managers) startLocked(ref objects.Ref) *objectWatch {
	ctx, stop := context.WithCancel(m.ctx)
	store, ctl := cache.NewInformerWithOptions(cache.InformerOptions{
		ListerWatcher: cache.ToListWatcherWithWatchListSemantics(m.listWatch(ref), m.cfg.Client),
		ObjectType:    objectType(ref.Kind),
		Handler:       m.handler(ref),
	})
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		ctl.RunWithContext(ctx)
	}()
	m.log.Debug("watching", "object", ref.String())
	return &objectWatch{store: store, synced: ctl.HasSyncedChecker(), stop: stop, stopped: ctx.Done()}
}

func objectType(kind objects.Kind) apiruntime.Object {
	if kind == objects.KindSecret {
		return &v1.Secret{}
	}
	return &v1.ConfigMap{}
}

// listWatch lists and watches the one object ref.
func (m *Managers) listWatch(ref objects.Ref) *cache.ListWatch {
	selector := fields.OneTermEqualSelector("metadata.name", ref.Name).String()
	core := m.cfg.Client.CoreV1()
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
			opts.FieldSelector = selector
			if ref.Kind == objects.KindSecret {
				return core.Secrets(ref.Namespace).List(ctx, opts)
			}
			return core.ConfigMaps(ref.Namespace).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = selector
			var w watch.Interface
			var err error
			if ref.Kind == objects.KindSecret {
				w, err = core.Secrets(ref.Namespace).Watch(ctx, opts)
			} else {
				w, err = core.ConfigMaps(ref.Namespace).Watch(ctx, opts)
			}
			if err != nil && ctx.Err() != nil {
				// A watch stopped as it started (its last pod went): a
				// watch's normal end for the reflector, not an error it
				// would log.
				return nil, io.EOF
			}
			return w, err
		},
	}
}

// handler tells OnChange of ref's changes: a creation after the first list,
// an update to a new resourceVersion (a relist's unchanged object is none),
// a deletion.
func (m *Managers) handler(ref objects.Ref) cache.ResourceEventHandler {
	// A fake API server may ignore the field selector: only ref's own
	// changes count.
	changed := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if o, ok := obj.(metav1.Object); ok && o.GetName() != ref.Name {
			return
		}
		if m.cfg.OnChange != nil {
			m.cfg.OnChange(objects.Change{Ref: ref})
		}
	}
	return cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if !initial {
				changed(obj)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			o, okOld := oldObj.(metav1.Object)
			n, okNew := newObj.(metav1.Object)
			if okOld && okNew && o.GetResourceVersion() == n.GetResourceVersion() {
				return
			}
			changed(newObj)
		},
		DeleteFunc: changed,
	}
}

// ConfigMap implements objects.Getter: the watched ConfigMap, once its
// watch's first list has answered (ctx bounds the wait).
func (m *Managers) ConfigMap(ctx context.Context, namespace, name string) (*v1.ConfigMap, error) {
	obj, err := m.get(ctx, objects.Ref{Kind: objects.KindConfigMap, Namespace: namespace, Name: name})
	if err != nil {
		return nil, err
	}
	cm, ok := obj.(*v1.ConfigMap)
	if !ok {
		return nil, fmt.Errorf("configmap %s/%s: the watch holds a %T", namespace, name, obj)
	}
	return cm, nil
}

// Secret implements objects.Getter, as ConfigMap.
func (m *Managers) Secret(ctx context.Context, namespace, name string) (*v1.Secret, error) {
	obj, err := m.get(ctx, objects.Ref{Kind: objects.KindSecret, Namespace: namespace, Name: name})
	if err != nil {
		return nil, err
	}
	s, ok := obj.(*v1.Secret)
	if !ok {
		return nil, fmt.Errorf("secret %s/%s: the watch holds a %T", namespace, name, obj)
	}
	return s, nil
}

// get waits for ref's first list, then reads its store: objects.NotFound
// when the object does not exist.
func (m *Managers) get(ctx context.Context, ref objects.Ref) (any, error) {
	m.mu.Lock()
	w, ok := m.watches[ref]
	m.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("read %s: %w", ref, ErrNotRegistered)
	}
	select {
	case <-w.synced.Done():
	case <-w.stopped:
		return nil, fmt.Errorf("read %s: %w", ref, ErrNotRegistered)
	case <-ctx.Done():
		return nil, fmt.Errorf("read %s: waiting for its first list from the API server: %w", ref, context.Cause(ctx))
	}
	obj, exists, err := w.store.GetByKey(ref.Namespace + "/" + ref.Name)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ref, err)
	}
	if !exists {
		return nil, objects.NotFound(ref.Kind, ref.Name)
	}
	return obj, nil
}
