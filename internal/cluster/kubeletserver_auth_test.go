package cluster

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/crilog"
)

// TestRequestAttributes: the verb and the nodes subresources each path
// needs, the kubelet's (1.37, pkg/kubelet/server/auth.go,
// nodeAuthorizerAttributesGetter, with KubeletFineGrainedAuthz locked on).
func TestRequestAttributes(t *testing.T) {
	tests := []struct {
		method, path string
		verb         string
		subresources []string
	}{
		{"GET", "/containerLogs/default/web/app", "get", []string{"proxy"}},
		{"POST", "/exec/default/web/app", "create", []string{"proxy"}},
		{"GET", "/attach/default/web/app", "get", []string{"proxy"}},
		{"POST", "/portForward/default/web", "create", []string{"proxy"}},
		{"POST", "/run/default/web/app", "create", []string{"proxy"}},
		{"GET", "/logs/", "get", []string{"log"}},
		{"GET", "/logs/syslog", "get", []string{"log"}},
		{"GET", "/logsx", "get", []string{"proxy"}},
		{"GET", "/stats/summary", "get", []string{"stats"}},
		{"GET", "/stats", "get", []string{"stats"}},
		{"GET", "/metrics", "get", []string{"metrics"}},
		{"GET", "/metrics/cadvisor", "get", []string{"metrics"}},
		{"GET", "/checkpoint/default/web/app", "get", []string{"checkpoint"}},
		{"POST", "/checkpoint/default/web/app", "create", []string{"checkpoint"}},
		{"GET", "/statusz", "get", []string{"statusz"}},
		{"GET", "/flagz", "get", []string{"configz"}},
		{"GET", "/configz", "get", []string{"configz", "proxy"}},
		{"GET", "/healthz", "get", []string{"healthz", "proxy"}},
		{"GET", "/healthz/ping", "get", []string{"healthz", "proxy"}},
		{"GET", "/pods", "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", "get", []string{"pods", "proxy"}},
		{"GET", "/allocatedPods", "get", []string{"pods", "proxy"}},
		{"GET", "/runningpods/", "get", []string{"pods", "proxy"}},
		{"GET", "/", "get", []string{"proxy"}},
		{"PUT", "/x", "update", []string{"proxy"}},
		{"PATCH", "/x", "patch", []string{"proxy"}},
		{"DELETE", "/x", "delete", []string{"proxy"}},
		// No verb for other methods, as the kubelet.
		{"HEAD", "/healthz", "", []string{"healthz", "proxy"}},
	}
	for _, tc := range tests {
		verb, subs := requestAttributes(tc.method, tc.path)
		if verb != tc.verb || !slices.Equal(subs, tc.subresources) {
			t.Errorf("%s %s: %q %v, want %q %v", tc.method, tc.path, verb, subs, tc.verb, tc.subresources)
		}
	}
}

func TestParseAuthorizationMode(t *testing.T) {
	for _, m := range []AuthorizationMode{AuthorizationWebhook, AuthorizationAlwaysAllow} {
		if got, err := ParseAuthorizationMode(m.String()); err != nil || got != m {
			t.Errorf("%v: %v, %v", m, got, err)
		}
	}
	if _, err := ParseAuthorizationMode("RBAC"); err == nil {
		t.Error("RBAC accepted")
	}
	if s := AuthorizationMode(0).String(); s != "AuthorizationMode(0)" {
		t.Errorf("zero: %s", s)
	}
}

// fakeAPIServer answers SubjectAccessReviews and TokenReviews from tables,
// as an API server with RBAC would, and records the reviews asked.
type fakeAPIServer struct {
	mu sync.Mutex
	// allowed has "user subresource" for each allowed pair (verb get).
	allowed map[string]bool
	// tokens maps a token to its user.
	tokens map[string]authenticationv1.UserInfo
	// err fails every review while set.
	err      error
	reviews  []authorizationv1.SubjectAccessReviewSpec
	tokenAsk []string
}

