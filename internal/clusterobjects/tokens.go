package clusterobjects

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/objects"
)

// The kubelet's refresh rule: a token is requested again once it is past
// refreshFraction of its lifetime or older than maxTokenAge.
const (
	refreshFraction = 0.8
	maxTokenAge     = 24 * time.Hour
	// retryRefresh is how soon a refresh that failed is tried again (a
	// Change for the pod), while the old token still serves.
	retryRefresh = 10 * time.Second
	// DefaultRequestTimeout bounds a TokenRequest by default.
	DefaultRequestTimeout = 30 * time.Second
)

// TokenConfig is what a TokenManager needs.
type TokenConfig struct {
	// Client is the node's client of the API server.
	Client kubernetes.Interface
	// Clock dates the tokens and drives their refresh. Default: the real
	// clock.
	Clock clock.WithDelayedExecution
	// OnChange is told, with Change.PodUID, that a pod's token is due for
	// its refresh: the pod's volumes should be written again (which asks
	// for the token again). It is called from a timer's goroutine and must
	// not block. nil: no one is told.
	OnChange func(objects.Change)
	// RequestTimeout bounds each TokenRequest. Default
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Logger gets the manager's messages. Default: discarded.
	Logger *slog.Logger
}

// TokenManager mints service account tokens bound to pods through the
// TokenRequest API (the kubelet's token manager) and keeps each, per pod,
// service account, audience and lifetime asked for, until it is due for its
// refresh: past 80 % of its lifetime or 24 hours old. When one is due, a
// timer tells OnChange; the next Token for it requests a new one. What it
// keeps is bounded by the pods' token sources; ForgetPod drops a pod's.
// All methods are safe for concurrent use.
type TokenManager struct {
	cfg TokenConfig
	log *slog.Logger

	mu     sync.Mutex
	tokens map[tokenKey]*cachedToken
}

var _ objects.Tokens = (*TokenManager)(nil)

type tokenKey struct {
	pod            types.UID
	serviceAccount string
	audience       string
	expiration     int64
}

type cachedToken struct {
	objects.Token
	// refreshAt is when it is due for its refresh.
	refreshAt time.Time
	// timer tells OnChange at refreshAt.
	timer clock.Timer
}

// NewTokenManager returns a TokenManager that keeps no token yet.
func NewTokenManager(cfg TokenConfig) *TokenManager {
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = DefaultRequestTimeout
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return &TokenManager{cfg: cfg, log: log, tokens: map[tokenKey]*cachedToken{}}
}

// Token implements objects.Tokens: the token kept for req while it is not
// due for its refresh; else req.Current while it is fresh (a token written
// before the agent restarted); else a new one from the TokenRequest API.
// When a refresh fails while the token kept has not expired, that token
// serves again and the refresh is retried soon.
func (m *TokenManager) Token(ctx context.Context, req objects.TokenRequest) (objects.Token, error) {
	key := tokenKey{pod: req.Pod.UID, serviceAccount: req.ServiceAccount, audience: req.Audience, expiration: req.ExpirationSeconds}
	now := m.cfg.Clock.Now()
	m.mu.Lock()
	kept := m.tokens[key]
	m.mu.Unlock()
	if kept != nil && now.Before(kept.refreshAt) {
		return kept.Token, nil
	}
	if kept == nil && req.Current != "" {
		if tok, issued, ok := reusable(req, now); ok {
			m.keep(key, tok, refreshTime(issued, tok.Expires))
			return tok, nil
		}
	}
	tok, err := m.request(ctx, req)
	if err != nil {
		if kept != nil && now.Before(kept.Expires) {
			m.log.Warn("cannot refresh a service account token: the old one serves until it expires", "podUID", req.Pod.UID, "serviceAccount", req.ServiceAccount, "expires", kept.Expires, "err", err)
			m.keep(key, kept.Token, now.Add(retryRefresh))
			return kept.Token, nil
		}
		return objects.Token{}, err
	}
	m.keep(key, tok, refreshTime(now, tok.Expires))
	return tok, nil
}

// ForgetPod implements objects.Tokens: the pod's tokens are dropped and
// their timers stopped.
func (m *TokenManager) ForgetPod(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, t := range m.tokens {
		if key.pod == uid {
			t.timer.Stop()
			delete(m.tokens, key)
		}
	}
}

// Close stops every timer: no Change is told after it.
func (m *TokenManager) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for key, t := range m.tokens {
		t.timer.Stop()
		delete(m.tokens, key)
	}
}

