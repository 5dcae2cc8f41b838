package cluster

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"

	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/httplimit"
)

// Who may use the kubelet API, decided as the kubelet decides it with its
// configuration file's defaults (kubelet 1.37: cmd/kubelet/app/auth.go,
// pkg/kubelet/server/auth.go and the filter in pkg/kubelet/server/server.go):
//
//	request ─► authenticate ──────────────────► attributes ─► authorize ─────────────────► handler
//	           1. client certificate of the                   verb from the method, the      allowed by one
//	              client CA: user CN, groups O                nodes subresources the path    of the
//	           2. bearer token: TokenReview                   needs (requestAttributes)      subresources
//	              (accepted cached 2 min, refused 30 s;       Webhook: SubjectAccessReview
//	              at most 8 in flight, else 429)              (allowed cached 5 min,
//	           3. anonymous, with AllowAnonymous              refused 30 s); AlwaysAllow
//	           none of them: 401                              refused: 403; no answer: 500
//
// Each request gets one audit line (user, groups, verb, path, decision)
// once it is decided, before it is served.

// AuthorizationMode is how the kubelet API authorizes an authenticated
// request: the kubelet's --authorization-mode.
type AuthorizationMode int

const (
	// AuthorizationWebhook asks the API server whether the user may do
	// the verb on the node's subresource (a SubjectAccessReview, so RBAC
	// decides), as the kubelet does by default. The zero value of
	// KubeletServerConfig.Authorization means it.
	AuthorizationWebhook AuthorizationMode = iota + 1
	// AuthorizationAlwaysAllow lets every authenticated client do
	// anything the server serves.
	AuthorizationAlwaysAllow
)

func (m AuthorizationMode) String() string {
	switch m {
	case AuthorizationWebhook:
		return "Webhook"
	case AuthorizationAlwaysAllow:
		return "AlwaysAllow"
	default:
		return fmt.Sprintf("AuthorizationMode(%d)", int(m))
	}
}

// ParseAuthorizationMode reads a mode by the kubelet's name for it:
// "Webhook" or "AlwaysAllow".
func ParseAuthorizationMode(s string) (AuthorizationMode, error) {
	for _, m := range []AuthorizationMode{AuthorizationWebhook, AuthorizationAlwaysAllow} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("unknown authorization mode %q (want Webhook or AlwaysAllow)", s)
}

// The kubelet's cache lifetimes (its configuration's defaults,
// pkg/kubelet/apis/config/v1beta1/defaults.go) and the cache sizes, which
// bound the memory the caches take whatever clients send.
const (
	tokenCacheTTL        = 2 * time.Minute
	authorizedCacheTTL   = 5 * time.Minute
	unauthorizedCacheTTL = 30 * time.Second
	tokenCacheSize       = 4096
	// A token the API server refused is kept as refused as long as the
	// kubelet keeps a refused authorization (its cacheUnauthorizedTTL),
	// long enough that a client retrying it costs one review in 30 s,
	// short enough that a token just issued (a projected service account
	// token asked for before the API server knew it) is not refused for
	// long. Its own cache, so that refused tokens never evict accepted
	// ones.
	refusedTokenCacheTTL  = unauthorizedCacheTTL
	refusedTokenCacheSize = 4096
	// maxTokenReviews bounds the TokenReviews in flight: a flood of
	// made-up tokens costs the API server at most this many at once (the
	// node's client is also limited to 50 QPS, burst 100, shared with
	// everything else the node asks); a token that waits longer than
	// tokenReviewSlotWait for a slot gets a 429 without a review.
	maxTokenReviews     = 8
	tokenReviewSlotWait = time.Second
	// reviewCacheSize is the API server's webhook authorizer's.
	reviewCacheSize = 8192
	// reviewTimeout bounds each TokenReview and SubjectAccessReview.
	reviewTimeout = 10 * time.Second
)

// The API server's names for users and groups.
const (
	userAnonymous      = "system:anonymous"
	groupUnauthentic   = "system:unauthenticated"
	groupAuthenticated = "system:authenticated"
	// credentialIDKey is the extra that names the credential used: the
	// certificate's SHA-256 for a client certificate.
	credentialIDKey = "authentication.kubernetes.io/credential-id"
)

// kubeletUser is who made a request, named as the API server names users
// (its user.Info): what a SubjectAccessReview asks about.
type kubeletUser struct {
	name, uid string
	groups    []string
	extra     map[string]authorizationv1.ExtraValue
}

