package volumes

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

const payloadPod = `
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: ns
  uid: "1234"
  labels: {b: "2", a: "one \"quoted\""}
  annotations: {note: x}
spec:
  serviceAccountName: builder
  containers:
  - name: c
    image: x
    command: [sleep]
    resources:
      limits: {memory: 64Mi}
      requests: {cpu: 250m}
  volumes:
  - {name: cm, configMap: {name: cm}}
  - name: cm-items
    configMap:
      name: cm
      defaultMode: 0600
      items: [{key: a, path: dir/a.txt, mode: 0400}, {key: bin, path: b}]
  - {name: cm-missing, configMap: {name: nope}}
  - {name: cm-optional, configMap: {name: nope, optional: true}}
  - name: cm-missing-key
    configMap: {name: cm, items: [{key: zz, path: z}]}
  - {name: secret, secret: {secretName: s}}
  - name: down
    downwardAPI:
      items:
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: uid, fieldRef: {fieldPath: metadata.uid}}
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: b, fieldRef: {fieldPath: "metadata.labels['b']"}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}, mode: 0600}
      - {path: mem, resourceFieldRef: {containerName: c, resource: limits.memory, divisor: 1Mi}}
      - {path: cpu-limit, resourceFieldRef: {containerName: c, resource: limits.cpu}}
      - {path: cpu-request, resourceFieldRef: {containerName: c, resource: requests.cpu, divisor: 1m}}
  - name: token
    projected:
      defaultMode: 0420
      sources:
      - serviceAccountToken: {path: token, audience: vault}
      - configMap: {name: cm, items: [{key: a, path: ca.crt}]}
      - downwardAPI: {items: [{path: namespace, fieldRef: {fieldPath: metadata.namespace}}]}
`

func setup(t *testing.T) (*model.Pod, *objectstest.Objects) {
	t.Helper()
	pods, err := model.Decode([]byte(payloadPod))
	if err != nil {
		t.Fatal(err)
	}
	objs := &objectstest.Objects{}
	objs.Put(
		&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"a": "A"}, BinaryData: map[string][]byte{"bin": {0, 1}}},
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: map[string][]byte{"k": []byte("v"), "both": []byte("data")}, StringData: map[string]string{"both": "string"}},
	)
	return pods[0], objs
}

func payloadOf(t *testing.T, pod *model.Pod, in Input, name string) (hostfs.Payload, error) {
	t.Helper()
	return Payload(context.Background(), in, pod.Volume(name))
}

func TestPayloads(t *testing.T) {
	pod, objs := setup(t)
	in := Input{Pod: pod, Objects: runtime.Objects{Getter: objs, Tokens: objs}, Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("3500m")}}
	f := func(data string, mode fs.FileMode) hostfs.File { return hostfs.File{Data: []byte(data), Mode: mode} }
	for name, want := range map[string]hostfs.Payload{
		"cm":          {"a": f("A", 0o644), "bin": f("\x00\x01", 0o644)},
		"cm-items":    {"dir/a.txt": f("A", 0o400), "b": f("\x00\x01", 0o600)},
		"cm-optional": {},
		"secret":      {"k": f("v", 0o644), "both": f("string", 0o644)},
		"down": {
			"name": f("p", 0o644), "uid": f("1234", 0o644), "b": f("2", 0o644),
			"labels":      f("a=\"one \\\"quoted\\\"\"\nb=\"2\"", 0o644),
			"annotations": f(`note="x"`, 0o600),
			"mem":         f("64", 0o644), "cpu-limit": f("4", 0o644), "cpu-request": f("250", 0o644),
		},
		"token": {"token": f("token-1", 0o420), "ca.crt": f("A", 0o420), "namespace": f("ns", 0o420)},
	} {
		t.Run(name, func(t *testing.T) {
			got, err := payloadOf(t, pod, in, name)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("payload %v, want %v", got, want)
			}
			for p, w := range want {
				if g, ok := got[p]; !ok || string(g.Data) != string(w.Data) || g.Mode != w.Mode {
					t.Errorf("%s = %q %v, want %q %v", p, g.Data, g.Mode, w.Data, w.Mode)
				}
			}
		})
	}
	req := objs.Requests[0]
	if req.ServiceAccount != "builder" || req.Audience != "vault" || req.ExpirationSeconds != 3600 || req.Pod != pod || req.Current != "" {
		t.Errorf("token request %+v", req)
	}
}

func TestPayloadMissingIsAVolumeError(t *testing.T) {
	pod, objs := setup(t)
	in := Input{Pod: pod, Objects: runtime.Objects{Getter: objs}}
	for name, msg := range map[string]string{
		"cm-missing":     `MountVolume.SetUp failed for volume "cm-missing" : configmap "nope" not found`,
		"cm-missing-key": `MountVolume.SetUp failed for volume "cm-missing-key" : configmap references non-existent config key: zz`,
		"token":          `MountVolume.SetUp failed for volume "token" : serviceAccountToken: nothing can mint service account tokens here`,
	} {
		_, err := payloadOf(t, pod, in, name)
		var ve *runtime.VolumeError
		if !errors.As(err, &ve) || ve.Volume != name || err.Error() != msg {
			t.Errorf("%s: %v, want a VolumeError %q", name, err, msg)
		}
	}
	if _, err := payloadOf(t, pod, Input{Pod: pod}, "secret"); err == nil || !strings.Contains(err.Error(), `secret "s" not found`) {
		t.Errorf("no getter: %v, want the secret not found", err)
	}
}

func TestTokenReusesTheCurrentOne(t *testing.T) {
	pod, objs := setup(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte("written-before"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := payloadOf(t, pod, Input{Pod: pod, Objects: runtime.Objects{Getter: objs, Tokens: objs}, Dir: dir}, "token")
	if err != nil {
		t.Fatal(err)
	}
	if objs.Requests[0].Current != "written-before" || string(got["token"].Data) != "written-before" {
		t.Errorf("request %+v, file %q: want the token in the volume passed on and kept", objs.Requests[0], got["token"].Data)
	}
}

func TestTokenError(t *testing.T) {
	pod, objs := setup(t)
	objs.TokenErr = errors.New("forbidden")
	_, err := payloadOf(t, pod, Input{Pod: pod, Objects: runtime.Objects{Getter: objs, Tokens: objs}}, "token")
	var ve *runtime.VolumeError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "forbidden") {
		t.Errorf("%v, want a VolumeError wrapping the token's", err)
	}
}
