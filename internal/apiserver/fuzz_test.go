package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
)

// fuzzBackend is a backend that never fails on its own: one pod, web in
// default, whose container app runs and then ends (as its watch says); it
// validates what is created or applied, as the agent does. What the server
// passed to Create or Apply is kept in got.
type fuzzBackend struct {
	logPath string
	got     *model.Pod
}

var _ Backend = (*fuzzBackend)(nil)

func (b *fuzzBackend) web(running bool) *v1.Pod {
	cs := v1.ContainerStatus{Name: "app", ContainerID: "fake://1"}
	if running {
		cs.State.Running = &v1.ContainerStateRunning{}
	} else {
		cs.State.Terminated = &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "uid-web", Labels: map[string]string{"app": "web"}},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app", Image: "busybox"}}},
		Status:     v1.PodStatus{Phase: v1.PodRunning, ContainerStatuses: []v1.ContainerStatus{cs}},
	}
}

func (b *fuzzBackend) isWeb(ns, name string) bool { return ns == "default" && name == "web" }

func (b *fuzzBackend) admit(pod *model.Pod) error {
	b.got = pod
	if errs := model.Validate(pod); len(errs) > 0 {
		return &agent.InvalidError{Errs: errs}
	}
	return nil
}

func (b *fuzzBackend) Create(pod *model.Pod) (*model.Pod, error) {
	if err := b.admit(pod); err != nil {
		return nil, err
	}
	return pod, nil
}

func (b *fuzzBackend) Apply(pod *model.Pod) (*v1.Pod, agent.ApplyResult, error) {
	if err := b.admit(pod); err != nil {
		return nil, 0, err
	}
	return pod.Pod.DeepCopy(), agent.Created, nil
}

func (b *fuzzBackend) GetPod(ns, name string) (*v1.Pod, error) {
	if !b.isWeb(ns, name) {
		return nil, agent.ErrNotFound
	}
	return b.web(true), nil
}

func (b *fuzzBackend) ListPods(ns string) []*v1.Pod {
	if ns != "" && ns != "default" {
		return nil
	}
	return []*v1.Pod{b.web(true)}
}

func (b *fuzzBackend) DeletePod(ns, name string, _ *int64) (*v1.Pod, error) {
	if !b.isWeb(ns, name) {
		return nil, agent.ErrNotFound
	}
	p := b.web(true)
	p.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return p, nil
}

// WatchPods: web as it is, then as it ends; then the watch is over.
func (b *fuzzBackend) WatchPods(_ context.Context, ns string) <-chan agent.WatchEvent {
	ch := make(chan agent.WatchEvent, 2)
	if ns == "" || ns == "default" {
		ch <- agent.WatchEvent{Type: "ADDED", Pod: b.web(true)}
		ch <- agent.WatchEvent{Type: "MODIFIED", Pod: b.web(false)}
	}
	close(ch)
	return ch
}

func (b *fuzzBackend) LogPath(ns, name, container string, _ bool) (string, error) {
	if !b.isWeb(ns, name) {
		return "", agent.ErrNotFound
	}
	if container != "" && container != "app" {
		return "", &agent.BadRequestError{Message: fmt.Sprintf("container %s is not valid for pod %s", container, name)}
	}
	return b.logPath, nil
}

func (b *fuzzBackend) ListEvents(ns, _ string) []v1.Event {
	if ns != "" && ns != "default" {
		return nil
	}
	return []v1.Event{{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "default"},
		InvolvedObject: v1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web", UID: "uid-web"},
		Reason:         "Started", Type: v1.EventTypeNormal,
	}}
}

func (b *fuzzBackend) WatchEvents(context.Context, string) <-chan v1.Event {
	ch := make(chan v1.Event)
	close(ch)
	return ch
}

var fuzzMethods = []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodDelete, http.MethodPut}

