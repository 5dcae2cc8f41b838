package model

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldRef(t *testing.T) {
	p := &Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "u1", Labels: map[string]string{"app": "a"}, Annotations: map[string]string{"k": "v"}},
		Spec:       v1.PodSpec{NodeName: "n1", ServiceAccountName: "sa"},
	}}
	for field, want := range map[string]string{
		"metadata.name": "web", "metadata.namespace": "ns", "metadata.uid": "u1", "spec.nodeName": "n1",
		"spec.serviceAccountName": "sa", "status.hostIP": "10.0.0.1", "status.podIP": "10.88.0.2",
		"metadata.labels['app']": "a", "metadata.annotations['k']": "v", "metadata.labels['none']": "",
	} {
		if got, ok := p.FieldRef(field, "10.0.0.1", "10.88.0.2"); !ok || got != want {
			t.Errorf("FieldRef(%q) = %q, %v; want %q", field, got, ok, want)
		}
	}
	for _, field := range []string{"metadata.generation", "status.phase", "metadata.labels"} {
		if _, ok := p.FieldRef(field, "", ""); ok {
			t.Errorf("FieldRef(%q) resolved", field)
		}
	}
}

func TestSpecPath(t *testing.T) {
	for ref, want := range map[ContainerRef]string{
		{Role: RoleMain, Index: 1}:    "spec.containers[1]",
		{Role: RoleSidecar, Index: 0}: "spec.initContainers[0]",
		{Role: RoleDefer, Index: 2}:   "metadata.annotations[" + DeferContainersAnnotation + "][2]",
	} {
		if got := ref.SpecPath(); got != want {
			t.Errorf("%+v.SpecPath() = %q, want %q", ref, got, want)
		}
	}
}