func newFakeAPIServer() (*fakeAPIServer, *fake.Clientset) {
	f := &fakeAPIServer{allowed: map[string]bool{}, tokens: map[string]authenticationv1.UserInfo{}}
	cs := fake.NewClientset()
	cs.PrependReactor("create", "subjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		sar := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SubjectAccessReview).DeepCopy()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.reviews = append(f.reviews, sar.Spec)
		if f.err != nil {
			return true, nil, f.err
		}
		ra := sar.Spec.ResourceAttributes
		sar.Status.Allowed = ra != nil && ra.Verb == "get" && f.allowed[sar.Spec.User+" "+ra.Subresource]
		if !sar.Status.Allowed {
			sar.Status.Reason = "no RBAC policy matched"
		}
		return true, sar, nil
	})
	cs.PrependReactor("create", "tokenreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		tr := a.(k8stesting.CreateAction).GetObject().(*authenticationv1.TokenReview).DeepCopy()
		f.mu.Lock()
		defer f.mu.Unlock()
		f.tokenAsk = append(f.tokenAsk, tr.Spec.Token)
		if f.err != nil {
			return true, nil, f.err
		}
		tr.Status.User, tr.Status.Authenticated = f.tokens[tr.Spec.Token]
		return true, tr, nil
	})
	return f, cs
}

func (f *fakeAPIServer) allow(user, subresource string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allowed[user+" "+subresource] = true
}

func (f *fakeAPIServer) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// asked is what the reviews asked since the last call: "user subresource"
// for each SubjectAccessReview, "token T" for each TokenReview.
func (f *fakeAPIServer) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, tok := range f.tokenAsk {
		out = append(out, "token "+tok)
	}
	for _, r := range f.reviews {
		out = append(out, r.User+" "+r.ResourceAttributes.Subresource)
	}
	f.reviews, f.tokenAsk = nil, nil
	return out
}

// TestReviewAuthorizerCache: the API server's answers are kept as long as
// the kubelet keeps them (an allowance 5 minutes, a refusal 30 s, its
// cacheAuthorizedTTL and cacheUnauthorizedTTL defaults in
// pkg/kubelet/apis/config/v1beta1/defaults.go), per user and subresource;
// a failed review is not kept.
func TestReviewAuthorizerCache(t *testing.T) {
	api, cs := newFakeAPIServer()
	api.allow("alice", "proxy")
	clk := clocktesting.NewFakeClock(logT0)
	a := &reviewAuthorizer{
		client: cs.AuthorizationV1().SubjectAccessReviews(), node: "worker-1",
		allowTTL: authorizedCacheTTL, denyTTL: unauthorizedCacheTTL,
		cache: utilcache.NewLRUExpireCacheWithClock(reviewCacheSize, clk),
	}
	alice := &kubeletUser{name: "alice", groups: []string{"devs", groupAuthenticated}, extra: map[string]authorizationv1.ExtraValue{credentialIDKey: {"X509SHA256=ab"}}}
	bob := &kubeletUser{name: "bob", groups: []string{groupAuthenticated}}
	ctx := t.Context()
	check := func(step string, u *kubeletUser, sub string, wantAllowed bool, wantAsked ...string) {
		t.Helper()
		allowed, _, err := a.authorize(ctx, u, "get", sub)
		if err != nil || allowed != wantAllowed {
			t.Errorf("%s: %s %s: allowed %v (%v), want %v", step, u.name, sub, allowed, err, wantAllowed)
		}
		if got := api.asked(); !slices.Equal(got, wantAsked) {
			t.Errorf("%s: asked %q, want %q", step, got, wantAsked)
		}
	}

	check("first", alice, "proxy", true, "alice proxy")
	check("first", bob, "proxy", false, "bob proxy")
	check("another subresource", alice, "log", false, "alice log")
	clk.Step(unauthorizedCacheTTL - time.Second)
	check("cached", alice, "proxy", true)
	check("cached", bob, "proxy", false)
	clk.Step(2 * time.Second)
	check("refusal expired", bob, "proxy", false, "bob proxy")
	check("allowance kept", alice, "proxy", true)
	clk.SetTime(logT0.Add(authorizedCacheTTL + time.Second))
	check("allowance expired", alice, "proxy", true, "alice proxy")

	// What the review asks: the node's subresource, for the user.
	api.allow("carol", "proxy")
	carol := &kubeletUser{name: "carol", uid: "u-1", groups: []string{"g"}, extra: alice.extra}
	if _, _, err := a.authorize(ctx, carol, "get", "proxy"); err != nil {
		t.Fatal(err)
	}
	api.mu.Lock()
	got := api.reviews[len(api.reviews)-1]
	api.mu.Unlock()
	api.asked()
	want := authorizationv1.SubjectAccessReviewSpec{
		User: "carol", UID: "u-1", Groups: []string{"g"}, Extra: alice.extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "proxy", Name: "worker-1"},
	}
	if g, w := mustJSON(t, got), mustJSON(t, want); g != w {
		t.Errorf("review spec %s, want %s", g, w)
	}

	// A review that fails is an error, and is asked again next time.
	api.setErr(errors.New("connection refused"))
	dave := &kubeletUser{name: "dave"}
	for range 2 {
		if _, _, err := a.authorize(ctx, dave, "get", "proxy"); err == nil || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("err = %v", err)
		}
	}
	if got := api.asked(); len(got) != 2 {
		t.Errorf("asked %q, want the failed review twice", got)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// auditLog collects the server's audit lines.
type auditLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *auditLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// take returns the lines logged since the last call, each as
// "user=U groups=G verb=V path=P decision=D".
func (l *auditLog) take(t *testing.T) []string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var rec struct {
			Msg, User, Verb, Path, Decision string
			Groups                          []string
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		if rec.Msg != "kubelet API request" {
			continue
		}
		out = append(out, fmt.Sprintf("user=%s groups=%s verb=%s path=%s decision=%s", rec.User, strings.Join(rec.Groups, ","), rec.Verb, rec.Path, rec.Decision))
	}
	l.buf.Reset()
	return out
}

