package cri

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/runtime"
)

// The CRI container's config has the env read from the ConfigMaps,
// Secrets and resources (the node's allocatable for a missing limit); a
// ConfigMap that does not exist is a ContainerConfigError and creates no
// container; envFrom keys that are no names are a warning of the pod.
func TestEnvSources(t *testing.T) {
	objs := &objectstest.Objects{}
	h := newHarness(t, func(cfg *Config) {
		cfg.Objects = runtime.Objects{Getter: objs}
		cfg.Allocatable = v1.ResourceList{v1.ResourceMemory: resource.MustParse("2Gi")}
	})
	pod := testPod("uid-1")
	app := &pod.Spec.Containers[0]
	app.EnvFrom = []v1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}
	app.Env = append(app.Env,
		v1.EnvVar{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "pw"}}},
		v1.EnvVar{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}})
	h.prepare(pod)

	_, err := h.r.StartContainer(context.Background(), pod, ref(pod, "app"), 0)
	var ce *runtime.ContainerConfigError
	if !errors.As(err, &ce) || ce.Message != `configmap "cfg" not found` {
		t.Fatalf("StartContainer without the ConfigMap = %v, want a ContainerConfigError", err)
	}
	h.f.mu.Lock()
	n := len(h.f.containers)
	h.f.mu.Unlock()
	if n != 0 {
		t.Errorf("%d containers created, want none", n)
	}

	objs.Put(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"}, Data: map[string]string{"mode": "fast", "a=b": "x"}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "creds"}, Data: map[string][]byte{"pw": []byte("s3cret")}},
	)
	c := h.start(pod, "app", 0)
	var env []string
	for _, kv := range h.f.container(c.ID).config.Envs {
		env = append(env, kv.Key+"="+string(kv.Value))
	}
	if want := []string{"CFG_mode=fast", "POD=web", "GREETING=hello-web", "APP=web", "PW=s3cret", "MEM=2048"}; !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	select {
	case w := <-h.r.Warnings():
		if w.PodUID != pod.UID || w.Container != "app" || w.Reason != "InvalidEnvironmentVariableNames" {
			t.Errorf("warning %+v", w)
		}
	case <-time.After(10 * time.Second):
		t.Error("no warning of the invalid key")
	}
}

// The container's config has the pod's service links after its own
// variables, and the master service's.
func TestServiceLinks(t *testing.T) {
	svcs := &objectstest.Services{}
	svcs.Put(
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes"},
			Spec: v1.ServiceSpec{ClusterIP: "10.96.0.1", Ports: []v1.ServicePort{{Name: "https", Port: 443}}}},
		&v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "db"},
			Spec: v1.ServiceSpec{ClusterIP: "10.96.0.9", Ports: []v1.ServicePort{{Port: 5432}}}},
	)
	h := newHarness(t, func(cfg *Config) { cfg.Objects = runtime.Objects{Services: svcs} })
	pod := testPod("uid-1")
	h.prepare(pod)
	c := h.start(pod, "app", 0)
	env := map[string]string{}
	for _, kv := range h.f.container(c.ID).config.Envs {
		env[kv.Key] = string(kv.Value)
	}
	for k, v := range map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
		"DB_SERVICE_HOST": "10.96.0.9", "DB_PORT_5432_TCP": "tcp://10.96.0.9:5432", "POD": "web",
	} {
		if env[k] != v {
			t.Errorf("%s = %q, want %q (env %v)", k, env[k], v, env)
		}
	}
}
