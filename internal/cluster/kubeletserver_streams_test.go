package cluster

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/streaming"
)

// fakeStreams records the streams asked for; its pod is ns/web, UID uid-1.
type fakeStreams struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeStreams) record(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

// since is the call made after the first n, "" for none.
func (f *fakeStreams) since(n int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.calls) <= n {
		return ""
	}
	return f.calls[n]
}

func (f *fakeStreams) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.calls)
}

func (f *fakeStreams) Resolve(ns, name, container string) (streaming.Target, error) {
	if ns != "ns" || name != "web" {
		return streaming.Target{}, fmt.Errorf("pod %s/%s: %w", ns, name, agent.ErrNotFound)
	}
	pod := &model.Pod{Pod: testV1Pod()}
	return streaming.Target{Pod: pod, Ref: model.ContainerRef{Name: container}}, nil
}

func (f *fakeStreams) ServeExec(w http.ResponseWriter, _ *http.Request, t streaming.Target, cmd []string, o streaming.ExecOptions) {
	f.record("exec %s %q %+v", t.Ref.Name, cmd, o)
	w.WriteHeader(http.StatusTeapot)
}

func (f *fakeStreams) ServeAttach(w http.ResponseWriter, _ *http.Request, t streaming.Target, _ streaming.ExecOptions) {
	f.record("attach %s", t.Ref.Name)
	w.WriteHeader(http.StatusTeapot)
}

// ServePortForward refuses a UID other than its pod's, as
// streaming.Server does.
func (f *fakeStreams) ServePortForward(w http.ResponseWriter, _ *http.Request, ns, name, uid string) error {
	f.record("portForward %s/%s %q", ns, name, uid)
	if uid != "" && uid != "uid-1" {
		return &streaming.Error{Code: http.StatusNotFound, Message: "pod not found"}
	}
	w.WriteHeader(http.StatusTeapot)
	return nil
}

func (f *fakeStreams) Run(_ context.Context, t streaming.Target, cmd []string) ([]byte, error) {
	f.record("run %s %q", t.Ref.Name, cmd)
	return []byte("output"), nil
}

// TestKubeletServerStreams: the kubelet's streaming paths reach the
// streaming server with the kubelet's parameters (pkg/kubelet/server/
// server.go): exec's command and input/output/error/tty, run's cmd split
// on spaces, the pod's UID checked when the path has it, and the
// kubelet's 404s for an unknown pod.
func TestKubeletServerStreams(t *testing.T) {
	st := &fakeStreams{}
	f := startKubeletServer(t, func(c *KubeletServerConfig) { c.Streams = st })
	c := f.apiServer(t)
	do := func(method, path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, f.url+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		method, path string
		code         int
		body, call   string
	}{
		{http.MethodPost, "/exec/ns/web/app?command=ls&command=-l&input=1&output=1&tty=1", http.StatusTeapot, "", `exec app ["ls" "-l"] {Stdin:true Stdout:true Stderr:false TTY:true}`},
		{http.MethodGet, "/exec/ns/web/uid-1/app?command=true&output=1&error=1", http.StatusTeapot, "", `exec app ["true"] {Stdin:false Stdout:true Stderr:true TTY:false}`},
		{http.MethodPost, "/exec/ns/web/app?command=true", http.StatusBadRequest, "you must specify at least 1 of stdin, stdout, stderr", ""},
		{http.MethodPost, "/exec/ns/web/uid-2/app?command=true&output=1", http.StatusNotFound, "pod not found", ""},
		{http.MethodPost, "/exec/ns/gone/app?command=true&output=1", http.StatusNotFound, "pod does not exist", ""},
		{http.MethodPost, "/attach/ns/web/app?output=1", http.StatusTeapot, "", "attach app"},
		{http.MethodPost, "/portForward/ns/web", http.StatusTeapot, "", `portForward ns/web ""`},
		{http.MethodGet, "/portForward/ns/web/uid-1", http.StatusTeapot, "", `portForward ns/web "uid-1"`},
		{http.MethodGet, "/portForward/ns/web/uid-2", http.StatusNotFound, "pod not found", `portForward ns/web "uid-2"`},
		{http.MethodPost, "/run/ns/web/app?cmd=echo%20hi", http.StatusOK, "output", `run app ["echo" "hi"]`},
	} {
		before := st.count()
		code, body := do(tc.method, tc.path)
		if code != tc.code || (tc.body != "" && strings.TrimSpace(body) != tc.body) {
			t.Errorf("%s %s: %d %q, want %d %q", tc.method, tc.path, code, body, tc.code, tc.body)
		}
		if call := st.since(before); call != tc.call {
			t.Errorf("%s %s: the streaming server got %q, want %q", tc.method, tc.path, call, tc.call)
		}
	}
}

func testV1Pod() *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"}}
}

// onePod is a streaming.Pods of one pod.
type onePod struct{ pod *v1.Pod }

func (p onePod) GetPod(ns, name string) (*v1.Pod, error) {
	if ns != p.pod.Namespace || name != p.pod.Name {
		return nil, fmt.Errorf("pod %s/%s: %w", ns, name, agent.ErrNotFound)
	}
	return p.pod.DeepCopy(), nil
}

// forwardRuntime is a PortForwarder that records the UIDs of the pods it
// forwards to.
type forwardRuntime struct {
	runtime.Runtime
	forwarded chan types.UID
}

func (f forwardRuntime) PortForward(_ context.Context, pod *model.Pod, _ int32, stream io.ReadWriteCloser) error {
	f.forwarded <- pod.UID
	return stream.Close()
}

// TestKubeletServerPortForwardChecksUID: /portForward/{ns}/{pod}/{uid} to
// a pod ns/name that now has another UID is the kubelet's 404 "pod not
// found", also for a pod of several containers (which has no default
// container to resolve), and nothing is forwarded; the pod's own UID is
// served.
func TestKubeletServerPortForwardChecksUID(t *testing.T) {
	pod := testV1Pod()
	pod.Spec.Containers = []v1.Container{{Name: "a"}, {Name: "b"}}
	rt := forwardRuntime{forwarded: make(chan types.UID, 10)}
	f := startKubeletServer(t, func(c *KubeletServerConfig) {
		c.Streams = streaming.New(onePod{pod}, rt, slog.New(slog.DiscardHandler))
	})
	c := f.apiServer(t)
	if code, body := kubeletGet(t, c, f.url+"/portForward/ns/web/uid-2"); code != http.StatusNotFound || strings.TrimSpace(body) != "pod not found" {
		t.Errorf("port-forward with another UID: %d %q, want 404 \"pod not found\"", code, body)
	}
	if code, body := kubeletGet(t, c, f.url+"/portForward/ns/web/uid-1"); code == http.StatusNotFound {
		t.Errorf("port-forward with the pod's UID: %d %q, want it served", code, body)
	}
	select {
	case uid := <-rt.forwarded:
		t.Errorf("forwarded to pod %s", uid)
	default:
	}
}