// webhookServer is a kubelet server that asks api, with its audit lines in
// the returned log.
func webhookServer(t *testing.T, change func(*KubeletServerConfig)) (*kubeletFixture, *fakeAPIServer, *auditLog) {
	api, cs := newFakeAPIServer()
	audit := &auditLog{}
	f := startKubeletServer(t, func(c *KubeletServerConfig) {
		c.Authorization = 0 // the default: Webhook
		c.SubjectAccessReviews = cs.AuthorizationV1().SubjectAccessReviews()
		c.TokenReviews = cs.AuthenticationV1().TokenReviews()
		c.AuditLogger = slog.New(slog.NewJSONHandler(audit, nil))
		if change != nil {
			change(c)
		}
	})
	return f, api, audit
}

// bearerGet is a GET of url with the bearer token.
func bearerGet(t *testing.T, c *http.Client, url, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	if _, err := b.ReadFrom(resp.Body); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b.String()
}

// TestKubeletServerAuthorization: by default (the kubelet's Webhook mode,
// pkg/kubelet/server/server.go InstallAuthFilter) a request is served only
// if the API server allows its user the node's subresource: nodes/proxy for
// a container's log. Others get the kubelet's 403; each request is audited.
func TestKubeletServerAuthorization(t *testing.T) {
	f, api, audit := webhookServer(t, nil)
	appendLog(t, filepath.Join(f.logs.dir, "app-1.log"), logRecord{0, crilog.Stdout, "secret", false})
	api.allow("kube-apiserver-kubelet-client", "proxy")
	api.allow("log-reader", "log")
	api.allow("prober", "healthz")
	url := f.url + "/containerLogs/default/web/app"
	as := func(cn string) *http.Client { return f.client(t, f.ca.clientCert(t, cn)) }
	const groups = "kubeadm:cluster-admins," + groupAuthenticated
	// One certificate: the answers are kept per credential.
	random := as("random-user")

	tests := []struct {
		name   string
		client *http.Client
		path   string
		code   int
		body   string
		asked  []string
		audit  string
	}{
		{"the API server", f.apiServer(t), "/containerLogs/default/web/app", 200, "secret\n",
			[]string{"kube-apiserver-kubelet-client proxy"},
			"user=kube-apiserver-kubelet-client groups=" + groups + " verb=get path=/containerLogs/default/web/app decision=allowed"},
		{"a user without a role", random, "/containerLogs/default/web/app", 403,
			"Forbidden (user=random-user, verb=get, resource=nodes, subresource(s)=[proxy])\n",
			[]string{"random-user proxy"},
			"user=random-user groups=" + groups + " verb=get path=/containerLogs/default/web/app decision=forbidden"},
		// nodes/log is the node's own logs (/logs/), not a container's.
		{"nodes/log is not enough", as("log-reader"), "/containerLogs/default/web/app", 403,
			"Forbidden (user=log-reader, verb=get, resource=nodes, subresource(s)=[proxy])\n",
			[]string{"log-reader proxy"},
			"user=log-reader groups=" + groups + " verb=get path=/containerLogs/default/web/app decision=forbidden"},
		// The anonymous user's name on a certificate makes it no member of
		// system:authenticated, and gives it nothing.
		{"system:anonymous", as(userAnonymous), "/containerLogs/default/web/app", 403,
			"Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[proxy])\n",
			[]string{"system:anonymous proxy"},
			"user=system:anonymous groups=kubeadm:cluster-admins verb=get path=/containerLogs/default/web/app decision=forbidden"},
		{"healthz by nodes/healthz", as("prober"), "/healthz", 200, "ok",
			[]string{"prober healthz"},
			"user=prober groups=" + groups + " verb=get path=/healthz decision=allowed"},
		{"healthz by nodes/proxy", f.apiServer(t), "/healthz", 200, "ok",
			[]string{"kube-apiserver-kubelet-client healthz", "kube-apiserver-kubelet-client proxy"},
			"user=kube-apiserver-kubelet-client groups=" + groups + " verb=get path=/healthz decision=allowed"},
		{"healthz refused", random, "/healthz", 403,
			"Forbidden (user=random-user, verb=get, resource=nodes, subresource(s)=[healthz proxy])\n",
			[]string{"random-user healthz"}, // proxy was refused a moment ago: kept
			"user=random-user groups=" + groups + " verb=get path=/healthz decision=forbidden"},
		// Authorized before it is found missing, as the kubelet.
		{"unknown path", random, "/exec/default/web/app", 403,
			"Forbidden (user=random-user, verb=get, resource=nodes, subresource(s)=[proxy])\n",
			nil, // refused a moment ago: cached
			"user=random-user groups=" + groups + " verb=get path=/exec/default/web/app decision=forbidden"},
		{"no certificate", f.client(t), "/containerLogs/default/web/app", 401, "Unauthorized\n",
			nil,
			"user= groups= verb=get path=/containerLogs/default/web/app decision=unauthenticated"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, body := kubeletGet(t, tc.client, f.url+tc.path)
			if code != tc.code || body != tc.body {
				t.Errorf("got %d %q, want %d %q", code, body, tc.code, tc.body)
			}
			if got := api.asked(); !slices.Equal(got, tc.asked) {
				t.Errorf("asked the API server %q, want %q", got, tc.asked)
			}
			if got := audit.take(t); !slices.Equal(got, []string{tc.audit}) {
				t.Errorf("audit %q, want %q", got, tc.audit)
			}
		})
	}

	t.Run("the API server cannot answer", func(t *testing.T) {
		api.setErr(errors.New("connection refused"))
		defer api.setErr(nil)
		code, body := kubeletGet(t, as("someone"), url)
		if code != http.StatusInternalServerError || body != "Authorization error (user=someone, verb=get, resource=nodes, subresource=proxy)" {
			t.Errorf("got %d %q", code, body)
		}
		if got := audit.take(t); len(got) != 1 || !strings.HasSuffix(got[0], "decision=error") {
			t.Errorf("audit %q", got)
		}
	})
}

