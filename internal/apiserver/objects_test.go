package apiserver

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/podward/podward/internal/objects/local"
)

func TestObjectRequests(t *testing.T) {
	objs, err := local.New(local.Options{MaxObjects: 1})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(nil, slog.New(slog.DiscardHandler)).WithObjects(objs)
	do := func(method, path, body string) (int, string, http.Header) {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		if method == http.MethodPatch {
			req.Header.Set("Content-Type", ApplyPatchContentType)
		}
		srv.ServeHTTP(rec, req)
		return rec.Code, rec.Body.String(), rec.Header()
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
	code, _, h := do(http.MethodPatch, "/api/v1/namespaces/team/configmaps/a", cm)
	if code != http.StatusCreated || h.Get(ApplyResultHeader) != "created" {
		t.Fatalf("apply: %d %q", code, h.Get(ApplyResultHeader))
	}
	if code, body, _ := do(http.MethodGet, "/api/v1/namespaces/team/configmaps/a", ""); code != http.StatusOK || !strings.Contains(body, `"namespace":"team"`) {
		t.Fatalf("get: %d %s", code, body)
	}
	for name, tc := range map[string]struct {
		method, path, body string
		code               int
		msg                string
	}{
		"other namespace": {http.MethodPatch, "/api/v1/namespaces/x/configmaps/a", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: other}\n", http.StatusBadRequest, "does not match the namespace sent on the request"},
		"other name":      {http.MethodPatch, "/api/v1/namespaces/team/configmaps/b", cm, http.StatusBadRequest, "does not match the name on the URL"},
		"other kind":      {http.MethodPatch, "/api/v1/namespaces/team/secrets/a", cm, http.StatusBadRequest, "must hold exactly one Secret"},
		"over the cap":    {http.MethodPatch, "/api/v1/namespaces/team/secrets/s", "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n", http.StatusForbidden, "at most 1 ConfigMaps and Secrets"},
		"not found":       {http.MethodDelete, "/api/v1/namespaces/team/secrets/s", "", http.StatusNotFound, `secrets \"s\" not found`},
		"method":          {http.MethodPost, "/api/v1/namespaces/team/secrets", "", http.StatusMethodNotAllowed, ""},
	} {
		t.Run(name, func(t *testing.T) {
			code, body, _ := do(tc.method, tc.path, tc.body)
			if code != tc.code || !strings.Contains(body, tc.msg) {
				t.Errorf("%d %s, want %d with %q", code, body, tc.code, tc.msg)
			}
		})
	}
}
