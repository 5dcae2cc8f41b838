package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	spdystream "k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/streaming"
)

// auditPods is a streaming.Pods of one pod, default/web, whose container
// app runs.
type auditPods struct{}

func (auditPods) GetPod(ns, name string) (*v1.Pod, error) {
	if ns != "default" || name != "web" {
		return nil, errors.New("no such pod")
	}
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-1"},
		Spec:       v1.PodSpec{Containers: []v1.Container{{Name: "app"}}},
		Status: v1.PodStatus{ContainerStatuses: []v1.ContainerStatus{
			{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}},
		}},
	}, nil
}

// helloForwarder is a runtime that can only port-forward: it writes
// "hello" on every port's stream.
type helloForwarder struct{ runtime.Runtime }

func (helloForwarder) PortForward(_ context.Context, _ *model.Pod, _ int32, stream io.ReadWriteCloser) error {
	_, err := io.WriteString(stream, "hello")
	stream.Close()
	return err
}

// serveAudited serves a Server with the streams of auditPods on a unix
// socket with Serve, its log as JSON into the returned buffer.
func serveAudited(t *testing.T) (socket string, log *syncBuffer) {
	t.Helper()
	log = &syncBuffer{}
	socket = filepath.Join(shortDir(t), "api.sock")
	srv := New(nil, slog.New(slog.NewJSONHandler(log, nil))).
		WithStreams(streaming.New(auditPods{}, helloForwarder{}, slog.New(slog.DiscardHandler)))
	ln, err := Listen(socket)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return socket, log
}

// auditLines are the "audit" lines of a JSON log.
func auditLines(t *testing.T, log string) []map[string]any {
	t.Helper()
	var lines []map[string]any
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["msg"] == "audit" {
			lines = append(lines, m)
		}
	}
	return lines
}

// forwardPort forwards to port 8080 of default/web through socket, over
// SPDY as kubectl does, and returns what the pod's side sent.
func forwardPort(t *testing.T, socket string) string {
	t.Helper()
	tr := &http.Transport{DialContext: unixClient(socket).Transport.(*http.Transport).DialContext}
	up, err := spdystream.NewRoundTripperWithConfig(spdystream.RoundTripperConfig{UpgradeTransport: tr})
	if err != nil {
		t.Fatal(err)
	}
	u := &url.URL{Scheme: "http", Host: "podward", Path: "/api/v1/namespaces/default/pods/web/portforward"}
	conn, _, err := spdy.NewDialer(up, &http.Client{Transport: up}, http.MethodPost, u).Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		t.Fatalf("port-forward: %v", err)
	}
	defer conn.Close()
	h := http.Header{}
	h.Set(v1.StreamType, v1.StreamTypeError)
	h.Set(v1.PortHeader, "8080")
	h.Set(v1.PortForwardRequestIDHeader, "0")
	errStream, err := conn.CreateStream(h)
	if err != nil {
		t.Fatal(err)
	}
	errStream.Close()
	h.Set(v1.StreamType, v1.StreamTypeData)
	data, err := conn.CreateStream(h)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(data)
	data.Close()
	// The server closes the error stream once the forward is done: then
	// every stream is closed on both sides, and the connection's close
	// leaves nothing waiting.
	if msg, _ := io.ReadAll(errStream); len(msg) > 0 {
		t.Errorf("port-forward error: %s", msg)
	}
	return string(got)
}

// TestStreamAuditLines: an exec, an attach and a port-forward served on
// the socket each write one "audit" line at Info naming the verb, the pod,
// the container, the command (each argument quoted, so that spaces and
// control characters are escaped) or the port, and the client's
// credentials as the kernel gave them (this very process).
func TestStreamAuditLines(t *testing.T) {
	socket, log := serveAudited(t)
	c := unixClient(socket)
	q := url.Values{"container": {"app"}, "command": {"sh", "-c", "echo \"a b\"\n\x1b[2J"}}
	for _, path := range []string{"exec?" + q.Encode(), "attach?container=app&stdout=1"} {
		resp, err := c.Post("http://podward/api/v1/namespaces/default/pods/web/"+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	if got := forwardPort(t, socket); got != "hello" {
		t.Errorf("through the port-forward: %q", got)
	}

	lines := auditLines(t, log.String())
	want := []map[string]any{
		{"verb": "exec", "container": "app", "command": `"sh" "-c" "echo \"a b\"\n\x1b[2J"`},
		{"verb": "attach", "container": "app"},
		{"verb": "portforward", "port": float64(8080)},
	}
	if len(lines) != len(want) {
		t.Fatalf("audit lines %v, want %d", lines, len(want))
	}
	for i, w := range want {
		w["level"], w["pod"] = "INFO", "default/web"
		w["peerPID"], w["peerUID"], w["peerGID"] = float64(os.Getpid()), float64(os.Getuid()), float64(os.Getgid())
		for k, v := range w {
			if lines[i][k] != v {
				t.Errorf("audit line %d: %s = %#v, want %#v (line %v)", i, k, lines[i][k], v, lines[i])
			}
		}
	}
}
