package client_test

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/apiserver"
	"github.com/podward/podward/internal/client"
	"github.com/podward/podward/internal/objects/local"
)

// serveObjects runs an API server of objects alone (no agent behind it).
func serveObjects(t *testing.T, withObjects bool) *client.Client {
	t.Helper()
	objs, err := local.New(local.Options{})
	if err != nil {
		t.Fatal(err)
	}
	socket := filepath.Join(shortDir(t), "api.sock")
	l, err := apiserver.Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := apiserver.New(nil, slog.New(slog.DiscardHandler))
	if withObjects {
		srv.WithObjects(objs)
	}
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, l) }()
	c := client.New(socket)
	t.Cleanup(func() {
		c.Close()
		stop()
		<-served
	})
	return c
}

func TestConfigMapsAndSecrets(t *testing.T) {
	c := serveObjects(t, true)
	ctx := context.Background()
	cm := &v1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
		Data:       map[string]string{"a": "1"},
	}
	for i, want := range []client.ApplyResult{client.Created, client.Unchanged} {
		got, res, err := c.ApplyConfigMap(ctx, cm)
		if err != nil || res != want || got.Data["a"] != "1" || got.UID == "" {
			t.Fatalf("apply %d = %+v, %q, %v; want %q", i, got, res, err, want)
		}
	}
	cm.Data["a"] = "2"
	if _, res, err := c.ApplyConfigMap(ctx, cm); err != nil || res != client.Configured {
		t.Fatalf("changed apply = %q, %v", res, err)
	}
	sec := &v1.Secret{
		TypeMeta:   metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "other"},
		StringData: map[string]string{"k": "v"},
	}
	if got, res, err := c.ApplySecret(ctx, sec); err != nil || res != client.Created || string(got.Data["k"]) != "v" || got.Type != v1.SecretTypeOpaque {
		t.Fatalf("apply secret = %+v, %q, %v", got, res, err)
	}
	if l, err := c.ListSecrets(ctx, ""); err != nil || len(l.Items) != 1 {
		t.Fatalf("ListSecrets = %+v, %v", l, err)
	}
	if l, err := c.ListSecrets(ctx, "default"); err != nil || len(l.Items) != 0 {
		t.Fatalf("ListSecrets(default) = %+v, %v", l, err)
	}
	if l, err := c.ListConfigMaps(ctx, "default"); err != nil || len(l.Items) != 1 || l.Items[0].Data["a"] != "2" {
		t.Fatalf("ListConfigMaps = %+v, %v", l, err)
	}
	if got, err := c.GetSecret(ctx, "other", "s"); err != nil || got.Name != "s" {
		t.Fatalf("GetSecret = %+v, %v", got, err)
	}
	if _, err := c.DeleteConfigMap(ctx, "default", "cfg"); err != nil {
		t.Fatal(err)
	}
	_, err := c.GetConfigMap(ctx, "default", "cfg")
	if !apierrors.IsNotFound(err) || err.Error() != `configmaps "cfg" not found` {
		t.Fatalf("get after delete: %v", err)
	}
	if _, err := c.DeleteSecret(ctx, "default", "s"); !apierrors.IsNotFound(err) {
		t.Fatalf("delete of a missing secret: %v", err)
	}
}

func TestObjectErrors(t *testing.T) {
	c := serveObjects(t, true)
	ctx := context.Background()
	yes := true
	cm := &v1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "cfg", Namespace: "default"},
		Data:       map[string]string{"a": "1"},
		Immutable:  &yes,
	}
	if _, _, err := c.ApplyConfigMap(ctx, cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["a"] = "2"
	_, _, err := c.ApplyConfigMap(ctx, cm)
	if !apierrors.IsInvalid(err) || err.Error() != "ConfigMap \"cfg\" is invalid: data: Forbidden: field is immutable when `immutable` is set" {
		t.Fatalf("immutable change: %v", err)
	}
	cm.Data = map[string]string{"bad key": "x"}
	cm.Name, cm.Immutable = "other", nil
	_, _, err = c.ApplyConfigMap(ctx, cm)
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `data[bad key]: Invalid value: "bad key"`) {
		t.Fatalf("bad key: %v, want a BadRequest naming data[bad key]", err)
	}
}

func TestNoObjects(t *testing.T) {
	c := serveObjects(t, false)
	if _, err := c.ListConfigMaps(context.Background(), ""); !apierrors.IsNotFound(err) {
		t.Fatalf("ListConfigMaps without objects: %v", err)
	}
}