// TestKubeletServerBearerToken: a bearer token is the user the API server
// says it is (a TokenReview, as the kubelet's webhook authentication, on in
// its configuration's defaults), asked once in 2 minutes; a token it does
// not know is a 401.
func TestKubeletServerBearerToken(t *testing.T) {
	f, api, audit := webhookServer(t, nil)
	appendLog(t, filepath.Join(f.logs.dir, "app-1.log"), logRecord{0, crilog.Stdout, "secret", false})
	api.tokens["good"] = authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:reader", Groups: []string{"system:serviceaccounts"}}
	api.allow("system:serviceaccount:monitoring:reader", "proxy")
	url := f.url + "/containerLogs/default/web/app"
	c := f.client(t)

	for i := range 2 {
		if code, body := bearerGet(t, c, url, "good"); code != 200 || body != "secret\n" {
			t.Errorf("#%d: got %d %q", i, code, body)
		}
	}
	if got := api.asked(); !slices.Equal(got, []string{"token good", "system:serviceaccount:monitoring:reader proxy"}) {
		t.Errorf("asked %q: want one TokenReview and one review", got)
	}
	want := "user=system:serviceaccount:monitoring:reader groups=system:serviceaccounts," + groupAuthenticated + " verb=get path=/containerLogs/default/web/app decision=allowed"
	if got := audit.take(t); !slices.Equal(got, []string{want, want}) {
		t.Errorf("audit %q", got)
	}

	if code, body := bearerGet(t, c, url, "forged"); code != http.StatusUnauthorized || body != "Unauthorized\n" {
		t.Errorf("unknown token: %d %q", code, body)
	}
	if code, _ := bearerGet(t, c, url, "forged"); code != http.StatusUnauthorized {
		t.Errorf("unknown token again: %d", code)
	}
	if got := api.asked(); !slices.Equal(got, []string{"token forged"}) {
		t.Errorf("asked %q: want one TokenReview, kept", got)
	}

	// A certificate wins over a token.
	code, _ := bearerGet(t, f.client(t, f.ca.clientCert(t, "random-user")), url, "good")
	if got := api.asked(); code != http.StatusForbidden || !slices.Equal(got, []string{"random-user proxy"}) {
		t.Errorf("certificate and token: %d, asked %q", code, got)
	}
}

