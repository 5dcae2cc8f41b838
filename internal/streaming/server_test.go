package streaming

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	cristreaming "k8s.io/cri-streaming/pkg/streaming"
	remotecommandserver "k8s.io/cri-streaming/pkg/streaming/remotecommand"
	kexec "k8s.io/utils/exec"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

var errNoPod = errors.New("no such pod")

// pods is a Pods of one pod.
type pods struct{ pod *v1.Pod }

func (p pods) GetPod(ns, name string) (*v1.Pod, error) {
	if p.pod == nil || ns != p.pod.Namespace || name != p.pod.Name {
		return nil, errNoPod
	}
	return p.pod.DeepCopy(), nil
}

// testPod has app running, done terminated and init completed.
func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init"}},
			Containers:     []v1.Container{{Name: "app"}, {Name: "done"}},
		},
		Status: v1.PodStatus{
			InitContainerStatuses: []v1.ContainerStatus{{Name: "init", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}}},
			ContainerStatuses: []v1.ContainerStatus{
				{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
				{Name: "done", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{}}},
			},
		},
	}
}

// TestResolve: the container of a stream must be named when the pod has
// several, and must run: otherwise the kubelet's `container not found`
// (pkg/kubelet/kubelet_pods.go, GetExec finds running containers only).
func TestResolve(t *testing.T) {
	s := New(pods{testPod()}, nil, nil)
	for _, tc := range []struct {
		name, container string
		code            int
		msg             string
	}{
		{name: "running", container: "app"},
		{name: "unnamed", code: http.StatusBadRequest, msg: "a container name must be specified for pod web, choose one of: [app done]"},
		{name: "terminated", container: "done", code: http.StatusInternalServerError, msg: `container not found ("done")`},
		{name: "init done", container: "init", code: http.StatusInternalServerError, msg: `container not found ("init")`},
		{name: "unknown", container: "nope", code: http.StatusInternalServerError, msg: `container not found ("nope")`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tgt, err := s.Resolve("ns", "web", tc.container)
			if tc.code == 0 {
				if err != nil || tgt.Ref.Name != tc.container || tgt.Pod.UID != "uid-1" {
					t.Fatalf("Resolve = %+v, %v", tgt, err)
				}
				return
			}
			var se *Error
			if !errors.As(err, &se) || se.Code != tc.code || se.Message != tc.msg {
				t.Errorf("Resolve = %v, want %d %q", err, tc.code, tc.msg)
			}
		})
	}
	if _, err := s.Resolve("ns", "other", "app"); !errors.Is(err, errNoPod) {
		t.Errorf("Resolve of an unknown pod = %v, want GetPod's error", err)
	}
}

// execRuntime is a StreamExecer: it echoes stdin to stdout in upper case,
// writes "err" to stderr, reports the first terminal size, and exits with
// len(cmd).
type execRuntime struct {
	runtime.Runtime
}

func (execRuntime) ExecStream(_ context.Context, _ *model.Pod, ref model.ContainerRef, cmd []string, s runtime.ExecStreams) (int, error) {
	if s.TTY {
		size := <-s.Resize
		fmt.Fprintf(s.Stdout, "%s tty %dx%d", ref.Name, size.Width, size.Height)
		return len(cmd), nil
	}
	if s.Stdin != nil {
		b, _ := io.ReadAll(s.Stdin)
		_, _ = s.Stdout.Write(bytes.ToUpper(b))
	}
	fmt.Fprint(s.Stderr, "err")
	return len(cmd), nil
}

// sizeOnce is a TerminalSizeQueue of one size.
type sizeOnce struct{ sent bool }

func (q *sizeOnce) Next() *remotecommand.TerminalSize {
	if q.sent {
		return nil
	}
	q.sent = true
	return &remotecommand.TerminalSize{Width: 80, Height: 24}
}

// serveExec serves s's execs at /exec/ns/web/{container}, kubelet style.
func serveExec(t *testing.T, s *Server) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/exec/ns/web/{container}", func(w http.ResponseWriter, r *http.Request) {
		tgt, err := s.Resolve("ns", "web", r.PathValue("container"))
		if err != nil {
			WriteError(w, err)
			return
		}
		o, err := KubeletExecOptions(r)
		if err != nil {
			WriteError(w, err)
			return
		}
		s.ServeExec(w, r, tgt, r.URL.Query()["command"], o)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// execThrough runs an exec against srv with client-go's SPDY executor,
// as the API server would.
func execThrough(t *testing.T, srv *httptest.Server, container string, cmd []string, tty bool, opts remotecommand.StreamOptions) error {
	t.Helper()
	q := url.Values{"command": cmd, "output": {"1"}}
	if opts.Stdin != nil {
		q.Set("input", "1")
	}
	if tty {
		q.Set("tty", "1")
	} else {
		q.Set("error", "1")
	}
	u, _ := url.Parse(srv.URL + "/exec/ns/web/" + container + "?" + q.Encode())
	ex, err := remotecommand.NewSPDYExecutor(&restclient.Config{Host: srv.URL}, http.MethodPost, u)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return ex.StreamWithContext(ctx, opts)
}

