package apiserver

import (
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/model/modeltest"
)

// padded is podYAML grown to size bytes by a comment.
func padded(size int) string {
	pad := size - len(podYAML) - len("#\n")
	return podYAML + "#" + strings.Repeat("x", pad) + "\n"
}

// A body is read up to the Kubernetes API server's limit, 3 MiB
// (model.MaxManifestBytes), and refused beyond it with a 413 before it is
// decoded.
func TestRequestBodyLimit(t *testing.T) {
	e := newEnv(t)
	if r := e.do("POST", "/api/v1/namespaces/default/pods", "application/yaml", padded(model.MaxManifestBytes)); r.code != http.StatusCreated {
		t.Fatalf("a pod of exactly the limit: %d %.300s", r.code, r.body)
	}
	for _, tc := range []struct{ method, path, contentType string }{
		{"POST", "/api/v1/namespaces/default/pods", "application/yaml"},
		{"PATCH", "/api/v1/namespaces/default/pods/web", "application/apply-patch+yaml"},
	} {
		r := e.do(tc.method, tc.path, tc.contentType, padded(model.MaxManifestBytes+1))
		st := status(t, r, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
		if want := "the request body is larger than 3145728 bytes"; st.Message != want {
			t.Errorf("%s %s: message %q, want %q", tc.method, tc.path, st.Message, want)
		}
	}
}

// A pod of more list items than any object etcd can store
// (model.MaxListItems) is refused with a 400 naming the list, before its
// items are decoded; issue 22's 100,000 env entries are created.
func TestRequestListItemsLimit(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	b.WriteString(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"big"},"spec":{"containers":[{"name":"app","image":"busybox","env":[{}`)
	b.WriteString(strings.Repeat(",{}", model.MaxListItems))
	b.WriteString("]}]}}")
	st := status(t, e.do("POST", "/api/v1/namespaces/default/pods", "application/json", b.String()), http.StatusBadRequest, metav1.StatusReasonBadRequest)
	if !strings.Contains(st.Message, "spec.containers[0].env: Too many: more than 786432 list items in one object") {
		t.Errorf("message %q, want it to name spec.containers[0].env and the limit", st.Message)
	}
	// Decoding 100,000 entries takes some 20 s under -race at a load of
	// 70: the deadline bounds a hang, it does not time the decoding.
	if r := e.doWithin(3*time.Minute, "POST", "/api/v1/namespaces/default/pods", "application/yaml", string(modeltest.EnvEntries(100_000))); r.code != http.StatusCreated {
		t.Fatalf("100,000 env entries: %d %.300s", r.code, r.body)
	}
}
