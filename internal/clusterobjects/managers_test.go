package clusterobjects

import (
	"context"
	"errors"
	"io"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/podward/podward/internal/objects"
)

func TestWatchesAreCountedOverPods(t *testing.T) {
	s := newAPIServer(configMap("ns", "shared", "v"), configMap("ns", "own", "v"))
	m, _ := newManagers(t, s)
	a, b := podWith("a", "ns", "shared", "own"), podWith("b", "ns", "shared")

	m.RegisterPod(a)
	got := map[string]bool{receive(t, s.watching, "watch"): true, receive(t, s.watching, "watch"): true}
	for _, want := range []string{"configmaps metadata.name=shared", "configmaps metadata.name=own"} {
		if !got[want] {
			t.Errorf("watches %v, want one with %q", got, want)
		}
	}
	m.RegisterPod(b)
	m.RegisterPod(a) // again: nothing new
	m.UnregisterPod(a)
	if stopped := receive(t, s.stopped, "stopped watch"); stopped != "configmaps metadata.name=own" {
		t.Errorf("stopped %q, want own's watch", stopped)
	}
	if _, err := get(t, m, "ns", "own"); !errors.Is(err, ErrNotRegistered) {
		t.Errorf("ConfigMap(own) with no pod referencing it: %v, want ErrNotRegistered", err)
	}
	if cm, err := get(t, m, "ns", "shared"); err != nil || cm.Data["k"] != "v" {
		t.Errorf("ConfigMap(shared), still referenced by b = %v, %v", cm, err)
	}
	m.UnregisterPod(b)
	if stopped := receive(t, s.stopped, "stopped watch"); stopped != "configmaps metadata.name=shared" {
		t.Errorf("stopped %q, want shared's watch", stopped)
	}
	if len(s.watching) != 0 {
		t.Errorf("watches started again: %d", len(s.watching))
	}
}

func TestReRegisterMovesReferences(t *testing.T) {
	s := newAPIServer(configMap("ns", "old", "v"), configMap("ns", "new", "v"))
	m, _ := newManagers(t, s)
	m.RegisterPod(podWith("a", "ns", "old"))
	receive(t, s.watching, "watch of old")
	m.RegisterPod(podWith("a", "ns", "new"))
	if w := receive(t, s.watching, "watch of new"); w != "configmaps metadata.name=new" {
		t.Errorf("watch %q, want new's", w)
	}
	if stopped := receive(t, s.stopped, "stopped watch"); stopped != "configmaps metadata.name=old" {
		t.Errorf("stopped %q, want old's watch", stopped)
	}
}

func TestGetWaitsForTheFirstList(t *testing.T) {
	s := newAPIServer(configMap("ns", "cm", "v"))
	s.setDown(true)
	m, _ := newManagers(t, s)
	m.RegisterPod(podWith("a", "ns", "cm"))
	receive(t, s.listed, "failed list")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.ConfigMap(ctx, "ns", "cm"); !errors.Is(err, context.Canceled) {
		t.Errorf("ConfigMap before any list answered = %v, want the ctx's error", err)
	}
	s.setDown(false)
	if cm, err := get(t, m, "ns", "cm"); err != nil || cm.Data["k"] != "v" {
		t.Errorf("ConfigMap once listed = %v, %v", cm, err)
	}
}

