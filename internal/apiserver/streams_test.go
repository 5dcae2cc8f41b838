package apiserver

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/streaming"
)

// TestStreamRefusals: what the exec, attach and portforward subresources
// answer before any upgrade: a Status for an unknown pod or a container to
// name, as the API server; the kubelet's text for a container that does
// not run (pkg/kubelet/kubelet_pods.go, GetExec), which clients print
// after "unable to upgrade connection: "; and the refusals of what is not
// served.
func TestStreamRefusals(t *testing.T) {
	e := newEnv(t)
	for _, y := range []string{podYAML, twoContainersYAML} {
		if r := e.do("POST", "/api/v1/namespaces/default/pods", "", y); r.code != http.StatusCreated {
			t.Fatalf("create: %d %s", r.code, r.body)
		}
	}
	e.waitPod("default", "web", running("app"))

	st := status(t, e.do("POST", "/api/v1/namespaces/default/pods/gone/exec?command=true", "", ""), http.StatusNotFound, metav1.StatusReasonNotFound)
	if st.Message != `pods "gone" not found` {
		t.Errorf("unknown pod: %q", st.Message)
	}
	st = status(t, e.do("POST", "/api/v1/namespaces/default/pods/duo/exec?command=true", "", ""), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	if st.Message != "a container name must be specified for pod duo, choose one of: [a b]" {
		t.Errorf("container to name: %q", st.Message)
	}
	st = status(t, e.do("POST", "/api/v1/namespaces/default/pods/web/exec?command=true&stdout=false&stderr=false", "", ""), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	if st.Message != "you must specify at least 1 of stdin, stdout, stderr" {
		t.Errorf("no stream: %q", st.Message)
	}
	for _, tc := range []struct{ method, path, want string }{
		{"POST", "/api/v1/namespaces/default/pods/web/exec?container=nope&command=true", `container not found ("nope")`},
		{"GET", "/api/v1/namespaces/default/pods/web/attach?container=app", "attach is not supported by this runtime"},
		// The fake runtime can do neither kind of exec or attach.
		{"POST", "/api/v1/namespaces/default/pods/web/exec?command=true", "exec is not supported by this runtime"},
		{"POST", "/api/v1/namespaces/default/pods/web/portforward", "port-forward is not supported by this runtime"},
	} {
		r := e.do(tc.method, tc.path, "", "")
		if r.code != http.StatusInternalServerError || strings.TrimSpace(string(r.body)) != tc.want {
			t.Errorf("%s %s: %d %q, want 500 %q", tc.method, tc.path, r.code, r.body, tc.want)
		}
	}
	if r := e.do("PUT", "/api/v1/namespaces/default/pods/web/exec", "", ""); r.code != http.StatusMethodNotAllowed {
		t.Errorf("PUT exec: %d", r.code)
	}
}

// A stream refused for the streaming server's cap (429 Too Many Requests,
// a port-forward's refusal being an error) keeps its code and its words.
func TestStreamTooMany(t *testing.T) {
	s := &Server{log: slog.New(slog.DiscardHandler)}
	refuse := s.streamHandler(func(http.ResponseWriter, *http.Request) error {
		return &streaming.Error{Code: http.StatusTooManyRequests, Message: "too many streams"}
	})
	rec := httptest.NewRecorder()
	refuse(rec, httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/default/pods/web/portforward", nil))
	if rec.Code != http.StatusTooManyRequests || rec.Body.String() != "too many streams" || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("%d %q (Retry-After %q), want 429", rec.Code, rec.Body.String(), rec.Header().Get("Retry-After"))
	}
}
