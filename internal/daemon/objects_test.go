package daemon

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/store"
)

// TestOpenObjectsGivesThemToTheRuntime: what serve opens (from its store)
// is what the runtime reads through, and a change is heard.
func TestOpenObjectsGivesThemToTheRuntime(t *testing.T) {
	st, err := store.Open(filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	heard := make(chan objects.Change, 1)
	o := options(t.TempDir())
	objs, err := o.openObjects(st, func(ch objects.Change) { heard <- ch })
	if err != nil {
		t.Fatal(err)
	}
	m, err := model.DecodeManifest([]byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: b}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := objs.Apply(m.Objects[0]); err != nil {
		t.Fatal(err)
	}
	// OnChange is called before Apply returns.
	select {
	case ch := <-heard:
		if ch.Ref.Name != "cfg" {
			t.Errorf("change = %v", ch)
		}
	default:
		t.Error("no change heard")
	}
	if o.Runtime.objects.Getter == nil || o.Runtime.objects.Tokens != nil {
		t.Fatalf("runtime objects = %+v, want the getter and no tokens", o.Runtime.objects)
	}
	cm, err := o.Runtime.objects.Getter.ConfigMap(context.Background(), "default", "cfg")
	if err != nil || cm.Data["a"] != "b" {
		t.Fatalf("the runtime reads %v, %v", cm, err)
	}
	stored, err := st.ListConfigMaps()
	if err != nil || len(stored) != 1 {
		t.Fatalf("stored: %v, %v", stored, err)
	}
}
