package apiserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/shutdown"
	"github.com/podward/podward/internal/wire"
)

// The manager is what the shutdown endpoint is written for.
var _ NodeShutdown = (*shutdown.Manager)(nil)

// fakeShutdown records Begin and Cancel; the test ends a shutdown with
// finish.
type fakeShutdown struct {
	mu     sync.Mutex
	begins []string
	cancel int
	err    error
	done   chan struct{}
	state  shutdown.State
}

func (f *fakeShutdown) Begin(_ context.Context, grace time.Duration, reason shutdown.Reason) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.begins = append(f.begins, reason.String()+" "+grace.String())
	if f.done == nil {
		f.done, f.state = make(chan struct{}), shutdown.Terminating
	}
	return nil
}

func (f *fakeShutdown) Cancel(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cancel++
	return nil
}

func (f *fakeShutdown) Done() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done
}

func (f *fakeShutdown) Status() shutdown.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return shutdown.Status{State: f.state, Reason: shutdown.ReasonAPI}
}

func (f *fakeShutdown) finish() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.state = shutdown.Terminated
	close(f.done)
}

func TestShutdownEndpoint(t *testing.T) {
	e := newEnv(t)
	// Without a shutdown manager the path is not served.
	status(t, e.do(http.MethodGet, wire.ShutdownPath, "", ""), http.StatusNotFound, metav1.StatusReasonNotFound)

	sh := &fakeShutdown{}
	srv := httptest.NewServer(New(e.agent, slog.New(slog.DiscardHandler)).WithShutdown(sh))
	t.Cleanup(srv.Close)
	do := func(method, path, body string) response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return response{code: resp.StatusCode, body: b}
	}

	if r := do(http.MethodGet, wire.ShutdownPath+"?wait=true", ""); r.code != http.StatusOK || strings.Contains(string(r.body), "state") {
		t.Fatalf("GET ?wait=true with no shutdown: %d %s; want no state, at once", r.code, r.body)
	}
	status(t, do(http.MethodPost, wire.ShutdownPath, `{"gracePeriodSeconds": -1}`), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	status(t, do(http.MethodPost, wire.ShutdownPath, `{"grace": 1}`), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	r := do(http.MethodPost, wire.ShutdownPath, `{"gracePeriodSeconds": 5}`)
	if r.code != http.StatusAccepted || !strings.Contains(string(r.body), `"state":"Terminating"`) {
		t.Fatalf("POST: %d %s", r.code, r.body)
	}
	if r := do(http.MethodPost, wire.ShutdownPath, ""); r.code != http.StatusAccepted {
		t.Fatalf("POST without a body: %d %s", r.code, r.body)
	}
	if want := []string{"API 5s", "API 0s"}; strings.Join(sh.begins, ",") != strings.Join(want, ",") {
		t.Errorf("begins %v, want %v", sh.begins, want)
	}

	// GET ?wait=true answers at once with its headers, and with the
	// status once the shutdown is over.
	resp, err := srv.Client().Get(srv.URL + wire.ShutdownPath + "?wait=true")
	if err != nil {
		t.Fatal(err)
	}
	sh.finish()
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"state":"Terminated"`) {
		t.Fatalf("GET ?wait=true: %d %s %v", resp.StatusCode, body, err)
	}

	if r := do(http.MethodDelete, wire.ShutdownPath, ""); r.code != http.StatusOK || sh.cancel != 1 {
		t.Fatalf("DELETE: %d %s, cancels %d", r.code, r.body, sh.cancel)
	}
	sh.err = shutdown.ErrNotConfigured
	st := status(t, do(http.MethodPost, wire.ShutdownPath, ""), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	if !strings.Contains(st.Message, "not configured") {
		t.Errorf("message %q", st.Message)
	}
	sh.err = errors.New("disk full")
	status(t, do(http.MethodPost, wire.ShutdownPath, ""), http.StatusInternalServerError, metav1.StatusReasonInternalError)
}

// While the node shuts down, a new pod is rejected as the kubelet rejects
// one at admission (its node shutdown manager's Admit, reported by
// rejectPod): it is created, Failed with reason NodeShutdown — 201 with the
// pod, as for a pod the node has no room for.
func TestCreateWhileShuttingDownIsRejected(t *testing.T) {
	e := newEnv(t)
	e.agent.SetShuttingDown(true)
	r := e.do(http.MethodPost, "/api/v1/namespaces/default/pods", "application/yaml", podYAML)
	if r.code != http.StatusCreated {
		t.Fatalf("POST while shutting down: %d %s", r.code, r.body)
	}
	p := decodeAs[v1.Pod](t, r)
	if p.Status.Phase != v1.PodFailed || p.Status.Reason != "NodeShutdown" || p.Status.Message != "Pod was rejected: Pod was rejected as the node is shutting down." {
		t.Errorf("the pod: phase %s reason %q message %q", p.Status.Phase, p.Status.Reason, p.Status.Message)
	}
}
