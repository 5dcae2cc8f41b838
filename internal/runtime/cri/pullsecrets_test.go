package cri

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/runtime"
)

// dockerConfigJSON is a dockerconfigjson of user on docker.io.
func dockerConfigJSON(user string) []byte {
	return []byte(`{"auths":{"docker.io":{"username":"` + user + `","password":"p"}}}`)
}

func pullSecretObject(ns, name string, typ v1.SecretType, data []byte) *v1.Secret {
	key := v1.DockerConfigJsonKey
	if typ == v1.SecretTypeDockercfg {
		key = v1.DockerConfigKey
	}
	return &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: typ, Data: map[string][]byte{key: data}}
}

func podOf(ns, uid string, secrets ...string) *model.Pod {
	p := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: ns, UID: types.UID(uid)}}}
	for _, s := range secrets {
		p.Spec.ImagePullSecrets = append(p.Spec.ImagePullSecrets, v1.LocalObjectReference{Name: s})
	}
	return p
}

// pullAs pulls busybox for pod and returns the user it pulled as ("" for
// none).
func pullAs(t *testing.T, h *harness, pod *model.Pod) string {
	t.Helper()
	if _, err := h.r.PullImage(context.Background(), pod, "busybox"); err != nil {
		t.Fatal(err)
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	return h.f.pulls[len(h.f.pulls)-1].GetAuth().GetUsername()
}

// warning waits for the runtime's next warning.
func warning(t *testing.T, h *harness) runtime.Warning {
	t.Helper()
	select {
	case w := <-h.r.Warnings():
		return w
	case <-time.After(10 * time.Second):
		t.Fatal("no warning")
		return runtime.Warning{}
	}
}

func noWarning(t *testing.T, h *harness) {
	t.Helper()
	select {
	case w := <-h.r.Warnings():
		t.Errorf("warning %+v", w)
	default:
	}
}

func TestPullSecretsAreThePodsNamespaces(t *testing.T) {
	var objs objectstest.Objects
	objs.Put(
		pullSecretObject("a", "regcred", v1.SecretTypeDockerConfigJson, dockerConfigJSON("a-user")),
		pullSecretObject("a", "legacy", v1.SecretTypeDockercfg, []byte(`{"docker.io":{"username":"cfg-user","password":"p"}}`)),
		&v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "opaque"}, Type: v1.SecretTypeOpaque, Data: map[string][]byte{v1.DockerConfigJsonKey: dockerConfigJSON("opaque-user")}},
	)
	dir := t.TempDir()
	// Another namespace's file is no more a fallback than its Secret.
	if err := os.MkdirAll(filepath.Join(dir, "a"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "a", "regcred.json"), dockerConfigJSON("a-file-user"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Objects.Getter = &objs; c.PullSecretsDir = dir })

	if user := pullAs(t, h, podOf("a", "uid-a", "regcred")); user != "a-user" {
		t.Errorf("pod of namespace a pulled as %q, want its Secret's a-user", user)
	}
	if user := pullAs(t, h, podOf("a", "uid-a", "legacy")); user != "cfg-user" {
		t.Errorf("dockercfg Secret: pulled as %q, want cfg-user", user)
	}
	if user := pullAs(t, h, podOf("a", "uid-a", "opaque")); user != "" {
		t.Errorf("Opaque Secret: pulled as %q, want no credentials", user)
	}
	noWarning(t, h)

	if user := pullAs(t, h, podOf("b", "uid-b", "regcred")); user != "" {
		t.Errorf("pod of namespace b pulled as %q with namespace a's secret", user)
	}
	w := warning(t, h)
	want := "Unable to retrieve some image pull secrets (regcred); attempting to pull the image may not succeed."
	if w.PodUID != "uid-b" || w.Reason != WarningFailedToRetrieveImagePullSecret || w.Message != want || w.Container != "" {
		t.Errorf("warning %+v, want the kubelet's FailedToRetrieveImagePullSecret of the pod", w)
	}
}

