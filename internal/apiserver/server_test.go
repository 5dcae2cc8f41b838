package apiserver

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
	"github.com/podward/podward/internal/streaming"
)

// spdystream's Connection.Close leaves a goroutine (shutdown) that waits
// up to a second for someone to take its close error when the server
// closed the connection first, as after a port-forward (TestStreamAuditLines).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/moby/spdystream.(*Connection).shutdown"))
}

// The agent is the backend the server is written for.
var _ Backend = (*agent.Agent)(nil)

const testTimeout = 20 * time.Second

const podYAML = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox
    command: ["sleep", "100"]
`

const twoContainersYAML = `apiVersion: v1
kind: Pod
metadata:
  name: duo
spec:
  containers:
  - name: a
    image: busybox
  - name: b
    image: busybox
`

// backend is the agent with the fake runtime, whose log paths are moved
// into a directory the test writes.
type backend struct {
	*agent.Agent
	logDir string
}

func (b *backend) LogPath(ns, name, container string, previous bool) (string, error) {
	p, err := b.Agent.LogPath(ns, name, container, previous)
	if err != nil {
		return "", err
	}
	return filepath.Join(b.logDir, strings.TrimPrefix(p, "/nonexistent/")), nil
}

// syncBuffer collects the server's log.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type env struct {
	t      *testing.T
	agent  *agent.Agent
	rt     *fake.Runtime
	logDir string
	log    *syncBuffer
	hc     *http.Client
	socket string
}

// shortDir is a temporary directory with a short path: a unix socket path
// has at most 107 bytes.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "pwapi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func unixClient(socket string) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}
}

// newEnv serves an agent with the fake runtime with httptest on a unix
// socket opened by Listen.
func newEnv(t *testing.T) *env {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	rt := fake.New(clk)
	ctx, cancel := context.WithCancel(context.Background())
	a := agent.New(ctx, agent.Config{Runtime: rt, Clock: clk, Planner: planner.DefaultConfig(), Logger: slog.New(slog.DiscardHandler)})
	dir := shortDir(t)
	e := &env{t: t, agent: a, rt: rt, logDir: filepath.Join(dir, "logs"), log: &syncBuffer{}, socket: filepath.Join(dir, "api.sock")}
	srv := New(&backend{Agent: a, logDir: e.logDir}, slog.New(slog.NewTextHandler(e.log, &slog.HandlerOptions{Level: slog.LevelDebug}))).
		WithStreams(streaming.New(a, rt, slog.New(slog.DiscardHandler)))
	ln, err := Listen(e.socket)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.Listener.Close()
	ts.Listener = ln
	ts.Start()
	e.hc = unixClient(e.socket)
	t.Cleanup(func() {
		e.hc.CloseIdleConnections()
		ts.Close()
		cancel()
		a.Wait()
	})
	return e
}

type response struct {
	code   int
	header http.Header
	body   []byte
}

func (e *env) do(method, path, contentType, body string) response {
	e.t.Helper()
	return e.doWithin(testTimeout, method, path, contentType, body)
}

// doWithin is do with its own deadline, for a request whose body alone
// takes long to decode under -race on a loaded machine.
func (e *env) doWithin(within time.Duration, method, path, contentType, body string) response {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, "http://podward"+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return response{code: resp.StatusCode, header: resp.Header, body: b}
}

func decodeAs[T any](t *testing.T, r response) *T {
	t.Helper()
	out := new(T)
	if err := json.Unmarshal(r.body, out); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return out
}

// status checks that r is a Status object with the given code and reason.
func status(t *testing.T, r response, code int, reason metav1.StatusReason) *metav1.Status {
	t.Helper()
	if r.code != code {
		t.Fatalf("code = %d, want %d; body %s", r.code, code, r.body)
	}
	st := decodeAs[metav1.Status](t, r)
	if st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || st.Code != int32(code) || st.Reason != reason {
		t.Fatalf("status = %+v, want a v1 Status Failure %d %s", st, code, reason)
	}
	return st
}

// waitPod waits, on the agent's watch, until the pod ns/name satisfies ok
// (a nil pod: it does not exist).
func (e *env) waitPod(ns, name string, ok func(*v1.Pod) bool) *v1.Pod {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	ch := e.agent.WatchPods(ctx, ns)
	for {
		p, err := e.agent.GetPod(ns, name)
		if err != nil {
			p = nil
		}
		if ok(p) {
			return p
		}
		select {
		case _, open := <-ch:
			if !open {
				e.t.Fatalf("pod %s/%s: timed out", ns, name)
			}
		case <-ctx.Done():
			e.t.Fatalf("pod %s/%s: timed out", ns, name)
		}
	}
}

func running(container string) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool {
		if p == nil {
			return false
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == container && cs.State.Running != nil {
				return true
			}
		}
		return false
	}
}

func gone(p *v1.Pod) bool { return p == nil }

func TestCreateGetListDelete(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/namespaces/default/pods", "application/yaml", podYAML)
	if r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	created := decodeAs[v1.Pod](t, r)
	if created.Kind != "Pod" || created.APIVersion != "v1" || created.UID == "" || created.Namespace != "default" {
		t.Fatalf("created pod: %+v %+v", created.TypeMeta, created.ObjectMeta)
	}

	st := status(t, e.do("POST", "/api/v1/namespaces/default/pods", "", podYAML), http.StatusConflict, metav1.StatusReasonAlreadyExists)
	if st.Message != `pods "web" already exists` || st.Details == nil || st.Details.Name != "web" {
		t.Fatalf("already exists: %+v", st)
	}

	// A pod without a namespace goes to the one of the path; another
	// namespace in the body is refused.
	other := strings.Replace(podYAML, "name: web", "name: web\n  namespace: other", 1)
	if r := e.do("POST", "/api/v1/namespaces/other/pods", "", other); r.code != http.StatusCreated {
		t.Fatalf("create in other: %d %s", r.code, r.body)
	}
	status(t, e.do("POST", "/api/v1/namespaces/third/pods", "", other), http.StatusBadRequest, metav1.StatusReasonBadRequest)

	e.waitPod("default", "web", running("app"))
	got := decodeAs[v1.Pod](t, e.do("GET", "/api/v1/namespaces/default/pods/web", "", ""))
	if got.Kind != "Pod" || got.UID != created.UID || got.Status.Phase != v1.PodRunning {
		t.Fatalf("get: %+v phase %s", got.TypeMeta, got.Status.Phase)
	}

	list := decodeAs[v1.PodList](t, e.do("GET", "/api/v1/namespaces/default/pods", "", ""))
	if list.Kind != "PodList" || list.APIVersion != "v1" || len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Fatalf("list default: %+v", list)
	}
	all := decodeAs[v1.PodList](t, e.do("GET", "/api/v1/pods", "", ""))
	if len(all.Items) != 2 || all.Items[0].Namespace != "default" || all.Items[1].Namespace != "other" {
		t.Fatalf("list all: %d items", len(all.Items))
	}
	sel := decodeAs[v1.PodList](t, e.do("GET", "/api/v1/pods?fieldSelector=metadata.namespace%3Dother", "", ""))
	if len(sel.Items) != 1 || sel.Items[0].Namespace != "other" {
		t.Fatalf("field selector: %d items", len(sel.Items))
	}
	empty := decodeAs[v1.PodList](t, e.do("GET", "/api/v1/namespaces/none/pods", "", ""))
	if empty.Items == nil || len(empty.Items) != 0 {
		t.Fatalf("an empty list must have items: [], got %+v", empty.Items)
	}

	st = status(t, e.do("GET", "/api/v1/namespaces/default/pods/nope", "", ""), http.StatusNotFound, metav1.StatusReasonNotFound)
	if st.Message != `pods "nope" not found` || st.Details.Kind != "pods" || st.Details.Name != "nope" {
		t.Fatalf("not found: %+v", st)
	}
	status(t, e.do("DELETE", "/api/v1/namespaces/default/pods/nope", "", ""), http.StatusNotFound, metav1.StatusReasonNotFound)

	// A UID precondition that does not hold: 409 Conflict.
	st = status(t, e.do("DELETE", "/api/v1/namespaces/default/pods/web", "application/json", `{"preconditions":{"uid":"other"}}`), http.StatusConflict, metav1.StatusReasonConflict)
	if !strings.Contains(st.Message, "precondition") {
		t.Fatalf("conflict: %+v", st)
	}

	r = e.do("DELETE", "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=3", "", "")
	if r.code != http.StatusOK {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	if p := decodeAs[v1.Pod](t, r); p.UID != created.UID || p.Kind != "Pod" {
		t.Fatalf("delete answered %+v", p.ObjectMeta)
	}
	e.waitPod("default", "web", gone)
	status(t, e.do("GET", "/api/v1/namespaces/default/pods/web", "", ""), http.StatusNotFound, metav1.StatusReasonNotFound)

	// The other pod, deleted with a DeleteOptions body and grace period 0:
	// a forced delete, gone from the API at once although its container
	// (which ignores SIGTERM) still runs its 2 s.
	e.rt.IgnoreStopSignal("app")
	r = e.do("DELETE", "/api/v1/namespaces/other/pods/web", "application/json", `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0}`)
	if r.code != http.StatusOK {
		t.Fatalf("delete with body: %d %s", r.code, r.body)
	}
	if p := decodeAs[v1.Pod](t, r); p.Namespace != "other" || p.DeletionTimestamp == nil {
		t.Fatalf("forced delete answered %+v", p.ObjectMeta)
	}
	status(t, e.do("GET", "/api/v1/namespaces/other/pods/web", "", ""), http.StatusNotFound, metav1.StatusReasonNotFound)
	if running := e.rt.Running(decodeAs[v1.Pod](t, r).UID); len(running) != 1 {
		t.Fatalf("the force-deleted pod's container should still run its 2 s; running: %q", running)
	}
}

func TestApply(t *testing.T) {
	e := newEnv(t)
	const path = "/api/v1/namespaces/default/pods/web"
	r := e.do("PATCH", path, ApplyPatchContentType, podYAML)
	if r.code != http.StatusCreated || r.header.Get(ApplyResultHeader) != "created" {
		t.Fatalf("first apply: %d %q %s", r.code, r.header.Get(ApplyResultHeader), r.body)
	}
	first := decodeAs[v1.Pod](t, r)
	r = e.do("PATCH", path, ApplyPatchContentType, podYAML)
	if r.code != http.StatusOK || r.header.Get(ApplyResultHeader) != "unchanged" {
		t.Fatalf("same apply: %d %q %s", r.code, r.header.Get(ApplyResultHeader), r.body)
	}
	changed := strings.Replace(podYAML, `"100"`, `"200"`, 1)
	r = e.do("PATCH", path, ApplyPatchContentType, changed)
	if r.code != http.StatusOK || r.header.Get(ApplyResultHeader) != "configured" {
		t.Fatalf("changed apply: %d %q %s", r.code, r.header.Get(ApplyResultHeader), r.body)
	}
	// The old pod goes, the new one comes with a new UID.
	p := e.waitPod("default", "web", func(p *v1.Pod) bool { return p != nil && p.UID != first.UID })
	if p.Spec.Containers[0].Command[1] != "200" {
		t.Fatalf("replacement runs %q", p.Spec.Containers[0].Command)
	}

	st := status(t, e.do("PATCH", path, "application/merge-patch+json", `{}`), http.StatusUnsupportedMediaType, metav1.StatusReasonUnsupportedMediaType)
	if !strings.Contains(st.Message, ApplyPatchContentType) {
		t.Fatalf("415 message: %q", st.Message)
	}
	st = status(t, e.do("PATCH", "/api/v1/namespaces/default/pods/other", ApplyPatchContentType, podYAML), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	if !strings.Contains(st.Message, "does not match the name on the URL") {
		t.Fatalf("name mismatch: %q", st.Message)
	}
	st = status(t, e.do("PATCH", path, ApplyPatchContentType, podYAML+"---\n"+podYAML), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	if !strings.Contains(st.Message, "exactly one Pod") {
		t.Fatalf("two pods: %q", st.Message)
	}
}

func TestInvalidPodIs422WithCauses(t *testing.T) {
	e := newEnv(t)
	bad := `apiVersion: v1
