package local

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/store"
)

func decode(t *testing.T, in string) model.Object {
	t.Helper()
	m, err := model.DecodeManifest([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Objects) != 1 {
		t.Fatalf("%d objects, want 1", len(m.Objects))
	}
	return m.Objects[0]
}

func cm(data string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: \"" + data + "\"}\n"
}

// changes records the changes OnChange reports.
type changes chan objects.Change

func (c changes) next(t *testing.T) objects.Change {
	t.Helper()
	select {
	case ch := <-c:
		return ch
	case <-time.After(5 * time.Second):
		t.Fatal("no change reported")
		return objects.Change{}
	}
}

func TestApplyCreatesConfiguresAndLeaves(t *testing.T) {
	now := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	ch := make(changes, 10)
	o, err := New(Options{Clock: clocktesting.NewFakePassiveClock(now), OnChange: func(c objects.Change) { ch <- c }})
	if err != nil {
		t.Fatal(err)
	}
	want := objects.Change{Ref: objects.Ref{Kind: objects.KindConfigMap, Namespace: "default", Name: "cfg"}}
	first, res, err := o.Apply(decode(t, cm("1")))
	if err != nil || res != Created {
		t.Fatalf("first apply = %v, %v", res, err)
	}
	if got := ch.next(t); got != want {
		t.Errorf("change = %v, want %v", got, want)
	}
	if !first.GetCreationTimestamp().Time.Equal(now) || first.GetUID() == "" || first.GetResourceVersion() == "" {
		t.Errorf("stamped meta = %+v", first)
	}
	if _, res, err := o.Apply(decode(t, cm("1"))); err != nil || res != Unchanged {
		t.Fatalf("same apply = %v, %v", res, err)
	}
	second, res, err := o.Apply(decode(t, cm("2")))
	if err != nil || res != Configured {
		t.Fatalf("changed apply = %v, %v", res, err)
	}
	if ch.next(t) != want || second.GetUID() != first.GetUID() {
		t.Errorf("configured object lost its UID: %v", second.GetUID())
	}
	got, err := o.ConfigMap(context.Background(), "default", "cfg")
	if err != nil || got.Data["a"] != "2" {
		t.Fatalf("ConfigMap = %v, %v", got, err)
	}
	select {
	case c := <-ch:
		t.Fatalf("unchanged apply reported %v", c)
	default:
	}
	if _, err := o.Delete(objects.KindConfigMap, "default", "cfg"); err != nil {
		t.Fatal(err)
	}
	if ch.next(t) != want {
		t.Error("delete not reported")
	}
	if _, err := o.ConfigMap(context.Background(), "default", "cfg"); !apierrors.IsNotFound(err) || err.Error() != `configmap "cfg" not found` {
		t.Errorf("after delete: %v", err)
	}
	if _, err := o.Delete(objects.KindConfigMap, "default", "cfg"); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: %v", err)
	}
}

func TestImmutableRefusesDataChange(t *testing.T) {
	o, _ := New(Options{})
	in := "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nimmutable: true\nstringData: {k: %s}\n"
	if _, _, err := o.Apply(decode(t, fmt.Sprintf(in, "one"))); err != nil {
		t.Fatal(err)
	}
	_, _, err := o.Apply(decode(t, fmt.Sprintf(in, "two")))
	if !apierrors.IsInvalid(err) {
		t.Fatalf("err = %v, want Invalid", err)
	}
	const want = "Secret \"s\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
	if err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
	if s, _ := o.Secret(context.Background(), "default", "s"); string(s.Data["k"]) != "one" {
		t.Errorf("data changed to %q", s.Data["k"])
	}
}