func TestMissingObjectIsNotFound(t *testing.T) {
	s := newAPIServer()
	m, changes := newManagers(t, s)
	m.RegisterPod(podWith("a", "ns", "cm"))
	_, err := get(t, m, "ns", "cm")
	if !apierrors.IsNotFound(err) || err.Error() != `configmap "cm" not found` {
		t.Fatalf("ConfigMap of a missing object = %v, want the kubelet's not found", err)
	}
	receive(t, s.watching, "watch")
	if _, err := s.CoreV1().ConfigMaps("ns").Create(context.Background(), configMap("ns", "cm", "v"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if c := receive(t, changes, "change"); c.Ref != (objects.Ref{Kind: objects.KindConfigMap, Namespace: "ns", Name: "cm"}) {
		t.Errorf("change %+v, want cm's", c)
	}
	if cm, err := get(t, m, "ns", "cm"); err != nil || cm.Data["k"] != "v" {
		t.Errorf("ConfigMap once created = %v, %v", cm, err)
	}
}

func TestChangesReachOnChange(t *testing.T) {
	s := newAPIServer(configMap("ns", "cm", "v"), configMap("ns", "other", "v"))
	m, changes := newManagers(t, s)
	m.RegisterPod(podWith("a", "ns", "cm"))
	if _, err := get(t, m, "ns", "cm"); err != nil {
		t.Fatal(err)
	}
	receive(t, s.watching, "watch")
	if len(changes) != 0 {
		t.Errorf("the first list made a change: %+v", <-changes)
	}
	cms := s.CoreV1().ConfigMaps("ns")
	// Another object of the namespace is no change of cm, even when the
	// fake API server ignores the field selector.
	if _, err := cms.Update(context.Background(), configMap("ns", "other", "w"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	updated := configMap("ns", "cm", "w")
	updated.ResourceVersion = "2"
	if _, err := cms.Update(context.Background(), updated, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := objects.Change{Ref: objects.Ref{Kind: objects.KindConfigMap, Namespace: "ns", Name: "cm"}}
	if c := receive(t, changes, "change of the update"); c != want {
		t.Errorf("change %+v, want %+v", c, want)
	}
	if cm, err := get(t, m, "ns", "cm"); err != nil || cm.Data["k"] != "w" {
		t.Errorf("ConfigMap after the update = %v, %v", cm, err)
	}
	if err := cms.Delete(context.Background(), "cm", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if c := receive(t, changes, "change of the deletion"); c != want {
		t.Errorf("change %+v, want %+v", c, want)
	}
	if _, err := get(t, m, "ns", "cm"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap after its deletion = %v, want not found", err)
	}
}

func TestLastValueServesWhileTheAPIServerIsAway(t *testing.T) {
	s := newAPIServer(configMap("ns", "cm", "v"))
	m, _ := newManagers(t, s)
	m.RegisterPod(podWith("a", "ns", "cm"))
	if _, err := get(t, m, "ns", "cm"); err != nil {
		t.Fatal(err)
	}
	receive(t, s.watching, "watch")
	receive(t, s.listed, "first list")
	s.setDown(true)
	// The watch ends, as when the API server goes away; the reflector
	// lists again and fails.
	s.breakWatches()
	receive(t, s.listed, "failed list")
	receive(t, s.listed, "second failed list")
	if cm, err := get(t, m, "ns", "cm"); err != nil || cm.Data["k"] != "v" {
		t.Errorf("ConfigMap while the API server is away = %v, %v; want the last value", cm, err)
	}
}

func TestWatchStoppedAsItStartsIsNoError(t *testing.T) {
	s := newAPIServer()
	s.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		return true, nil, context.Canceled
	})
	m, _ := newManagers(t, s)
	lw := m.listWatch(objects.Ref{Kind: objects.KindConfigMap, Namespace: "ns", Name: "cm"})
	ctx, cancel := context.WithCancel(context.Background())
	if _, err := lw.WatchFuncWithContext(ctx, metav1.ListOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("watch failing while its ctx lives = %v, want the error", err)
	}
	cancel()
	if _, err := lw.WatchFuncWithContext(ctx, metav1.ListOptions{}); err != io.EOF {
		t.Errorf("watch failing as its ctx ends = %v, want io.EOF, a watch's normal end", err)
	}
}

func TestHandlerTellsOnlyChanges(t *testing.T) {
	var got []objects.Change
	m := New(context.Background(), Config{OnChange: func(c objects.Change) { got = append(got, c) }})
	ref := objects.Ref{Kind: objects.KindConfigMap, Namespace: "ns", Name: "cm"}
	h := m.handler(ref)
	cm, cm2, other := configMap("ns", "cm", "v"), configMap("ns", "cm", "w"), configMap("ns", "other", "v")
	cm2.ResourceVersion = "2"
	for _, tc := range []struct {
		name string
		do   func()
		want int
	}{
		{"first list's add", func() { h.OnAdd(cm, true) }, 0},
		{"add of a creation", func() { h.OnAdd(cm, false) }, 1},
		{"relist of an unchanged object", func() { h.OnUpdate(cm, cm.DeepCopy()) }, 0},
		{"update", func() { h.OnUpdate(cm, cm2) }, 1},
		{"another object", func() { h.OnAdd(other, false) }, 0},
		{"deletion", func() { h.OnDelete(cm2) }, 1},
		{"deletion seen by a relist", func() { h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/cm", Obj: cm2}) }, 1},
	} {
		got = nil
		tc.do()
		if len(got) != tc.want || (tc.want == 1 && got[0] != objects.Change{Ref: ref}) {
			t.Errorf("%s: changes %+v, want %d of %s", tc.name, got, tc.want, ref)
		}
	}
}