// TestKubeletServerAnonymousIsAuthorized: with --anonymous-auth, a client
// without credentials is system:anonymous, and authorized like any other.
func TestKubeletServerAnonymousIsAuthorized(t *testing.T) {
	f, api, audit := webhookServer(t, func(c *KubeletServerConfig) { c.AllowAnonymous = true })
	code, body := kubeletGet(t, f.client(t), f.url+"/containerLogs/default/web/app")
	if code != http.StatusForbidden || body != "Forbidden (user=system:anonymous, verb=get, resource=nodes, subresource(s)=[proxy])\n" {
		t.Errorf("got %d %q", code, body)
	}
	if got := api.asked(); !slices.Equal(got, []string{"system:anonymous proxy"}) {
		t.Errorf("asked %q", got)
	}
	if got := audit.take(t); !slices.Equal(got, []string{"user=system:anonymous groups=system:unauthenticated verb=get path=/containerLogs/default/web/app decision=forbidden"}) {
		t.Errorf("audit %q", got)
	}
}

// TestKubeletServerAlwaysAllow: AlwaysAllow asks no one, and still audits.
func TestKubeletServerAlwaysAllow(t *testing.T) {
	f, api, audit := webhookServer(t, func(c *KubeletServerConfig) { c.Authorization = AuthorizationAlwaysAllow })
	if code, _ := kubeletGet(t, f.client(t, f.ca.clientCert(t, "random-user")), f.url+"/healthz"); code != 200 {
		t.Errorf("got %d", code)
	}
	if got := api.asked(); len(got) != 0 {
		t.Errorf("asked %q", got)
	}
	if got := audit.take(t); len(got) != 1 || !strings.HasSuffix(got[0], "decision=allowed") {
		t.Errorf("audit %q", got)
	}
}

func TestKubeletServerWebhookNeedsTheAPIServer(t *testing.T) {
	cfg := KubeletServerConfig{Logs: newFakeLogs(t), CertDir: t.TempDir(), NodeName: "n", AllowAnonymous: true, Logger: slog.New(slog.DiscardHandler)}
	if _, err := NewKubeletServer(cfg); err == nil || !strings.Contains(err.Error(), "Webhook") {
		t.Errorf("no SubjectAccessReviews: %v", err)
	}
	_, cs := newFakeAPIServer()
	cfg.SubjectAccessReviews = cs.AuthorizationV1().SubjectAccessReviews()
	if _, err := NewKubeletServer(cfg); err != nil {
		t.Error(err)
	}
}

// TestKubeletServerMetrics: /metrics serves the agent's metrics to a user
// the API server allows nodes/metrics, as the kubelet's (kubelet 1.37,
// pkg/kubelet/server/auth.go: /metrics needs nodes/metrics); nodes/proxy
// is not enough, and without credentials it is a 401. A server given no
// metrics answers 404 (once authorized).
func TestKubeletServerMetrics(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("kubelet_running_pods 2\n"))
	})
	f, api, _ := webhookServer(t, func(c *KubeletServerConfig) { c.Metrics = metrics })
	api.allow("prometheus", "metrics")
	api.allow("kube-apiserver-kubelet-client", "proxy")
	as := func(cn string) *http.Client { return f.client(t, f.ca.clientCert(t, cn)) }
	tests := []struct {
		name   string
		client *http.Client
		code   int
		body   string
	}{
		{"nodes/metrics", as("prometheus"), 200, "kubelet_running_pods 2\n"},
		{"nodes/proxy is not enough", f.apiServer(t), 403, "Forbidden (user=kube-apiserver-kubelet-client, verb=get, resource=nodes, subresource(s)=[metrics])\n"},
		{"no role", as("random-user"), 403, "Forbidden (user=random-user, verb=get, resource=nodes, subresource(s)=[metrics])\n"},
		{"no certificate", f.client(t), 401, "Unauthorized\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := kubeletGet(t, tc.client, f.url+"/metrics"); code != tc.code || body != tc.body {
				t.Errorf("got %d %q, want %d %q", code, body, tc.code, tc.body)
			}
		})
	}

	g, api2, _ := webhookServer(t, nil)
	api2.allow("prometheus", "metrics")
	if code, _ := kubeletGet(t, g.client(t, g.ca.clientCert(t, "prometheus")), g.url+"/metrics"); code != http.StatusNotFound {
		t.Errorf("/metrics of a server without metrics: %d, want 404", code)
	}
}
