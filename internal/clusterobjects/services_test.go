package clusterobjects

import (
	"context"
	"errors"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(ns, name, clusterIP string) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"},
		Spec:       v1.ServiceSpec{ClusterIP: clusterIP, Ports: []v1.ServicePort{{Port: 80}}},
	}
}

// names lists the names of the Services of ns that s holds.
func names(t *testing.T, s *Services, ns string) map[string]bool {
	t.Helper()
	list, err := s.Services(ns)
	if err != nil {
		t.Fatalf("Services(%q): %v", ns, err)
	}
	got := map[string]bool{}
	for _, svc := range list {
		got[svc.Name] = true
	}
	return got
}

// eventually waits for cond, checked on each tick, until the deadline.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	timeout := time.After(deadline)
	for !cond() {
		select {
		case <-tick.C:
		case <-timeout:
			t.Fatalf("no %s within %s", what, deadline)
		}
	}
}

// The Services of every namespace are listed and watched once, without
// the headless ones (the kubelet's field selector); WaitForServices waits
// for the first list, and the watch brings the new ones.
func TestServicesListsAndWatchesAllNamespaces(t *testing.T) {
	api := newAPIServer(svc("default", "kubernetes", "10.96.0.1"), svc("shop", "web", "10.96.0.7"))
	api.setDown(true)
	s := NewServices(context.Background(), api)
	t.Cleanup(s.Close)

	receive(t, api.listed, "first (failed) list")
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.WaitForServices(ended); !errors.Is(err, context.Canceled) {
		t.Fatalf("WaitForServices before any list = %v, want ctx's error", err)
	}
	if got := names(t, s, "shop"); len(got) != 0 {
		t.Errorf("Services before any list = %v, want none", got)
	}

	api.setDown(false)
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	if err := s.WaitForServices(ctx); err != nil {
		t.Fatalf("WaitForServices: %v", err)
	}
	if w := receive(t, api.watching, "watch"); w != "services spec.clusterIP!=None" {
		t.Errorf("watch %q, want the Services without the headless ones", w)
	}
	if got := names(t, s, "shop"); !got["web"] || len(got) != 1 {
		t.Errorf("Services(shop) = %v, want web", got)
	}
	if got := names(t, s, "default"); !got["kubernetes"] {
		t.Errorf("Services(default) = %v, want kubernetes", got)
	}
	if _, err := api.CoreV1().Services("shop").Create(ctx, svc("shop", "db", "10.96.0.8"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "new Service db", func() bool { return names(t, s, "shop")["db"] })
}

// Closed, the informer's goroutines end (goleak checks it), and a
// second Close does nothing.
func TestServicesClose(t *testing.T) {
	api := newAPIServer()
	s := NewServices(context.Background(), api)
	receive(t, api.watching, "watch")
	s.Close()
	s.Close()
}