// authenticate names the client of r: by its verified client certificate,
// else its bearer token (when TokenReviews is set), else anonymous when
// AllowAnonymous is set. nil is a client none of them accepted (401); err
// says why, when something failed rather than refused.
func (s *KubeletServer) authenticate(r *http.Request) (*kubeletUser, error) {
	if r.TLS != nil && len(r.TLS.VerifiedChains) > 0 && len(r.TLS.VerifiedChains[0]) > 0 {
		// A certificate without a common name names no one: the API
		// server's x509 authenticator passes it on too.
		if leaf := r.TLS.VerifiedChains[0][0]; leaf.Subject.CommonName != "" {
			sum := sha256.Sum256(leaf.Raw)
			return withAuthenticated(&kubeletUser{
				name:   leaf.Subject.CommonName,
				groups: slices.Clone(leaf.Subject.Organization),
				extra:  map[string]authorizationv1.ExtraValue{credentialIDKey: {"X509SHA256=" + hex.EncodeToString(sum[:])}},
			}), nil
		}
	}
	if token, ok := bearerToken(r); ok && s.tokens != nil {
		u, err := s.tokens.authenticate(r.Context(), token)
		if err != nil {
			// As the kubelet: an error is a 401, never anonymous.
			return nil, err
		}
		if u != nil {
			// As the API server: the token goes no further.
			r.Header.Del("Authorization")
			return withAuthenticated(u), nil
		}
	}
	if s.cfg.AllowAnonymous {
		return &kubeletUser{name: userAnonymous, groups: []string{groupUnauthentic}}, nil
	}
	return nil, nil
}

// withAuthenticated adds system:authenticated to the groups of u, as the
// API server does for every user but the anonymous one (whatever
// credential names it) and one already in either group.
func withAuthenticated(u *kubeletUser) *kubeletUser {
	if u.name == userAnonymous || slices.Contains(u.groups, groupAuthenticated) || slices.Contains(u.groups, groupUnauthentic) {
		return u
	}
	u.groups = append(u.groups, groupAuthenticated)
	return u
}

// bearerToken is the token of r's "Authorization: Bearer" header, if any.
func bearerToken(r *http.Request) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(r.Header.Get("Authorization")), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// tokenAuthenticator asks the API server who a bearer token belongs to (a
// TokenReview), as the kubelet's webhook authentication does, and keeps
// the answers a while. Safe for concurrent use.
//
// It is bounded whatever clients send: at most cap(slots) reviews are in
// flight, a token that waits longer than slotWait for one is not reviewed
// (errTooManyReviews), and the answers are kept in two caches of fixed
// sizes, so that a flood of made-up tokens (each refused once, then kept
// as refused) can neither evict the accepted tokens nor queue reviews
// ahead of a token already known.
type tokenAuthenticator struct {
	client tokenReviewer
	// timers time the wait for a slot.
	timers clock.Clock
	// accepted maps a token's SHA-256 (never the token) to its
	// *kubeletUser for acceptedTTL; refused maps it to struct{} for
	// refusedTTL.
	accepted, refused       *utilcache.LRUExpireCache
	acceptedTTL, refusedTTL time.Duration
	// slots holds one value per review in flight.
	slots    chan struct{}
	slotWait time.Duration
}

