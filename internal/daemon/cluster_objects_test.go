package daemon

import (
	"context"
	"log/slog"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
)

func TestChangeRelayKeepsChangesUntilConnected(t *testing.T) {
	r := &changeRelay{log: slog.New(slog.DiscardHandler), pending: map[objects.Change]struct{}{}}
	a := objects.Change{Ref: objects.Ref{Kind: objects.KindConfigMap, Namespace: "ns", Name: "a"}}
	b := objects.Change{PodUID: "uid"}
	r.deliver(a)
	r.deliver(a) // kept once
	r.deliver(b)
	r.connect(nil) // no agent's target yet: still kept
	var got []objects.Change
	r.connect(func(c objects.Change) { got = append(got, c) })
	if len(got) != 2 {
		t.Fatalf("delivered on connect: %+v, want a and b once each", got)
	}
	r.deliver(a)
	if len(got) != 3 || got[2] != a {
		t.Fatalf("delivered after connect: %+v", got)
	}
}

func TestChangeRelayIsBounded(t *testing.T) {
	r := &changeRelay{log: slog.New(slog.DiscardHandler), pending: map[objects.Change]struct{}{}}
	for i := range maxPendingChanges + 10 {
		r.deliver(objects.Change{Ref: objects.Ref{Kind: objects.KindSecret, Namespace: "ns", Name: string(rune('a'+i%26)) + string(rune(i))}})
	}
	if len(r.pending) != maxPendingChanges {
		t.Errorf("%d changes kept, want at most %d", len(r.pending), maxPendingChanges)
	}
}

// The cluster's objects are what the runtime reads, and their changes go
// through the relay to the agent's target.
func TestClusterObjectsChangesReachTheRelay(t *testing.T) {
	client := fake.NewClientset(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"k": "v"}})
	watching := make(chan struct{}, 1)
	client.PrependWatchReactor("configmaps", func(action k8stesting.Action) (bool, watch.Interface, error) {
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace())
		watching <- struct{}{}
		return true, w, err
	})
	c := newClusterObjects(context.Background(), client, testclock.NewFakeClock(time.Now()), slog.New(slog.DiscardHandler))
	defer c.close()
	changes := make(chan objects.Change, 8)
	c.relay.connect(func(ch objects.Change) { changes <- ch })
	rt := c.runtimeObjects()
	if rt.Getter == nil || rt.Tokens == nil || rt.Services == nil {
		t.Fatalf("runtime objects %+v, want the getter, the tokens and the services", rt)
	}
	reg, ok := rt.Getter.(objects.Registrar)
	if !ok {
		t.Fatal("the getter is no Registrar")
	}
	reg.RegisterPod(&model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "uid"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cm"}}}}},
	}}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cm, err := rt.Getter.ConfigMap(ctx, "ns", "cm")
	if err != nil || cm.Data["k"] != "v" {
		t.Fatalf("ConfigMap = %v, %v", cm, err)
	}
	select {
	case <-watching:
	case <-ctx.Done():
		t.Fatal("no watch")
	}
	cm = cm.DeepCopy()
	cm.Data["k"], cm.ResourceVersion = "w", "2"
	if _, err := client.CoreV1().ConfigMaps("ns").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ch := <-changes:
		if ch.Ref.Name != "cm" {
			t.Errorf("change %+v, want cm's", ch)
		}
	case <-ctx.Done():
		t.Fatal("the update's change never reached the relay's target")
	}
}
