package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
)

// podTimes are the moments a pod's watch showed it at each step of its
// start, stamped with the test's clock as the event arrived (the SLO's
// "observed via watch"): seen (its creation: the ADDED event; the
// creationTimestamp has whole seconds only), bound to a node, all its
// containers started, Ready, and gone.
type podTimes struct {
	name, node, ip                   string
	seen, bound, started, ready, del time.Time
}

// startRecorder watches the pods of a namespace and stamps each one's
// steps; its channels are closed once want pods are ready, and once every
// pod it saw is gone after deleting began.
type startRecorder struct {
	want int

	mu       sync.Mutex
	pods     map[types.UID]*podTimes
	nReady   int
	nGone    int
	deleting bool
	allReady chan struct{}
	allGone  chan struct{}
	done     chan struct{}
}

// recordStarts starts watching the pods of ns (empty now) until the test
// ends.
func recordStarts(t *testing.T, client kubernetes.Interface, ns string, want int) *startRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	list, err := client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		cancel()
		t.Fatalf("namespace %s has %d pods before the Deployment", ns, len(list.Items))
	}
	lw := cache.NewListWatchFromClient(client.CoreV1().RESTClient(), "pods", ns, fields.Everything())
	w, err := toolswatch.NewRetryWatcherWithContext(ctx, list.ResourceVersion, lw)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &startRecorder{want: want, pods: map[types.UID]*podTimes{}, allReady: make(chan struct{}), allGone: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(r.done)
		for ev := range w.ResultChan() {
			r.observe(ev, time.Now())
		}
	}()
	t.Cleanup(func() {
		w.Stop()
		cancel()
		<-r.done
	})
	return r
}

// observe stamps what the event shows of its pod.
func (r *startRecorder) observe(ev watch.Event, now time.Time) {
	p, ok := ev.Object.(*v1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	pt := r.pods[p.UID]
	if pt == nil {
		pt = &podTimes{name: p.Name, seen: now}
		r.pods[p.UID] = pt
	}
	if ev.Type == watch.Deleted {
		if pt.del.IsZero() {
			pt.del = now
			r.nGone++
		}
		r.checkGone()
		return
	}
	if pt.bound.IsZero() && p.Spec.NodeName != "" {
		pt.bound, pt.node = now, p.Spec.NodeName
	}
	if pt.started.IsZero() && allStarted(p) {
		pt.started = now
	}
	if p.Status.PodIP != "" {
		pt.ip = p.Status.PodIP
	}
	if pt.ready.IsZero() && podReady(p) {
		pt.ready = now
		r.nReady++
		if r.nReady == r.want {
			close(r.allReady)
		}
	}
}

// startDeleting says that the pods go now: allGone closes once every pod
// seen is gone.
func (r *startRecorder) startDeleting() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deleting = true
	r.checkGone()
}

func (r *startRecorder) checkGone() {
	if r.deleting && r.nGone == len(r.pods) && r.allGone != nil {
		close(r.allGone)
		r.allGone = nil
	}
}

// gone is the channel allGone, read under the lock (checkGone clears it).
func (r *startRecorder) gone() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.allGone == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return r.allGone
}

// snapshot copies the pods' times.
func (r *startRecorder) snapshot() []podTimes {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]podTimes, 0, len(r.pods))
	for _, pt := range r.pods {
		out = append(out, *pt)
	}
	return out
}

// progress says how far the pods got, for a failure's message.
func (r *startRecorder) progress() string {
	var bound, started, ready, gone int
	pods := r.snapshot()
	for _, p := range pods {
		bound += b2i(!p.bound.IsZero())
		started += b2i(!p.started.IsZero())
		ready += b2i(!p.ready.IsZero())
		gone += b2i(!p.del.IsZero())
	}
	return fmt.Sprintf("%d pods seen, %d bound, %d started, %d ready, %d gone (want %d)", len(pods), bound, started, ready, gone, r.want)
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// allStarted says whether every container of the pod has started (is
// running, or ran and ended): the SLO's "all its containers are reported
// as started".
func allStarted(p *v1.Pod) bool {
	if len(p.Status.ContainerStatuses) != len(p.Spec.Containers) {
		return false
	}
	for _, cs := range p.Status.ContainerStatuses {
		if cs.State.Running == nil && cs.State.Terminated == nil {
			return false
		}
	}
	return true
}