// FuzzRequest sends the API server any request: method, path, query,
// Content-Type and body, the bodies seeded with the manifests of
// internal/model/testdata. Whatever it is, the server answers without
// panicking or hanging; never with a 5xx, since its backend never fails;
// with a Status of the response's code when it refuses; and a pod it
// creates or applies is in the namespace of the request's path, and for
// an apply has the path's name.
func FuzzRequest(f *testing.F) {
	var manifests [][]byte
	for _, dir := range []string{"valid", "invalid"} {
		files, err := filepath.Glob(filepath.Join("..", "model", "testdata", dir, "*"))
		if err != nil {
			f.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			manifests = append(manifests, data)
		}
	}
	if len(manifests) == 0 {
		f.Fatal("no manifests in internal/model/testdata")
	}
	for i, m := range manifests {
		f.Add(uint8(1), "/api/v1/namespaces/default/pods", "", "application/yaml", m)
		if i%4 == 0 {
			f.Add(uint8(2), "/api/v1/namespaces/default/pods/web", "", ApplyPatchContentType, m)
		}
	}
	f.Add(uint8(1), "/api/v1/namespaces/other/pods", "", "application/json", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"x","namespace":"other"},"spec":{"containers":[{"name":"a","image":"b"}]}}`))
	f.Add(uint8(0), "/api/v1/pods", "labelSelector=app%3Dweb&fieldSelector=status.phase%3DRunning", "", []byte(nil))
	f.Add(uint8(0), "/api/v1/namespaces/default/pods", "watch=true&fieldSelector=metadata.name%3Dweb", "", []byte(nil))
	f.Add(uint8(0), "/api/v1/namespaces/default/pods/web", "", "", []byte(nil))
	f.Add(uint8(0), "/api/v1/namespaces/default/pods/web/log", "tailLines=1&timestamps=true", "", []byte(nil))
	f.Add(uint8(0), "/api/v1/namespaces/default/pods/web/log", "follow=1&container=app", "", []byte(nil))
	f.Add(uint8(0), "/api/v1/namespaces/default/pods/web/log", "previous=yes", "", []byte(nil))
	f.Add(uint8(0), "/api/v1/events", "fieldSelector=involvedObject.name%3Dweb,reason%21%3DKilling", "", []byte(nil))
	f.Add(uint8(0), "/api/v1/namespaces/default/events", "watch=true", "", []byte(nil))
	f.Add(uint8(3), "/api/v1/namespaces/default/pods/web", "gracePeriodSeconds=0", "application/json", []byte(`{"preconditions":{"uid":"uid-web"}}`))
	f.Add(uint8(3), "/api/v1/namespaces/default/pods/web", "", "application/json", []byte(`{"gracePeriodSeconds":-1}`))
	f.Add(uint8(4), "/healthz", "", "", []byte(nil))

	logPath := filepath.Join(f.TempDir(), "0.log")
	out, err := os.Create(logPath)
	if err != nil {
		f.Fatal(err)
	}
	w := crilog.NewWriter(crilog.NewSink(out, clocktesting.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), nil), crilog.Stdout)
	if _, err := w.Write([]byte("one\ntwo\nthree\n")); err != nil {
		f.Fatal(err)
	}
	if err := out.Close(); err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, method uint8, path, query, contentType string, body []byte) {
		b := &fuzzBackend{logPath: logPath}
		srv := New(b, slog.New(slog.DiscardHandler))
		m := fuzzMethods[int(method)%len(fuzzMethods)]
		req, err := http.NewRequest(m, "http://podward"+path+"?"+query, bytes.NewReader(body))
		if err != nil {
			return // not a request a client can send
		}
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		req = req.WithContext(ctx)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req) // its mux sets req's path values
		resp := rec.Result()
		got, _ := io.ReadAll(resp.Body)

		if resp.StatusCode >= 500 {
			t.Fatalf("%s %s?%s: %d %s", m, path, query, resp.StatusCode, got)
		}
		if resp.StatusCode >= 400 {
			var st metav1.Status
			if err := json.Unmarshal(got, &st); err != nil || st.Kind != "Status" || int(st.Code) != resp.StatusCode {
				t.Fatalf("%s %s: %d with %q, not a Status of that code (%v)", m, path, resp.StatusCode, got, err)
			}
			return
		}
		if b.got == nil {
			return // not a create or an apply
		}
		ns := req.PathValue("ns")
		if b.got.Namespace != ns {
			t.Fatalf("%s %s: the pod was admitted in namespace %q", m, path, b.got.Namespace)
		}
		if written := fuzzWrittenNamespace(body); written != "" && written != ns {
			t.Fatalf("%s %s: a pod of namespace %q was admitted in %q:\n%s", m, path, written, ns, body)
		}
		// The same, by the decoder's reading: only "default" may have been
		// defaulted rather than written.
		if pods, err := model.Decode(body); err == nil && len(pods) == 1 && pods[0].Namespace != metav1.NamespaceDefault && pods[0].Namespace != ns {
			t.Fatalf("%s %s: a pod of namespace %q was admitted in %q:\n%s", m, path, pods[0].Namespace, ns, body)
		}
		if m == http.MethodPatch && b.got.Name != req.PathValue("name") {
			t.Fatalf("%s %s: applied as %q", m, path, b.got.Name)
		}
	})
}

// fuzzWrittenNamespace is the metadata.namespace the one non-empty
// document of a request body says; "" when it says none (or there is no
// such document).
func fuzzWrittenNamespace(body []byte) string {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(body), 4096)
	for {
		var doc struct {
			Metadata *struct {
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) || err != nil {
			return ""
		}
		if doc.Metadata != nil && doc.Metadata.Namespace != "" {
			return doc.Metadata.Namespace
		}
	}
}
