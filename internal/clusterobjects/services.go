package clusterobjects

import (
	"context"
	"fmt"
	"io"
	"sync"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/podward/podward/internal/objects"
)

// Services keeps the cluster's Services for the pods' service links, as
// the kubelet's service lister does: one informer of the Services of all
// namespaces (which the Node authorizer lets a node list and watch),
// without the headless ones (the field selector spec.clusterIP!=None: they
// have no links). It starts with NewServices and runs until its ctx ends
// or Close; while the API server is away, the last Services read keep
// serving. All methods are safe for concurrent use.
type Services struct {
	lister corelisters.ServiceLister
	synced cache.DoneChecker
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

var _ objects.ServiceLister = (*Services)(nil)

// headless is the field selector that leaves out the headless Services.
var headless = fields.OneTermNotEqualSelector("spec.clusterIP", v1.ClusterIPNone).String()

// NewServices starts the Services' informer of client; it runs until ctx
// ends or Close.
func NewServices(ctx context.Context, client kubernetes.Interface) *Services {
	ctx, stop := context.WithCancel(ctx)
	core := client.CoreV1()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (apiruntime.Object, error) {
			opts.FieldSelector = headless
			return core.Services(metav1.NamespaceAll).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.FieldSelector = headless
			w, err := core.Services(metav1.NamespaceAll).Watch(ctx, opts)
			if err != nil && ctx.Err() != nil {
				return nil, io.EOF // stopped as it started: no error to log
			}
			return w, err
		},
	}
	informer := cache.NewSharedIndexInformer(cache.ToListWatcherWithWatchListSemantics(lw, client), &v1.Service{}, 0,
		cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	s := &Services{
		lister: corelisters.NewServiceLister(informer.GetIndexer()),
		synced: informer.HasSyncedChecker(),
		stop:   stop,
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		informer.RunWithContext(ctx)
	}()
	return s
}

// Services implements objects.ServiceLister: the Services of namespace
// read so far.
func (s *Services) Services(namespace string) ([]*v1.Service, error) {
	list, err := s.lister.Services(namespace).List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("list the services of %q: %w", namespace, err)
	}
	return list, nil
}

// WaitForServices implements objects.ServiceLister: it waits for the
// informer's first list.
func (s *Services) WaitForServices(ctx context.Context) error {
	select {
	case <-s.synced.Done():
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the services' first list from the API server: %w", context.Cause(ctx))
	}
}

// Close stops the informer and waits for it. It is idempotent.
func (s *Services) Close() {
	s.stop()
	s.wg.Wait()
}
