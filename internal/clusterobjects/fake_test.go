package clusterobjects

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errAPIDown = errors.New("the API server is away")

// deadline bounds every wait of these tests.
const deadline = 10 * time.Second

// apiServer is a fake clientset whose watches of ConfigMaps and Secrets are
// announced (watching) and can be told apart when stopped (stopped), and
// whose lists and watches can be made to fail (down).
type apiServer struct {
	*fake.Clientset
	watching chan string // "<resource> <fieldSelector>" of each watch made
	stopped  chan string // the same, once the watch is stopped

	mu   sync.Mutex
	down bool
	// lists counts the lists made, failed ones too.
	lists int
	// listed is rung after each list.
	listed chan struct{}
	// open are the watches made.
	open []watch.Interface
}

// breakWatches ends the watches made so far, as an API server that goes
// away does.
func (s *apiServer) breakWatches() {
	s.mu.Lock()
	open := s.open
	s.open = nil
	s.mu.Unlock()
	for _, w := range open {
		w.Stop()
	}
}

func newAPIServer(objs ...any) *apiServer {
	cs := fake.NewClientset()
	for _, o := range objs {
		switch o := o.(type) {
		case *v1.ConfigMap:
			_ = cs.Tracker().Add(o)
		case *v1.Secret:
			_ = cs.Tracker().Add(o)
		case *v1.Service:
			_ = cs.Tracker().Add(o)
		}
	}
	s := &apiServer{Clientset: cs, watching: make(chan string, 64), stopped: make(chan string, 64), listed: make(chan struct{}, 64)}
	for _, res := range []string{"configmaps", "secrets", "services"} {
		cs.PrependReactor("list", res, s.list)
		cs.PrependWatchReactor(res, s.watch)
	}
	return s
}

func (s *apiServer) setDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

func (s *apiServer) list(k8stesting.Action) (bool, apiruntime.Object, error) {
	s.mu.Lock()
	s.lists++
	down := s.down
	s.mu.Unlock()
	defer func() {
		select {
		case s.listed <- struct{}{}:
		default:
		}
	}()
	if down {
		return true, nil, errAPIDown
	}
	return false, nil, nil
}

func (s *apiServer) watch(action k8stesting.Action) (bool, watch.Interface, error) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		return true, nil, errAPIDown
	}
	wa := action.(k8stesting.WatchActionImpl)
	w, err := s.Tracker().Watch(action.GetResource(), action.GetNamespace(), wa.ListOptions)
	if err != nil {
		return true, nil, err
	}
	name := action.GetResource().Resource + " " + wa.ListOptions.FieldSelector
	s.mu.Lock()
	s.open = append(s.open, w)
	s.mu.Unlock()
	s.watching <- name
	return true, &notifyingWatch{Interface: w, stopped: s.stopped, name: name}, nil
}

type notifyingWatch struct {
	watch.Interface
	once    sync.Once
	stopped chan string
	name    string
}

func (w *notifyingWatch) Stop() {
	w.Interface.Stop()
	w.once.Do(func() { w.stopped <- w.name })
}

// receive waits for the next value of ch, or fails the test.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(deadline):
		t.Fatalf("no %s within %s", what, deadline)
		var zero T
		return zero
	}
}

func configMap(ns, name, value string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}, Data: map[string]string{"k": value}}
}

// podWith is a pod of namespace ns whose volumes are the ConfigMaps cms.
func podWith(uid, ns string, cms ...string) *model.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, Namespace: ns, UID: types.UID(uid)}}
	for _, cm := range cms {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: cm, VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: cm}}}})
	}
	return &model.Pod{Pod: p}
}

func newManagers(t *testing.T, s *apiServer) (*Managers, chan objects.Change) {
	t.Helper()
	changes := make(chan objects.Change, 64)
	m := New(context.Background(), Config{Client: s, OnChange: func(c objects.Change) {
		select {
		case changes <- c:
		default:
			t.Error("OnChange: the test's buffer is full")
		}
	}})
	t.Cleanup(m.Close)
	return m, changes
}

func get(t *testing.T, m *Managers, ns, name string) (*v1.ConfigMap, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	return m.ConfigMap(ctx, ns, name)
}
