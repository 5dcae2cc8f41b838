package clusterobjects

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testclock "k8s.io/utils/clock/testing"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects"
)

// tokenServer is a fake TokenRequest API that mints unsigned JWTs dated by
// a fake clock.
type tokenServer struct {
	*fake.Clientset
	clock *testclock.FakeClock

	mu       sync.Mutex
	requests []*authenticationv1.TokenRequest
	fail     error
}

func newTokenServer(clk *testclock.FakeClock) *tokenServer {
	s := &tokenServer{Clientset: fake.NewClientset(), clock: clk}
	s.PrependReactor("create", "serviceaccounts", s.createToken)
	return s
}

func (s *tokenServer) createToken(action k8stesting.Action) (bool, apiruntime.Object, error) {
	ca, ok := action.(k8stesting.CreateActionImpl)
	if !ok || action.GetSubresource() != "token" {
		return false, nil, nil
	}
	tr := ca.Object.(*authenticationv1.TokenRequest).DeepCopy()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, tr)
	if s.fail != nil {
		return true, nil, s.fail
	}
	lifetime := int64(3600)
	if tr.Spec.ExpirationSeconds != nil {
		lifetime = *tr.Spec.ExpirationSeconds
	}
	now := s.clock.Now()
	aud := tr.Spec.Audiences
	if len(aud) == 0 {
		aud = []string{"https://kubernetes.default.svc"}
	}
	tr.Status.Token = jwt(now, lifetime, aud, tr.Spec.BoundObjectRef.UID, ca.Name)
	tr.Status.ExpirationTimestamp = metav1.NewTime(now.Add(time.Duration(lifetime) * time.Second))
	return true, tr, nil
}

func (s *tokenServer) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests)
}

func (s *tokenServer) setFail(err error) {
	s.mu.Lock()
	s.fail = err
	s.mu.Unlock()
}

// jwt is an unsigned service account token issued at iat.
func jwt(iat time.Time, lifetime int64, aud []string, pod types.UID, sa string) string {
	c := map[string]any{
		"iat": iat.Unix(), "exp": iat.Unix() + lifetime, "aud": aud,
		"kubernetes.io": map[string]any{"pod": map[string]any{"uid": pod}, "serviceaccount": map[string]any{"name": sa}},
	}
	payload, _ := json.Marshal(c)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none"}`)) + "." + enc(payload) + ".sig"
}

var t0 = time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)

func tokenPod() *model.Pod {
	return &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "uid-1"}}}
}

func newTokenManager(t *testing.T) (*TokenManager, *tokenServer, *testclock.FakeClock, chan objects.Change) {
	t.Helper()
	clk := testclock.NewFakeClock(t0)
	s := newTokenServer(clk)
	changes := make(chan objects.Change, 16)
	m := NewTokenManager(TokenConfig{Client: s, Clock: clk, OnChange: func(c objects.Change) { changes <- c }})
	t.Cleanup(m.Close)
	return m, s, clk, changes
}

