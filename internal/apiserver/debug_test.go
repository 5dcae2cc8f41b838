package apiserver

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestMetricsAndProfilingOnlyWhenAsked: /metrics serves the handler given,
// /debug/pprof/ answers with profiling on; without them, both are 404 —
// on the API server, on the node's shutdown-only server and on the
// metrics address's handler alike.
func TestMetricsAndProfilingOnlyWhenAsked(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("the metrics\n")) })
	log := slog.New(slog.DiscardHandler)
	get := func(h http.Handler, path string) (int, string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec.Code, rec.Body.String()
	}
	servers := []struct {
		name    string
		on, off http.Handler
	}{
		{"api", New(nil, log).WithMetrics(metrics).WithProfiling(true), New(nil, log).WithMetrics(nil).WithProfiling(false)},
		{"shutdown only", NewShutdownOnly(nil, log).WithMetrics(metrics).WithProfiling(true), NewShutdownOnly(nil, log)},
		{"metrics address", DebugHandler(metrics, true), DebugHandler(nil, false)},
	}
	for _, s := range servers {
		t.Run(s.name, func(t *testing.T) {
			if code, body := get(s.on, "/metrics"); code != 200 || body != "the metrics\n" {
				t.Errorf("GET /metrics: %d %q", code, body)
			}
			if code, body := get(s.on, "/debug/pprof/"); code != 200 || !strings.Contains(body, "goroutine") {
				t.Errorf("GET /debug/pprof/ with profiling: %d %.80q", code, body)
			}
			if code, body := get(s.on, "/debug/pprof/goroutine?debug=1"); code != 200 || !strings.Contains(body, "goroutine profile") {
				t.Errorf("GET /debug/pprof/goroutine with profiling: %d %.80q", code, body)
			}
			for _, path := range []string{"/metrics", "/debug/pprof/", "/debug/pprof/goroutine"} {
				if code, _ := get(s.off, path); code != http.StatusNotFound {
					t.Errorf("GET %s without it: %d, want 404", path, code)
				}
			}
		})
	}
}