// tokenReviewer is what tokenAuthenticator needs of the API server's
// TokenReviews.
type tokenReviewer interface {
	Create(ctx context.Context, tr *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// errTooManyReviews is a token not reviewed because the reviews in flight
// were at their cap for longer than the wait: 429, without a review.
var errTooManyReviews = errors.New("too many token reviews in flight")

// newTokenAuthenticator asks client, with the cache lifetimes and bounds
// of the constants, the caches on c; the wait for a slot is timed by c's
// timers when it is a clock.Clock, else by the real clock's.
func newTokenAuthenticator(client tokenReviewer, c clock.PassiveClock) *tokenAuthenticator {
	timers, ok := c.(clock.Clock)
	if !ok {
		timers = clock.RealClock{}
	}
	return &tokenAuthenticator{
		client:      client,
		timers:      timers,
		accepted:    utilcache.NewLRUExpireCacheWithClock(tokenCacheSize, c),
		refused:     utilcache.NewLRUExpireCacheWithClock(refusedTokenCacheSize, c),
		acceptedTTL: tokenCacheTTL,
		refusedTTL:  refusedTokenCacheTTL,
		slots:       make(chan struct{}, maxTokenReviews),
		slotWait:    tokenReviewSlotWait,
	}
}

// authenticate is the user of token, nil if the API server did not
// accept it. Its error is a review that failed or was not made
// (errTooManyReviews); it is not kept.
func (a *tokenAuthenticator) authenticate(ctx context.Context, token string) (*kubeletUser, error) {
	sum := sha256.Sum256([]byte(token))
	key := string(sum[:])
	if v, ok := a.accepted.Get(key); ok {
		return v.(*kubeletUser).clone(), nil
	}
	if _, ok := a.refused.Get(key); ok {
		return nil, nil
	}
	if err := a.acquire(ctx); err != nil {
		return nil, err
	}
	defer func() { <-a.slots }()
	u, err := a.review(ctx, token)
	if err != nil {
		return nil, err
	}
	if u == nil {
		a.refused.Add(key, struct{}{}, a.refusedTTL)
		return nil, nil
	}
	a.accepted.Add(key, u, a.acceptedTTL)
	return u.clone(), nil
}

// acquire takes a review slot, waiting at most slotWait for one.
func (a *tokenAuthenticator) acquire(ctx context.Context) error {
	select {
	case a.slots <- struct{}{}:
		return nil
	default:
	}
	t := a.timers.NewTimer(a.slotWait)
	defer t.Stop()
	select {
	case a.slots <- struct{}{}:
		return nil
	case <-t.C():
		return errTooManyReviews
	case <-ctx.Done():
		return fmt.Errorf("wait for a token review: %w", ctx.Err())
	}
}

// review asks the API server about token: its user, nil if not accepted.
func (a *tokenAuthenticator) review(ctx context.Context, token string) (*kubeletUser, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	res, err := a.client.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("token review: %w", err)
	}
	st := res.Status
	if !st.Authenticated || st.User.Username == "" {
		return nil, nil
	}
	u := &kubeletUser{name: st.User.Username, uid: st.User.UID, groups: st.User.Groups}
	for k, v := range st.User.Extra {
		if u.extra == nil {
			u.extra = map[string]authorizationv1.ExtraValue{}
		}
		u.extra[k] = authorizationv1.ExtraValue(v)
	}
	return u, nil
}

// clone is a copy of u the caller may change (withAuthenticated appends
// to its groups); nil for nil.
func (u *kubeletUser) clone() *kubeletUser {
	if u == nil {
		return nil
	}
	c := *u
	c.groups = slices.Clone(u.groups)
	return &c
}

// The kubelet's names of the nodes subresources a path needs, and its
// paths (pkg/kubelet/server/server.go, and the healthz, configz, statusz
// and flagz paths of k8s.io/apiserver and k8s.io/component-base).
var (
	// pathSubresources are the paths with a subresource of their own,
	// matched in order; any other path needs only proxy.
	pathSubresources = []struct{ path, subresource string }{
		{"/stats", "stats"},
		{"/metrics", "metrics"},
		{"/logs", "log"},
		{"/checkpoint", "checkpoint"},
		{"/statusz", "statusz"},
		{"/flagz", "configz"},
	}
	// fineGrainedSubresources may be used instead of proxy on their paths
	// (KubeletFineGrainedAuthz, locked on since 1.36).
	fineGrainedSubresources = []struct{ path, subresource string }{
		{"/allocatedPods", "pods"},
		{"/pods", "pods"},
		{"/healthz", "healthz"},
		{"/configz", "configz"},
		{"/runningpods", "pods"},
	}
	methodVerbs = map[string]string{
		http.MethodPost:   "create",
		http.MethodGet:    "get",
		http.MethodPut:    "update",
		http.MethodPatch:  "patch",
		http.MethodDelete: "delete",
	}
)

// requestAttributes are what a request of method on path needs: the verb
// ("" for a method without one, HEAD among them) on one of subresources of
// the node, the first that allows it winning. It is the kubelet's
// nodeAuthorizerAttributesGetter: /containerLogs (and exec, attach,
// port-forward, run, anything not listed) needs nodes/proxy; /logs is the
// node's own logs, nodes/log; /healthz takes nodes/healthz or nodes/proxy.
func requestAttributes(method, path string) (verb string, subresources []string) {
	for _, p := range fineGrainedSubresources {
		if isSubpath(path, p.path) {
			subresources = append(subresources, p.subresource)
			break
		}
	}
	sub := "proxy"
	for _, p := range pathSubresources {
		if isSubpath(path, p.path) {
			sub = p.subresource
			break
		}
	}
	return methodVerbs[method], append(subresources, sub)
}

// isSubpath reports whether path is base or below it.
func isSubpath(path, base string) bool {
	rest, ok := strings.CutPrefix(path, base)
	return ok && (rest == "" || rest[0] == '/')
}

// authorizer decides whether a user may do a verb on a subresource of the
// node: the kubelet's authorizer. Implementations are safe for concurrent
// use; ctx is the request's.
type authorizer interface {
	// authorize returns whether u may, and the reason given if any. An
	// error is that no decision could be made.
	authorize(ctx context.Context, u *kubeletUser, verb, subresource string) (allowed bool, reason string, err error)
}

var (
	_ authorizer = alwaysAllow{}
	_ authorizer = (*reviewAuthorizer)(nil)
)

// alwaysAllow is AuthorizationAlwaysAllow.
type alwaysAllow struct{}

func (alwaysAllow) authorize(context.Context, *kubeletUser, string, string) (bool, string, error) {
	return true, "", nil
}

// reviewAuthorizer is AuthorizationWebhook: it asks the API server with a
// SubjectAccessReview about the node, and keeps the answers (allowed for
// allowTTL, refused for denyTTL; failures not at all).
type reviewAuthorizer struct {
	client            authorizationclient.SubjectAccessReviewInterface
	node              string
	allowTTL, denyTTL time.Duration
	// cache maps a review's spec (JSON) to its status.
	cache *utilcache.LRUExpireCache
}

func (a *reviewAuthorizer) authorize(ctx context.Context, u *kubeletUser, verb, subresource string) (bool, string, error) {
	spec := authorizationv1.SubjectAccessReviewSpec{
		User: u.name, UID: u.uid, Groups: u.groups, Extra: u.extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: verb, Version: "v1", Resource: "nodes", Subresource: subresource, Name: a.node,
		},
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	key := string(b)
	if v, ok := a.cache.Get(key); ok {
		return reviewDecision(v.(authorizationv1.SubjectAccessReviewStatus))
	}
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()
	res, err := a.client.Create(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		return false, "", fmt.Errorf("subject access review: %w", err)
	}
	ttl := a.denyTTL
	if res.Status.Allowed {
		ttl = a.allowTTL
	}
	a.cache.Add(key, res.Status, ttl)
	return reviewDecision(res.Status)
}

// reviewDecision reads a review's answer: no opinion is a refusal, as the
// API server's is the only opinion asked for.
func reviewDecision(st authorizationv1.SubjectAccessReviewStatus) (bool, string, error) {
	reason := st.Reason
	if st.EvaluationError != "" {
		reason = strings.TrimPrefix(reason+"; "+st.EvaluationError, "; ")
	}
	if st.Allowed && st.Denied {
		return false, reason, errors.New("subject access review: both allowed and denied")
	}
	return st.Allowed && !st.Denied, reason, nil
}

// The decisions of the audit log.
const (
	decisionAllowed         = "allowed"
	decisionForbidden       = "forbidden"
	decisionUnauthenticated = "unauthenticated"
	decisionError           = "error"
	// decisionThrottled is a bearer token not reviewed: too many reviews
	// in flight (429).
	decisionThrottled = "throttled"
)

// guard authenticates and authorizes each request before next serves it,
// and writes its audit line: 401 for a client no authenticator accepted,
// 429 for a bearer token not reviewed for the reviews in flight
// (tokenAuthenticator), 403 (with the kubelet's message) for one no
// subresource allows, 500 for a decision that could not be made.
func (s *KubeletServer) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb, subresources := requestAttributes(r.Method, r.URL.Path)
		audit := func(u *kubeletUser, decision string, args ...any) {
			name, groups := "", []string(nil)
			if u != nil {
				name, groups = u.name, u.groups
			}
			s.audit.Info("kubelet API request", append([]any{
				"user", name, "groups", groups, "verb", verb, "path", r.URL.Path,
				"subresources", subresources, "decision", decision, "remote", r.RemoteAddr,
			}, args...)...)
		}
		u, err := s.authenticate(r)
		if errors.Is(err, errTooManyReviews) {
			audit(nil, decisionThrottled, "err", err)
			httplimit.CloseAfter(w)
			w.Header().Set("Retry-After", "1")
			writeText(w, http.StatusTooManyRequests, "Too many requests, please try again later.\n")
			return
		}
		if u == nil {
			if err != nil {
				audit(nil, decisionUnauthenticated, "err", err)
			} else {
				audit(nil, decisionUnauthenticated)
			}
			// The client cannot keep a connection it has no right to.
			httplimit.CloseAfter(w)
			writeText(w, http.StatusUnauthorized, "Unauthorized\n")
			return
		}
		// The connection moves to the authenticated clients' pool.
		httplimit.Authenticated(r.Context())
		var refusal string
		for _, sub := range subresources {
			allowed, reason, err := s.authz.authorize(r.Context(), u, verb, sub)
			if err != nil {
				audit(u, decisionError, "err", err)
				writeText(w, http.StatusInternalServerError,
					fmt.Sprintf("Authorization error (user=%s, verb=%s, resource=nodes, subresource=%s)", u.name, verb, sub))
				return
			}
			if allowed {
				audit(u, decisionAllowed, "subresource", sub, "reason", reason)
				next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), userKey{}, u)))
				return
			}
			refusal = reason
		}
		audit(u, decisionForbidden, "reason", refusal)
		writeText(w, http.StatusForbidden,
			fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource(s)=%v)\n", u.name, verb, subresources))
	})
}

// writeText answers with code and msg as plain text.
func writeText(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(msg))
}

// userKey is the context key of the *kubeletUser of an authorized request.
type userKey struct{}

// clientUser names the client of an authorized request r for the log.
func clientUser(r *http.Request) string {
	if u, ok := r.Context().Value(userKey{}).(*kubeletUser); ok {
		return u.name
	}
	return ""
}