func token(t *testing.T, m *TokenManager, req objects.TokenRequest) objects.Token {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	tok, err := m.Token(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestTokenIsBoundToThePod(t *testing.T) {
	m, s, _, _ := newTokenManager(t)
	req := objects.TokenRequest{Pod: tokenPod(), ServiceAccount: "sa", Audience: "vault", ExpirationSeconds: 3600}
	tok := token(t, m, req)
	if tok.Token == "" || !tok.Expires.Equal(t0.Add(time.Hour)) {
		t.Errorf("Token = %+v, want one expiring at %s", tok, t0.Add(time.Hour))
	}
	got := s.requests[0].Spec
	if ref := got.BoundObjectRef; ref == nil || ref.Kind != "Pod" || ref.APIVersion != "v1" || ref.Name != "p" || ref.UID != "uid-1" {
		t.Errorf("boundObjectRef = %+v, want the pod", ref)
	}
	if len(got.Audiences) != 1 || got.Audiences[0] != "vault" || got.ExpirationSeconds == nil || *got.ExpirationSeconds != 3600 {
		t.Errorf("request spec = %+v", got)
	}
	if again := token(t, m, req); again != tok || s.count() != 1 {
		t.Errorf("second Token = %+v after %d requests, want the same token from one request", again, s.count())
	}
	// Another audience is another token; no audience is the API server's.
	req.Audience = ""
	token(t, m, req)
	if s.count() != 2 || len(s.requests[1].Spec.Audiences) != 0 {
		t.Errorf("token without audience: %d requests, audiences %v", s.count(), s.requests[1].Spec.Audiences)
	}
}

func TestTokenRefreshedPast80Percent(t *testing.T) {
	m, s, clk, changes := newTokenManager(t)
	req := objects.TokenRequest{Pod: tokenPod(), ServiceAccount: "sa", ExpirationSeconds: 3600}
	first := token(t, m, req)
	clk.Step(2880*time.Second - time.Nanosecond)
	if !clk.HasWaiters() || len(changes) != 0 {
		t.Fatal("refresh due before 80 % of the lifetime")
	}
	if tok := token(t, m, req); tok != first || s.count() != 1 {
		t.Errorf("Token before 80 %% = %+v after %d requests, want the first", tok, s.count())
	}
	clk.Step(time.Nanosecond)
	if c := receive(t, changes, "refresh change"); c.PodUID != "uid-1" {
		t.Errorf("change %+v, want the pod's", c)
	}
	if tok := token(t, m, req); tok == first || s.count() != 2 {
		t.Errorf("Token past 80 %% = %+v after %d requests, want a new one", tok, s.count())
	}
}

func TestTokenRefreshedAt24Hours(t *testing.T) {
	m, s, clk, changes := newTokenManager(t)
	req := objects.TokenRequest{Pod: tokenPod(), ServiceAccount: "sa", ExpirationSeconds: 7 * 24 * 3600}
	first := token(t, m, req)
	clk.Step(24*time.Hour - time.Second)
	if !clk.HasWaiters() || len(changes) != 0 {
		t.Fatal("refresh due before 24 h")
	}
	clk.Step(time.Second)
	receive(t, changes, "refresh change")
	if tok := token(t, m, req); tok == first || s.count() != 2 {
		t.Errorf("Token at 24 h = %+v after %d requests, want a new one", tok, s.count())
	}
}

func TestCurrentTokenReusedWhileFresh(t *testing.T) {
	pod := tokenPod()
	for name, tc := range map[string]struct {
		current string
		reused  bool
	}{
		"fresh":            {current: jwt(t0.Add(-10*time.Minute), 3600, []string{"vault"}, pod.UID, "sa"), reused: true},
		"past 80 %":        {current: jwt(t0.Add(-49*time.Minute), 3600, []string{"vault"}, pod.UID, "sa")},
		"extended expiry":  {current: jwt(t0.Add(-49*time.Minute), 365*24*3600, []string{"vault"}, pod.UID, "sa")},
		"another pod":      {current: jwt(t0.Add(-10*time.Minute), 3600, []string{"vault"}, "uid-2", "sa")},
		"another audience": {current: jwt(t0.Add(-10*time.Minute), 3600, []string{"other"}, pod.UID, "sa")},
		"another account":  {current: jwt(t0.Add(-10*time.Minute), 3600, []string{"vault"}, pod.UID, "default")},
		"not a token":      {current: "garbage"},
	} {
		t.Run(name, func(t *testing.T) {
			m, s, clk, changes := newTokenManager(t)
			req := objects.TokenRequest{Pod: pod, ServiceAccount: "sa", Audience: "vault", ExpirationSeconds: 3600, Current: tc.current}
			tok := token(t, m, req)
			if reused := tok.Token == tc.current && s.count() == 0; reused != tc.reused {
				t.Fatalf("reused = %v (%d requests), want %v", reused, s.count(), tc.reused)
			}
			if !tc.reused {
				return
			}
			if want := t0.Add(50 * time.Minute); !tok.Expires.Equal(want) {
				t.Errorf("Expires = %s, want %s", tok.Expires, want)
			}
			// Due at 80 % of its lifetime, counted from its iat.
			clk.Step(38*time.Minute - time.Second)
			if len(changes) != 0 {
				t.Fatal("refresh due early")
			}
			clk.Step(time.Second)
			receive(t, changes, "refresh change")
		})
	}
}

func TestFailedRefreshKeepsTheOldToken(t *testing.T) {
	m, s, clk, changes := newTokenManager(t)
	req := objects.TokenRequest{Pod: tokenPod(), ServiceAccount: "sa", ExpirationSeconds: 3600}
	first := token(t, m, req)
	s.setFail(errors.New("the API server is away"))
	clk.Step(2880 * time.Second)
	receive(t, changes, "refresh change")
	if tok := token(t, m, req); tok != first {
		t.Errorf("Token when the refresh fails = %+v, want the old one", tok)
	}
	clk.Step(retryRefresh)
	receive(t, changes, "retry change")
	if tok := token(t, m, req); tok != first {
		t.Errorf("Token when the refresh fails again = %+v, want the old one", tok)
	}
	clk.Step(time.Hour)
	receive(t, changes, "retry change")
	if _, err := m.Token(context.Background(), req); err == nil {
		t.Error("Token of an expired token that cannot be refreshed: no error")
	}
}

func TestForgetPodDropsItsTokens(t *testing.T) {
	m, s, clk, changes := newTokenManager(t)
	req := objects.TokenRequest{Pod: tokenPod(), ServiceAccount: "sa", ExpirationSeconds: 3600}
	token(t, m, req)
	m.ForgetPod("uid-1")
	if clk.HasWaiters() {
		t.Error("the forgotten token's timer still waits")
	}
	clk.Step(time.Hour)
	if len(changes) != 0 {
		t.Errorf("change of a forgotten pod: %+v", <-changes)
	}
	token(t, m, req)
	if s.count() != 2 {
		t.Errorf("%d requests, want a new one after ForgetPod", s.count())
	}
}