kind: Pod
metadata:
  name: bad
spec:
  containers:
  - name: app
  - name: app
    image: busybox
`
	st := status(t, e.do("POST", "/api/v1/namespaces/default/pods", "", bad), http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
	if st.Details == nil || st.Details.Kind != "Pod" || st.Details.Name != "bad" {
		t.Fatalf("details: %+v", st.Details)
	}
	var causes []string
	for _, c := range st.Details.Causes {
		causes = append(causes, c.Field+": "+string(c.Type)+": "+c.Message)
	}
	want := []string{
		"spec.containers[0].image: FieldValueRequired: Required value",
		`spec.containers[1].name: FieldValueDuplicate: Duplicate value: "app"`,
	}
	if strings.Join(causes, "\n") != strings.Join(want, "\n") {
		t.Fatalf("causes:\n%s\nwant:\n%s", strings.Join(causes, "\n"), strings.Join(want, "\n"))
	}
	if !strings.HasPrefix(st.Message, `Pod "bad" is invalid: [`) {
		t.Fatalf("message %q", st.Message)
	}

	// What the runtime cannot run: one cause per problem.
	e.rt.CheckErr = errors.Join(
		fmt.Errorf("spec.containers[0].command: Required value: %w", runtime.ErrUnsupported),
		fmt.Errorf("spec.volumes[0]: Unsupported value: %w", runtime.ErrUnsupported),
	)
	st = status(t, e.do("PATCH", "/api/v1/namespaces/default/pods/web", ApplyPatchContentType, podYAML), http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
	if st.Details == nil || st.Details.Name != "web" || len(st.Details.Causes) != 2 ||
		!strings.HasPrefix(st.Details.Causes[0].Message, "spec.containers[0].command: Required value") {
		t.Fatalf("runtime causes: %+v", st.Details)
	}
}

func TestBadRequests(t *testing.T) {
	e := newEnv(t)
	if r := e.do("POST", "/api/v1/namespaces/default/pods", "", podYAML); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	tests := map[string]struct {
		method, path, contentType, body string
		want                            string
	}{
		"unknown field": {"POST", "/api/v1/namespaces/default/pods", "application/yaml",
			strings.Replace(podYAML, "image:", "imagee:", 1), "spec.containers[0].imagee: unknown field"},
		"not yaml":                {"POST", "/api/v1/namespaces/default/pods", "", "{{{", "invalid JSON"},
		"not a pod":               {"POST", "/api/v1/namespaces/default/pods", "", "apiVersion: v1\nkind: Service\n", `kind "Service" is not supported`},
		"bad watch":               {"GET", "/api/v1/pods?watch=maybe", "", "", `invalid watch "maybe"`},
		"unsupported field":       {"GET", "/api/v1/pods?fieldSelector=spec.hostname%3Dx", "", "", "field label not supported: spec.hostname"},
		"bad label selector":      {"GET", "/api/v1/pods?labelSelector=a%3D%3D%3D", "", "", "invalid labelSelector"},
		"event field":             {"GET", "/api/v1/events?fieldSelector=metadata.uid%3Dx", "", "", "field label not supported"},
		"negative grace":          {"DELETE", "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=-1", "", "", "greater than or equal to 0"},
		"grace not a number":      {"DELETE", "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=soon", "", "", "want an integer"},
		"bad delete options":      {"DELETE", "/api/v1/namespaces/default/pods/web", "application/json", "[1]", "invalid DeleteOptions"},
		"log of no container":     {"GET", "/api/v1/namespaces/default/pods/web/log?container=nope", "", "", "container nope is not valid for pod web"},
		"previous of first":       {"GET", "/api/v1/namespaces/default/pods/web/log?previous=true", "", "", `previous terminated container "app" in pod "web" not found`},
		"tailLines not a number":  {"GET", "/api/v1/namespaces/default/pods/web/log?tailLines=x", "", "", "want an integer"},
		"limitBytes not a number": {"GET", "/api/v1/namespaces/default/pods/web/log?limitBytes=x", "", "", "want an integer"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			st := status(t, e.do(tc.method, tc.path, tc.contentType, tc.body), http.StatusBadRequest, metav1.StatusReasonBadRequest)
			if !strings.Contains(st.Message, tc.want) {
				t.Fatalf("message %q, want it to contain %q", st.Message, tc.want)
			}
		})
	}
}

func TestMethodNotAllowedAndUnknownPaths(t *testing.T) {
	e := newEnv(t)
	tests := map[string]struct{ method, path, allow string }{
		"put a pod":          {"PUT", "/api/v1/namespaces/default/pods/web", "DELETE, GET, PATCH"},
		"post all pods":      {"POST", "/api/v1/pods", "GET"},
		"delete a log":       {"DELETE", "/api/v1/namespaces/default/pods/web/log", "GET"},
		"delete a namespace": {"DELETE", "/api/v1/namespaces/default/pods", "GET, POST"},
		"post events":        {"POST", "/api/v1/events", "GET"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, "", "")
			status(t, r, http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed)
			if got := r.header.Get("Allow"); got != tc.allow {
				t.Fatalf("Allow = %q, want %q", got, tc.allow)
			}
		})
	}
	st := status(t, e.do("GET", "/api/v1/namespaces/default/deployments", "", ""), http.StatusNotFound, metav1.StatusReasonNotFound)
	if st.Message != "the server could not find the requested resource" {
		t.Fatalf("unknown path: %q", st.Message)
	}
	if r := e.do("GET", "/healthz", "", ""); r.code != http.StatusOK || string(r.body) != "ok\n" {
		t.Fatalf("healthz: %d %q", r.code, r.body)
	}
}

func TestErrorsAreLoggedOnce(t *testing.T) {
	e := newEnv(t)
	status(t, e.do("GET", "/api/v1/namespaces/default/pods/nope", "", ""), http.StatusNotFound, metav1.StatusReasonNotFound)
	lines := strings.Split(strings.TrimSpace(e.log.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "pod=default/nope") || !strings.Contains(lines[0], "code=404") {
		t.Fatalf("log:\n%s", e.log.String())
	}
}

// watchReader reads a stream of watch events.
type watchReader struct {
	t    *testing.T
	body io.ReadCloser
	dec  *json.Decoder
}

func (e *env) watch(path string) *watchReader {
	e.t.Helper()
	req, err := http.NewRequest("GET", "http://podward"+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	resp, err := e.hc.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		e.t.Fatalf("watch %s: %d %s", path, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	w := &watchReader{t: e.t, body: resp.Body, dec: json.NewDecoder(resp.Body)}
	e.t.Cleanup(func() { resp.Body.Close() })
	return w
}

// next reads one event; the object is decoded into obj.
func (w *watchReader) next(obj any) string {
	w.t.Helper()
	timer := time.AfterFunc(testTimeout, func() { w.body.Close() })
	defer timer.Stop()
	var ev metav1.WatchEvent
	if err := w.dec.Decode(&ev); err != nil {
		w.t.Fatalf("next watch event: %v", err)
	}
	if err := json.Unmarshal(ev.Object.Raw, obj); err != nil {
		w.t.Fatal(err)
	}
	return ev.Type
}

func TestWatchPods(t *testing.T) {
	e := newEnv(t)
	if r := e.do("POST", "/api/v1/namespaces/default/pods", "", strings.Replace(podYAML, "name: web", "name: before", 1)); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	all := e.watch("/api/v1/namespaces/default/pods?watch=true")
	one := e.watch("/api/v1/namespaces/default/pods?watch=1&fieldSelector=metadata.name%3Dweb")

	var p v1.Pod
	if typ := all.next(&p); typ != "ADDED" || p.Name != "before" || p.Kind != "Pod" {
		t.Fatalf("first event: %s %s %s", typ, p.Kind, p.Name)
	}
	r := e.do("POST", "/api/v1/namespaces/default/pods", "", podYAML)
	if r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	uid := decodeAs[v1.Pod](t, r).UID
	if typ := one.next(&p); typ != "ADDED" || p.Name != "web" {
		t.Fatalf("watch of web: %s %s", typ, p.Name)
	}
	for {
		// The namespace's watch also has the changes of "before".
		typ := all.next(&p)
		if p.Name == "before" {
			continue
		}
		if typ != "ADDED" || p.Name != "web" {
			t.Fatalf("watch of the namespace: %s %s", typ, p.Name)
		}
		break
	}

	// The pod's changes until it is gone: MODIFIED events (changes that
	// come together may make one), then DELETED.
	if r := e.do("DELETE", "/api/v1/namespaces/default/pods/web", "", ""); r.code != http.StatusOK {
		t.Fatalf("delete: %d %s", r.code, r.body)
	}
	for {
		var q v1.Pod
		typ := one.next(&q)
		if q.UID != uid {
			t.Fatalf("%s event of another pod %s", typ, q.Name)
		}
		if typ == "DELETED" {
			break
		}
		if typ != "MODIFIED" {
			t.Fatalf("event %s after ADDED", typ)
		}
	}
}

func TestEvents(t *testing.T) {
	e := newEnv(t)
	w := e.watch("/api/v1/namespaces/default/events?watch=true&fieldSelector=involvedObject.name%3Dweb")
	if r := e.do("POST", "/api/v1/namespaces/default/pods", "", podYAML); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	if r := e.do("POST", "/api/v1/namespaces/other/pods", "", podYAML); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	var ev v1.Event
	if typ := w.next(&ev); typ != "ADDED" || ev.Kind != "Event" || ev.Reason != "Scheduled" || ev.InvolvedObject.Name != "web" || ev.Namespace != "default" {
		t.Fatalf("first watched event: %s %+v", typ, ev)
	}
	e.waitPod("default", "web", running("app"))
	// The other namespace's pod too: its Started event is selected below.
	e.waitPod("other", "web", running("app"))

	list := decodeAs[v1.EventList](t, e.do("GET", "/api/v1/namespaces/default/events", "", ""))
	if list.Kind != "EventList" || list.APIVersion != "v1" || len(list.Items) < 2 {
		t.Fatalf("list: %+v", list.TypeMeta)
	}
	for _, ev := range list.Items {
		if ev.Namespace != "default" || ev.InvolvedObject.Kind != "Pod" || ev.Source.Component != "podward" {
			t.Fatalf("event %+v", ev)
		}
	}
	all := decodeAs[v1.EventList](t, e.do("GET", "/api/v1/events", "", ""))
	if len(all.Items) <= len(list.Items) {
		t.Fatalf("all namespaces: %d events, default alone %d", len(all.Items), len(list.Items))
	}
	started := decodeAs[v1.EventList](t, e.do("GET", "/api/v1/events?fieldSelector=reason%3DStarted,involvedObject.namespace%3Dother", "", ""))
	if len(started.Items) != 1 || started.Items[0].Message != "Started container app" {
		t.Fatalf("selected events: %+v", started.Items)
	}

	// A repeat of an event of a series is that event, MODIFIED.
	pod, err := e.agent.GetPod("default", "web")
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"1 byte", "2 bytes"} {
		e.agent.Recorder().Record(events.Event{Type: events.Warning, Reason: string(events.LogDropped), Namespace: "default",
			Pod: "web", PodUID: pod.UID, FieldPath: "spec.containers{app}", Time: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Message: msg})
	}
	var seen []string
	for len(seen) < 2 {
		var ev v1.Event
		typ := w.next(&ev)
		if ev.Reason == string(events.LogDropped) {
			seen = append(seen, fmt.Sprintf("%s %d %s", typ, ev.Count, ev.Message))
		}
	}
	if want := []string{"ADDED 1 1 byte", "MODIFIED 2 2 bytes"}; !slices.Equal(seen, want) {
		t.Errorf("watched %q, want %q", seen, want)
	}
}

// writeLog appends lines to a container instance's CRI log.
func (e *env) writeLog(uid types.UID, container string, attempt int, lines ...string) {
	e.t.Helper()
	path := filepath.Join(e.logDir, string(uid), container, fmt.Sprintf("%d.log", attempt))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		e.t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		e.t.Fatal(err)
	}
	defer f.Close()
	var b []byte
	for i, l := range lines {
		b = crilog.AppendRecord(b, crilog.Record{Time: time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC), Stream: crilog.Stdout, Content: []byte(l)})
	}
	if _, err := f.Write(b); err != nil {
		e.t.Fatal(err)
	}
}

func TestLogs(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/namespaces/default/pods", "", podYAML)
	uid := decodeAs[v1.Pod](t, r).UID
	e.waitPod("default", "web", running("app"))
	status(t, e.do("GET", "/api/v1/namespaces/default/pods/web/log", "", ""), http.StatusNotFound, metav1.StatusReasonNotFound)
	e.writeLog(uid, "app", 0, "one", "two", "three")

	tests := map[string]struct{ query, want string }{
		"all":        {"", "one\ntwo\nthree\n"},
		"container":  {"?container=app", "one\ntwo\nthree\n"},
		"tail":       {"?tailLines=2", "two\nthree\n"},
		"timestamps": {"?timestamps=true&tailLines=1", "2026-01-01T00:00:02Z three\n"},
		// The limit cuts a line, as the API server's and the kubelet's.
		"limitBytes":            {"?limitBytes=6", "one\ntw"},
		"limitBytes at a line":  {"?limitBytes=4", "one\n"},
		"limitBytes and tail":   {"?tailLines=1&limitBytes=3", "thr"},
		"limitBytes beyond":     {"?limitBytes=1000", "one\ntwo\nthree\n"},
		"limitBytes, timestamp": {"?timestamps=true&limitBytes=10", "2026-01-01"},
		// Following a running container ends at the limit.
		"limitBytes ends follow": {"?follow=true&limitBytes=5", "one\nt"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := e.do("GET", "/api/v1/namespaces/default/pods/web/log"+tc.query, "", "")
			if r.code != http.StatusOK || r.header.Get("Content-Type") != "text/plain; charset=utf-8" || string(r.body) != tc.want {
				t.Fatalf("%d %q %q, want %q", r.code, r.header.Get("Content-Type"), r.body, tc.want)
			}
		})
	}

	if r := e.do("POST", "/api/v1/namespaces/default/pods", "", twoContainersYAML); r.code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	st := status(t, e.do("GET", "/api/v1/namespaces/default/pods/duo/log", "", ""), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	if st.Message != "a container name must be specified for pod duo, choose one of: [a b]" {
		t.Fatalf("message %q", st.Message)
	}
	for _, limit := range []string{"0", "-1"} {
		st := status(t, e.do("GET", "/api/v1/namespaces/default/pods/web/log?limitBytes="+limit, "", ""), http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
		if want := `PodLogOptions "web" is invalid: limitBytes: Invalid value: ` + limit + `: must be greater than 0`; st.Message != want {
			t.Errorf("limitBytes=%s: message %q, want %q", limit, st.Message, want)
		}
	}
}

func TestLogsFollowUntilTheInstanceEnds(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/namespaces/default/pods", "", podYAML)
	uid := decodeAs[v1.Pod](t, r).UID
	e.waitPod("default", "web", running("app"))
	e.writeLog(uid, "app", 0, "one", "two")

	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://podward/api/v1/namespaces/default/pods/web/log?follow=true&tailLines=1", nil)
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line := func() string {
		t.Helper()
		l, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("read a followed line: %v", err)
		}
		return l
	}
	if l := line(); l != "two\n" {
		t.Fatalf("tail line %q", l)
	}
	e.writeLog(uid, "app", 0, "three")
	if l := line(); l != "three\n" {
		t.Fatalf("followed line %q", l)
	}
	// The last words, then the end of the instance: the stream delivers
	// them and ends.
	e.writeLog(uid, "app", 0, "four")
	e.rt.Exit(uid, "app", 0)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "four\n" {
		t.Fatalf("after the exit: %q %v", rest, err)
	}
}

// TestLogsFollowAcrossARotation is `podward logs -f` while the log is
// rotated (renamed, and a new file made at its path, as the kubelet's and
// podward's log rotation do): every line comes once, from the old file and
// then the new one, and the stream still ends with the instance.
func TestLogsFollowAcrossARotation(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/namespaces/default/pods", "", podYAML)
	uid := decodeAs[v1.Pod](t, r).UID
	e.waitPod("default", "web", running("app"))
	e.writeLog(uid, "app", 0, "one")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://podward/api/v1/namespaces/default/pods/web/log?follow=true", nil)
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if l, err := br.ReadString('\n'); l != "one\n" || err != nil {
		t.Fatalf("first line %q %v", l, err)
	}
	path := filepath.Join(e.logDir, string(uid), "app", "0.log")
	if err := os.Rename(path, path+".20260101-000000"); err != nil {
		t.Fatal(err)
	}
	e.writeLog(uid, "app", 0, "two", "three")
	if l, err := br.ReadString('\n'); l != "two\n" || err != nil {
		t.Fatalf("the first line of the new file: %q %v", l, err)
	}
	e.writeLog(uid, "app", 0, "four")
	e.rt.Exit(uid, "app", 0)
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "three\nfour\n" {
		t.Fatalf("after the exit: %q %v, want three and four once", rest, err)
	}
}

func TestLogsFollowEndsWithThePod(t *testing.T) {
	e := newEnv(t)
	r := e.do("POST", "/api/v1/namespaces/default/pods", "", podYAML)
	uid := decodeAs[v1.Pod](t, r).UID
	e.waitPod("default", "web", running("app"))
	e.writeLog(uid, "app", 0, "one")
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://podward/api/v1/namespaces/default/pods/web/log?follow=1", nil)
	resp, err := e.hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if l, err := br.ReadString('\n'); l != "one\n" || err != nil {
		t.Fatalf("first line %q %v", l, err)
	}
	if r := e.do("DELETE", "/api/v1/namespaces/default/pods/web?gracePeriodSeconds=0", "", ""); r.code != http.StatusOK {
		t.Fatalf("delete: %d", r.code)
	}
	if rest, err := io.ReadAll(br); err != nil || len(rest) != 0 {
		t.Fatalf("after the delete: %q %v", rest, err)
	}
}

// unsavedState is a backend whose state cannot be saved (a full disk).
type unsavedState struct {
	*backend
	err error
}

func (u *unsavedState) StateError() error { return u.err }

// TestHealthzReportsUnsavedState: /healthz fails, naming the check and its
// cause, while the agent cannot save its state, and lists its checks with
// verbose (issue 12: the agent reports a full state disk).
func TestHealthzReportsUnsavedState(t *testing.T) {
	e := newEnv(t)
	b := &backend{Agent: e.agent, logDir: e.logDir}
	get := func(srv *Server, path string) (int, string) {
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	healthy := New(b, slog.New(slog.DiscardHandler))
	if code, body := get(healthy, "/healthz?verbose"); code != http.StatusOK || body != "[+]ping ok\n[+]state ok\nhealthz check passed\n" {
		t.Fatalf("verbose healthz of a healthy agent: %d %q", code, body)
	}
	full := New(&unsavedState{backend: b, err: errors.New("state not saved: the state of 1 pod(s) cannot be saved: no space left on device")}, slog.New(slog.DiscardHandler))
	code, body := get(full, "/healthz")
	want := "[+]ping ok\n[-]state failed: state not saved: the state of 1 pod(s) cannot be saved: no space left on device\nhealthz check failed\n"
	if code != http.StatusInternalServerError || body != want {
		t.Fatalf("healthz of an agent that cannot save its state: %d %q, want 500 %q", code, body, want)
	}
}
