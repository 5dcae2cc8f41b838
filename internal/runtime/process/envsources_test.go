package process

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/runtime"
)

func envConfigMap(mode string) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "cfg"},
		Data:       map[string]string{"MODE": mode, "bad=key": "x"},
	}
}

// envHarness is a runtime on root reading objs, on a node of 3 CPUs.
func envHarness(t *testing.T, root string, objs *objectstest.Objects) *harness {
	return newHarnessWith(t, Config{
		Root:        root,
		Objects:     runtime.Objects{Getter: objs},
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3")},
	})
}

// A container's environment comes from its ConfigMaps and Secrets and its
// resources; an exec in it has the environment it started with, even
// after the ConfigMap changed; envFrom keys that are no names are a
// warning of the pod.
func TestEnvSources(t *testing.T) {
	objs := &objectstest.Objects{}
	objs.Put(envConfigMap("fast"), &v1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "creds"},
		Data:       map[string][]byte{"pw": []byte("s3cret")},
	})
	root := t.TempDir()
	h := envHarness(t, root, objs)
	c := shell("app", "echo START $MODE $PW $CPUS $MEM; exec sleep 60")
	c.EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}}}
	c.Env = []v1.EnvVar{
		{Name: "PW", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "creds"}, Key: "pw"}}},
		{Name: "CPUS", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.cpu"}}},
		{Name: "MEM", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
	}
	c.Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	pod := newPod(t, c)
	h.prepare(pod)
	cont := h.start(pod, 0)
	if line := h.waitOutput("app", "START"); line != "START fast s3cret 3 64" {
		t.Errorf("the container wrote %q, want %q", line, "START fast s3cret 3 64")
	}
	select {
	case w := <-h.r.Warnings():
		want := "Keys [bad=key] from the EnvFrom configMap default/cfg were skipped since they are considered invalid environment variable names."
		if w.PodUID != pod.UID || w.Container != "app" || w.Reason != "InvalidEnvironmentVariableNames" || w.Message != want {
			t.Errorf("warning %+v, want InvalidEnvironmentVariableNames %q", w, want)
		}
	case <-time.After(waitLimit):
		t.Error("no warning of the invalid key")
	}

	objs.Put(envConfigMap("slow"))
	ref := model.ContainerRef{Name: "app", Role: model.RoleMain}
	out, code, err := h.r.Exec(context.Background(), pod, ref, []string{"/bin/sh", "-c", "echo $MODE $PW"})
	if err != nil || code != 0 || strings.TrimSpace(string(out)) != "fast s3cret" {
		t.Errorf("Exec = %q, %d, %v; want the env the container started with, %q", out, code, err, "fast s3cret")
	}
	// The agent restarts: the next Runtime has the env from the
	// instance's record.
	if err := h.r.Close(); err != nil {
		t.Fatal(err)
	}
	h = envHarness(t, root, objs)
	out, code, err = h.r.Exec(context.Background(), pod, ref, []string{"/bin/sh", "-c", "echo $MODE $PW"})
	if err != nil || code != 0 || strings.TrimSpace(string(out)) != "fast s3cret" {
		t.Errorf("Exec after a restart = %q, %d, %v; want %q", out, code, err, "fast s3cret")
	}
	if err := h.r.Signal(context.Background(), cont.ID, 9); err != nil {
		t.Fatal(err)
	}
	h.waitExit(cont.ID)
}

// A ConfigMap that does not exist is a ContainerConfigError with the
// kubelet's message, and nothing starts.
func TestEnvMissingObject(t *testing.T) {
	h := envHarness(t, t.TempDir(), &objectstest.Objects{})
	c := shell("app", "echo started")
	c.Env = []v1.EnvVar{{Name: "MODE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{
		LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "MODE"}}}}
	pod := newPod(t, c)
	h.prepare(pod)
	ref := model.ContainerRef{Name: "app", Role: model.RoleMain}
	_, err := h.r.StartContainer(context.Background(), pod, ref, 0)
	var ce *runtime.ContainerConfigError
	if !errors.As(err, &ce) || !errors.Is(err, runtime.ErrContainerConfig) || ce.Message != `configmap "cfg" not found` {
		t.Fatalf("StartContainer = %v, want a ContainerConfigError `configmap \"cfg\" not found`", err)
	}
	if list, err := h.r.ListContainers(context.Background(), pod.UID); err != nil || len(list) != 0 {
		t.Errorf("ListContainers = %v, %v; want nothing", list, err)
	}
}