// keep keeps tok for key, due for its refresh at refreshAt, when a timer
// tells OnChange.
func (m *TokenManager) keep(key tokenKey, tok objects.Token, refreshAt time.Time) {
	t := &cachedToken{Token: tok, refreshAt: refreshAt}
	t.timer = m.cfg.Clock.AfterFunc(refreshAt.Sub(m.cfg.Clock.Now()), func() {
		if m.cfg.OnChange != nil {
			m.cfg.OnChange(objects.Change{PodUID: key.pod})
		}
	})
	m.mu.Lock()
	defer m.mu.Unlock()
	if old := m.tokens[key]; old != nil {
		old.timer.Stop()
	}
	m.tokens[key] = t
}

// refreshTime is when a token issued at issued that expires at expires is
// due for its refresh: past 80 % of its lifetime, or at 24 hours.
func refreshTime(issued, expires time.Time) time.Time {
	lifetime := expires.Sub(issued)
	at := issued.Add(time.Duration(float64(lifetime) * refreshFraction))
	if capped := issued.Add(maxTokenAge); capped.Before(at) {
		return capped
	}
	return at
}

// request asks the TokenRequest API for a token of req's service account
// bound to its pod.
func (m *TokenManager) request(ctx context.Context, req objects.TokenRequest) (objects.Token, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.RequestTimeout)
	defer cancel()
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: req.Pod.Name, UID: req.Pod.UID},
	}}
	if req.Audience != "" {
		tr.Spec.Audiences = []string{req.Audience}
	}
	if req.ExpirationSeconds > 0 {
		tr.Spec.ExpirationSeconds = &req.ExpirationSeconds
	}
	out, err := m.cfg.Client.CoreV1().ServiceAccounts(req.Pod.Namespace).CreateToken(ctx, req.ServiceAccount, tr, metav1.CreateOptions{})
	if err != nil {
		return objects.Token{}, fmt.Errorf("request a token of service account %s/%s for pod %s: %w", req.Pod.Namespace, req.ServiceAccount, req.Pod.Name, err)
	}
	if out.Status.Token == "" {
		return objects.Token{}, fmt.Errorf("request a token of service account %s/%s for pod %s: the API server answered none", req.Pod.Namespace, req.ServiceAccount, req.Pod.Name)
	}
	return objects.Token{Token: out.Status.Token, Expires: out.Status.ExpirationTimestamp.Time}, nil
}

// claims are the JWT claims of a service account token that tell whether
// it can be used again.
type claims struct {
	Expires  int64    `json:"exp"`
	IssuedAt int64    `json:"iat"`
	Audience audience `json:"aud"`
	K8s      struct {
		Pod struct {
			UID string `json:"uid"`
		} `json:"pod"`
		ServiceAccount struct {
			Name string `json:"name"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// audience is the aud claim, a string or a list of them.
type audience []string

func (a *audience) UnmarshalJSON(data []byte) error {
	var one string
	if err := json.Unmarshal(data, &one); err == nil {
		*a = []string{one}
		return nil
	}
	var list []string
	if err := json.Unmarshal(data, &list); err != nil {
		return fmt.Errorf("aud: %w", err)
	}
	*a = list
	return nil
}

// reusable says whether req.Current can serve again: its claims (read, not
// verified: the API server verifies it) bind it to req's pod and service
// account, with req's audience, and it is not due for its refresh at now.
// Its lifetime is at most the one asked for (an API server that extends
// tokens' expiry still counts the lifetime asked for).
func reusable(req objects.TokenRequest, now time.Time) (tok objects.Token, issued time.Time, ok bool) {
	c, err := parseClaims(req.Current)
	if err != nil || c.Expires == 0 || c.IssuedAt == 0 {
		return objects.Token{}, time.Time{}, false
	}
	if c.K8s.Pod.UID != string(req.Pod.UID) || c.K8s.ServiceAccount.Name != req.ServiceAccount {
		return objects.Token{}, time.Time{}, false
	}
	if req.Audience != "" && !slices.Contains(c.Audience, req.Audience) {
		return objects.Token{}, time.Time{}, false
	}
	issued, expires := time.Unix(c.IssuedAt, 0), time.Unix(c.Expires, 0)
	if req.ExpirationSeconds > 0 {
		if asked := issued.Add(time.Duration(req.ExpirationSeconds) * time.Second); asked.Before(expires) {
			expires = asked
		}
	}
	if !now.Before(refreshTime(issued, expires)) {
		return objects.Token{}, time.Time{}, false
	}
	return objects.Token{Token: req.Current, Expires: expires}, issued, true
}

// parseClaims decodes a JWT's payload.
func parseClaims(jwt string) (claims, error) {
	parts := strings.Split(jwt, ".")
	if len(parts) != 3 {
		return claims{}, errors.New("not a JWT")
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return claims{}, fmt.Errorf("JWT payload: %w", err)
	}
	var c claims
	if err := json.Unmarshal(payload, &c); err != nil {
		return claims{}, fmt.Errorf("JWT payload: %w", err)
	}
	return c, nil
}
