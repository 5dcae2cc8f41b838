package streaming

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
)

// heldRuntime's execs say they started, then wait for their stdin to end.
type heldRuntime struct {
	runtime.Runtime
	started chan struct{}
}

func (h heldRuntime) ExecStream(_ context.Context, _ *model.Pod, _ model.ContainerRef, _ []string, s runtime.ExecStreams) (int, error) {
	h.started <- struct{}{}
	_, _ = io.Copy(io.Discard, s.Stdin)
	return 0, nil
}

// postExec sends a plain (not upgraded) exec request to srv and returns
// its response: a stream refused before the upgrade is answered as it is.
func postExec(t *testing.T, srv *httptest.Server) *http.Response {
	t.Helper()
	resp, err := http.Post(srv.URL+"/exec/ns/web/app?command=true&output=1", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// Streams in progress hold the server's slots: with every slot taken, a
// new exec is refused with 429 Too Many Requests; once a stream ends, its
// slot serves another.
func TestMaxStreams(t *testing.T) {
	rt := heldRuntime{started: make(chan struct{})}
	srv := serveExec(t, New(pods{testPod()}, rt, nil).WithMaxStreams(2))
	var stdins []*io.PipeWriter
	done := make(chan error, 2)
	for range 2 {
		stdin, w := io.Pipe()
		stdins = append(stdins, w)
		go func() {
			done <- execThrough(t, srv, "app", []string{"cat"}, false, remotecommand.StreamOptions{Stdin: stdin, Stdout: io.Discard, Stderr: io.Discard})
		}()
		select {
		case <-rt.started:
		case <-time.After(streamTimeout):
			t.Fatal("the exec did not start")
		}
	}
	defer func() {
		for _, w := range stdins {
			_ = w.Close()
		}
	}()

	resp := postExec(t, srv)
	body, _ := io.ReadAll(resp.Body)
	const want = "too many streams: this node serves at most 2 exec, attach and port-forward streams at once; exec refused, try again later"
	if resp.StatusCode != http.StatusTooManyRequests || string(body) != want || resp.Header.Get("Retry-After") != "1" {
		t.Fatalf("an exec over the cap: %d %q (Retry-After %q); want 429 %q", resp.StatusCode, body, resp.Header.Get("Retry-After"), want)
	}

	_ = stdins[0].Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the first exec: %v", err)
		}
	case <-time.After(streamTimeout):
		t.Fatal("the first exec did not end")
	}
	// Its slot frees once its handler returns, just after the client sees
	// the end: wait for an exec to be let through.
	deadline := time.Now().Add(streamTimeout)
	for postExec(t, srv).StatusCode == http.StatusTooManyRequests {
		if time.Now().After(deadline) {
			t.Fatal("the slot of an exec that ended was not freed")
		}
	}
}

// Exec, attach and port-forward share the slots, each refused with 429
// when they are all taken.
func TestMaxStreamsEveryKind(t *testing.T) {
	s := New(pods{testPod()}, execRuntime{}, nil).WithMaxStreams(1)
	s.slots <- struct{}{}
	tgt, err := s.Resolve("ns", "web", "app")
	if err != nil {
		t.Fatal(err)
	}
	o := ExecOptions{Stdout: true}
	for kind, serve := range map[string]func(http.ResponseWriter, *http.Request){
		"exec":   func(w http.ResponseWriter, r *http.Request) { s.ServeExec(w, r, tgt, []string{"true"}, o) },
		"attach": func(w http.ResponseWriter, r *http.Request) { s.ServeAttach(w, r, tgt, o) },
		"port-forward": func(w http.ResponseWriter, r *http.Request) {
			if err := s.ServePortForward(w, r, "ns", "web", ""); err != nil {
				WriteError(w, err)
			}
		},
	} {
		rec := httptest.NewRecorder()
		serve(rec, httptest.NewRequest(http.MethodPost, "/", nil))
		if rec.Code != http.StatusTooManyRequests || !strings.Contains(rec.Body.String(), kind+" refused") {
			t.Errorf("%s with every slot taken: %d %q, want 429", kind, rec.Code, rec.Body.String())
		}
	}
	if n := cap(New(pods{}, nil, nil).slots); n != DefaultMaxStreams {
		t.Errorf("New's cap %d, want DefaultMaxStreams", n)
	}
}