func TestCapRefusesOneMore(t *testing.T) {
	o, _ := New(Options{MaxObjects: 1})
	if _, _, err := o.Apply(decode(t, cm("1"))); err != nil {
		t.Fatal(err)
	}
	// Updating what is held stays possible at the cap.
	if _, _, err := o.Apply(decode(t, cm("2"))); err != nil {
		t.Fatal(err)
	}
	_, _, err := o.Apply(decode(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n"))
	if !apierrors.IsForbidden(err) {
		t.Fatalf("err = %v, want Forbidden", err)
	}
	if want := `secrets "s" is forbidden: podward holds at most 1 ConfigMaps and Secrets: delete some first`; err.Error() != want {
		t.Errorf("err = %q, want %q", err, want)
	}
}

func TestObjectsSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	o, err := New(Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	first, _, err := o.Apply(decode(t, cm("1")))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Apply(decode(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: s, namespace: ns}\nstringData: {k: v}\n")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Apply(decode(t, "apiVersion: v1\nkind: Secret\nmetadata: {name: gone}\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Delete(objects.KindSecret, "default", "gone"); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st, err = store.Open(path, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o, err = New(Options{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	got, err := o.ConfigMap(context.Background(), "default", "cfg")
	if err != nil || got.Data["a"] != "1" || got.UID != first.GetUID() {
		t.Fatalf("ConfigMap after restart = %+v, %v", got, err)
	}
	if s, err := o.Secret(context.Background(), "ns", "s"); err != nil || string(s.Data["k"]) != "v" {
		t.Fatalf("Secret after restart = %+v, %v", s, err)
	}
	if l := o.List(objects.KindSecret, ""); len(l) != 1 {
		t.Errorf("secrets after restart: %d, want 1", len(l))
	}
	// The resourceVersion goes on from the stored ones.
	next, res, err := o.Apply(decode(t, cm("2")))
	if err != nil || res != Configured || next.GetResourceVersion() <= first.GetResourceVersion() {
		t.Errorf("apply after restart = %v, %v, resourceVersion %s after %s", res, err, next.GetResourceVersion(), first.GetResourceVersion())
	}
}

func TestListByNamespace(t *testing.T) {
	o, _ := New(Options{})
	for _, in := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: x}\n",
	} {
		if _, _, err := o.Apply(decode(t, in)); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, obj := range o.List(objects.KindConfigMap, "default") {
		names = append(names, obj.GetName())
	}
	if len(names) != 2 || names[0] != "a" || names[1] != "b" {
		t.Errorf("names = %v", names)
	}
	if n := len(o.List(objects.KindConfigMap, "")); n != 3 {
		t.Errorf("all namespaces: %d, want 3", n)
	}
	if n := len(o.List(objects.KindSecret, "")); n != 0 {
		t.Errorf("secrets: %d, want 0", n)
	}
}

// TestCapHoldsUnderConcurrentApplies: writers are serialized, so the cap
// is never overrun.
func TestCapHoldsUnderConcurrentApplies(t *testing.T) {
	o, _ := New(Options{MaxObjects: 10})
	errs := make(chan error, 30)
	for i := range 30 {
		obj := decode(t, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\n", i))
		go func() {
			_, _, err := o.Apply(obj)
			errs <- err
		}()
	}
	refused := 0
	for range 30 {
		if err := <-errs; err != nil {
			if !apierrors.IsForbidden(err) {
				t.Fatalf("err = %v, want Forbidden", err)
			}
			refused++
		}
	}
	if n := len(o.List(objects.KindConfigMap, "")); n != 10 || refused != 20 {
		t.Fatalf("%d held, %d refused; want 10 and 20", n, refused)
	}
}

func TestMaxBytesBoundsTheData(t *testing.T) {
	o, _ := New(Options{MaxBytes: 10})
	obj := func(name, value string) model.Object {
		return decode(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+name+"}\ndata: {a: \""+value+"\"}\n")
	}
	if _, _, err := o.Apply(obj("one", "12345")); err != nil {
		t.Fatal(err)
	}
	_, _, err := o.Apply(obj("two", "12345"))
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "at most 10 bytes") {
		t.Fatalf("over the bound: %v", err)
	}
	// A change counts the object's new data instead of its old.
	if _, res, err := o.Apply(obj("one", "123456789")); err != nil || res != Configured {
		t.Fatalf("a bigger update within the bound: %v, %v", res, err)
	}
	if _, err := o.Delete(objects.KindConfigMap, "default", "one"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := o.Apply(obj("two", "12345")); err != nil {
		t.Fatalf("after a delete: %v", err)
	}
}