func TestPullSecretsDirectoryByNamespace(t *testing.T) {
	dir := t.TempDir()
	for file, user := range map[string]string{"b/regcred.json": "b-user", "regcred.json": "default-user", "b/other.json": "other-user"} {
		path := filepath.Join(dir, file)
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, dockerConfigJSON(user), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var objs objectstest.Objects // the Getter has none: the files serve
	h := newHarness(t, func(c *Config) { c.Objects.Getter = &objs; c.PullSecretsDir = dir })

	if user := pullAs(t, h, podOf("b", "uid-b", "regcred")); user != "b-user" {
		t.Errorf("pod of namespace b pulled as %q, want b-user", user)
	}
	if user := pullAs(t, h, podOf("default", "uid-d", "regcred")); user != "default-user" {
		t.Errorf("pod of namespace default pulled as %q, want the older layout's default-user", user)
	}
	noWarning(t, h)
	// The older layout is namespace default's only.
	if user := pullAs(t, h, podOf("c", "uid-c", "regcred", "../b/other")); user != "" {
		t.Errorf("pod of namespace c pulled as %q", user)
	}
	if w := warning(t, h); w.PodUID != "uid-c" || !strings.Contains(w.Message, "(regcred, ../b/other)") {
		t.Errorf("warning %+v, want both secrets named", w)
	}
}

func TestPullSecretsGetterBeforeDirectory(t *testing.T) {
	var objs objectstest.Objects
	objs.Put(pullSecretObject("b", "regcred", v1.SecretTypeDockerConfigJson, dockerConfigJSON("secret-user")))
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "b"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "b", "regcred.json"), dockerConfigJSON("file-user"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Objects.Getter = &objs; c.PullSecretsDir = dir })
	if user := pullAs(t, h, podOf("b", "uid-b", "regcred")); user != "secret-user" {
		t.Errorf("pulled as %q, want the Secret's secret-user", user)
	}
	// Without a Getter nor a directory, the secret is missing.
	h2 := newHarness(t, nil)
	if user := pullAs(t, h2, podOf("b", "uid-b", "regcred")); user != "" {
		t.Errorf("pulled as %q with nothing configured", user)
	}
	if w := warning(t, h2); w.Reason != WarningFailedToRetrieveImagePullSecret {
		t.Errorf("warning %+v", w)
	}
}

// A failed pull with a pod's credentials names the pull secret and its
// entry, never the registry user name: the error is the pod's Failed
// event, which whoever reads the namespace's events sees (issue 22,
// item 4). Both ways a user name is written (username, and auth's
// base64 user:password) are checked.
func TestFailedPullNamesTheSecretNotTheUser(t *testing.T) {
	var objs objectstest.Objects
	objs.Put(
		pullSecretObject("a", "regcred", v1.SecretTypeDockerConfigJson, dockerConfigJSON("alice-registry-user")),
		pullSecretObject("a", "basic", v1.SecretTypeDockerConfigJson, []byte(`{"auths":{"docker.io":{"auth":"`+basicAuth("bob-registry-user", "p")+`"}}}`)),
	)
	h := newHarness(t, func(c *Config) { c.Objects.Getter = &objs })
	h.f.mu.Lock()
	h.f.pullFn = func(*runtimeapi.PullImageRequest) error { return errors.New("unauthorized") }
	h.f.mu.Unlock()
	_, err := h.r.PullImage(context.Background(), podOf("a", "uid-a", "regcred", "basic"), "busybox")
	if err == nil {
		t.Fatal("the pull succeeded")
	}
	for _, user := range []string{"alice-registry-user", "bob-registry-user"} {
		if strings.Contains(err.Error(), user) {
			t.Errorf("the pull's error shows the user name %s: %v", user, err)
		}
	}
	for _, want := range []string{`with image pull secret "regcred", entry "docker.io": `, `with image pull secret "basic", entry "docker.io": `} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the pull's error %q does not say %q", err, want)
		}
	}
}
