package objects_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
)

const refsPod = `
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: ns
  annotations:
    pod.alpha.kubernetes.io/defer-containers: '[{"name":"d","image":"x","envFrom":[{"secretRef":{"name":"defer-secret"}}]}]'
spec:
  imagePullSecrets: [{name: pull}]
  initContainers:
  - name: i
    image: x
    env: [{name: A, valueFrom: {configMapKeyRef: {name: init-cm, key: a}}}]
  containers:
  - name: c
    image: x
    envFrom: [{configMapRef: {name: env-cm}}, {secretRef: {name: env-secret}}]
    env:
    - {name: B, valueFrom: {secretKeyRef: {name: key-secret, key: b}}}
    - {name: C, valueFrom: {configMapKeyRef: {name: env-cm, key: c}}}
  volumes:
  - {name: v1, configMap: {name: vol-cm}}
  - {name: v2, secret: {secretName: vol-secret}}
  - name: v3
    projected:
      sources:
      - configMap: {name: proj-cm}
      - secret: {name: proj-secret}
      - serviceAccountToken: {path: token}
      - downwardAPI: {items: [{path: ns, fieldRef: {fieldPath: metadata.namespace}}]}
  - {name: v4, emptyDir: {}}
`

func TestRefs(t *testing.T) {
	pods, err := model.Decode([]byte(refsPod))
	if err != nil {
		t.Fatal(err)
	}
	pod := pods[0]
	var got []string
	for _, r := range objects.Refs(pod) {
		got = append(got, r.String())
	}
	want := []string{
		"ConfigMap ns/env-cm", "ConfigMap ns/init-cm", "ConfigMap ns/proj-cm", "ConfigMap ns/vol-cm",
		"Secret ns/defer-secret", "Secret ns/env-secret", "Secret ns/key-secret", "Secret ns/proj-secret", "Secret ns/pull", "Secret ns/vol-secret",
	}
	if len(got) != len(want) {
		t.Fatalf("Refs = %q, want %q", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Refs = %q, want %q", got, want)
		}
	}
	if !objects.References(pod, objects.Ref{Kind: objects.KindSecret, Namespace: "ns", Name: "pull"}) {
		t.Error("References(pull secret) = false")
	}
	if objects.References(pod, objects.Ref{Kind: objects.KindSecret, Namespace: "other", Name: "pull"}) {
		t.Error("References(another namespace's secret) = true")
	}
}

func TestNotFoundIsTheKubelets(t *testing.T) {
	err := objects.NotFound(objects.KindConfigMap, "cm")
	if !apierrors.IsNotFound(err) || err.Error() != `configmap "cm" not found` {
		t.Errorf("NotFound = %v", err)
	}
	if err := objects.NotFound(objects.KindSecret, "s"); err.Error() != `secret "s" not found` {
		t.Errorf("NotFound = %v", err)
	}
}