// TestServeExecStreams: an exec on a runtime that serves the streams
// itself gets the client's stdin, its stdout and stderr apart, the
// terminal's size with a tty, and its exit code back as kubectl's exit
// error.
func TestServeExecStreams(t *testing.T) {
	srv := serveExec(t, New(pods{testPod()}, execRuntime{}, nil))
	var out, errOut bytes.Buffer
	err := execThrough(t, srv, "app", []string{"a", "b", "c"}, false, remotecommand.StreamOptions{Stdin: strings.NewReader("hello"), Stdout: &out, Stderr: &errOut})
	var exit utilexec.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 3 {
		t.Errorf("exec = %v, want exit code 3", err)
	}
	if out.String() != "HELLO" || errOut.String() != "err" {
		t.Errorf("stdout %q, stderr %q", out.String(), errOut.String())
	}

	out.Reset()
	err = execThrough(t, srv, "app", []string{"sh"}, true, remotecommand.StreamOptions{Stdin: strings.NewReader(""), Stdout: &out, Tty: true, TerminalSizeQueue: &sizeOnce{}})
	if !errors.As(err, &exit) || exit.ExitStatus() != 1 || out.String() != "app tty 80x24" {
		t.Errorf("exec with a tty = %v, output %q", err, out.String())
	}

	err = execThrough(t, srv, "done", []string{"true"}, false, remotecommand.StreamOptions{Stdout: &out})
	if err == nil || !strings.Contains(err.Error(), `container not found ("done")`) {
		t.Errorf("exec in a terminated container = %v", err)
	}
}

// criRuntime is a runtime with a streaming server of its own, as
// containerd's: cri-streaming's server, whose execs print their command.
type criRuntime struct {
	runtime.Runtime
	server cristreaming.Server
}

func (r criRuntime) ExecURL(_ context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string, stdin, stdout, stderr, tty bool) (*url.URL, error) {
	resp, err := r.server.GetExec(&runtimeapi.ExecRequest{ContainerId: string(pod.UID) + "/" + ref.Name, Cmd: cmd, Stdin: stdin, Stdout: stdout, Stderr: stderr, Tty: tty})
	if err != nil {
		return nil, err
	}
	return url.Parse(resp.Url)
}

func (r criRuntime) PortForwardURL(context.Context, *model.Pod, []int32) (*url.URL, error) {
	return nil, errors.New("not in this test")
}

// criExec is the CRI runtime's side of criRuntime's server.
type criExec struct{}

func (criExec) Exec(_ context.Context, id string, cmd []string, _ io.Reader, out, _ io.WriteCloser, _ bool, _ <-chan remotecommandserver.TerminalSize) error {
	fmt.Fprintf(out, "%s ran %s", id, strings.Join(cmd, " "))
	return kexec.CodeExitError{Err: errors.New("exit 9"), Code: 9}
}

func (criExec) Attach(context.Context, string, io.Reader, io.WriteCloser, io.WriteCloser, bool, <-chan remotecommandserver.TerminalSize) error {
	return errors.New("no attach")
}

func (criExec) PortForward(context.Context, string, int32, io.ReadWriteCloser) error {
	return errors.New("no port-forward")
}

// TestServeExecProxied: an exec on a runtime with a streaming server of
// its own is proxied there, as the kubelet proxies to the CRI runtime's
// URL (pkg/kubelet/server/server.go, getExec): the client talks to the
// runtime's server through the node.
func TestServeExecProxied(t *testing.T) {
	cfg := cristreaming.DefaultConfig
	cfg.Addr = "127.0.0.1:0"
	cs, err := cristreaming.NewServer(cfg, criExec{})
	if err != nil {
		t.Fatal(err)
	}
	backend := httptest.NewServer(cs)
	defer backend.Close()
	u, _ := url.Parse(backend.URL)
	cfg.BaseURL = u
	if cs, err = cristreaming.NewServer(cfg, criExec{}); err != nil {
		t.Fatal(err)
	}
	backend.Config.Handler = cs

	srv := serveExec(t, New(pods{testPod()}, criRuntime{server: cs}, nil))
	var out bytes.Buffer
	err = execThrough(t, srv, "app", []string{"echo", "hi"}, false, remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard})
	var exit utilexec.ExitError
	if !errors.As(err, &exit) || exit.ExitStatus() != 9 || out.String() != "uid-1/app ran echo hi" {
		t.Errorf("proxied exec = %v, output %q; want exit code 9 and the runtime's output", err, out.String())
	}
}
