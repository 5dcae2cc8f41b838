package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	utilcache "k8s.io/apimachinery/pkg/util/cache"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/httplimit"
)

// The kubelet's HTTPS server, the part of it that podward serves: the API
// server connects to it (at the node's address and
// status.daemonEndpoints.kubeletEndpoint.Port) to stream a container's log
// for `kubectl logs`, and a container's exec or a pod's port-forward for
// `kubectl exec`, `kubectl port-forward` and `kubectl cp`.
//
//	GET /containerLogs/{namespace}/{pod}/{container}   the log, text/plain
//	GET|POST /exec/{namespace}/{pod}/{container}       an exec (KubeletServerConfig.Streams; see handleStreams)
//	GET|POST /portForward/{namespace}/{pod}            port-forwards
//	POST /run/{namespace}/{pod}/{container}            a command's output
//	GET|POST /attach/{namespace}/{pod}/{container}     an attach (as exec)
//	GET /healthz                                       "ok"
//	GET /metrics                                       the agent's metrics (KubeletServerConfig.Metrics)
//	GET /stats/summary, /metrics/resource              the usage (KubeletServerConfig.Stats; kubeletserver_stats.go)
//
// Anything else is 404 (the kubelet's /metrics/cadvisor and /metrics/probes
// are not served).
//
// Authentication is by client certificate, as the kubelet's
// --client-ca-file: the API server presents its --kubelet-client-certificate,
// which the cluster CA signed. A certificate the CA did not sign fails the
// TLS handshake. A bearer token is asked about with a TokenReview, as the
// kubelet's webhook authentication (on by default in its configuration
// file) does. A client with neither gets 401.
//
// Authorization is the kubelet's --authorization-mode: Webhook by default,
// a SubjectAccessReview to the API server for the node's subresource the
// path needs (nodes/proxy for /containerLogs, either nodes/healthz or
// nodes/proxy for /healthz, nodes/metrics for /metrics), 403 when refused;
// AlwaysAllow only when asked for. See kubeletserver_auth.go.

// Names of the self-signed serving certificate and its key in
// KubeletServerConfig.CertDir, the kubelet's.
const (
	SelfSignedCertFile = "kubelet.crt"
	SelfSignedKeyFile  = "kubelet.key"
)

// LogSource finds container logs for the server. *agent.Agent implements
// it.
type LogSource interface {
	// LogPath is the CRI log file of the current (or, with previous, the
	// previous) instance of a container of pod ns/name. Its errors match
	// agent.ErrNotFound for an unknown pod (404); an unknown container or
	// no previous instance is an *agent.BadRequestError (400, with its
	// Message).
	LogPath(ns, name, container string, previous bool) (string, error)
}

var _ LogSource = (*agent.Agent)(nil)

// LogEnds is an optional ability of a LogSource: knowing when a container
// instance is done writing its log, so that `kubectl logs -f` ends when the
// container does, as with the kubelet. Without it, following a log ends
// only when the client goes away (kubectl is interrupted) or the server
// stops.
type LogEnds interface {
	// LogEnded returns a channel that is closed once the container
	// instance whose log is path (as LogPath returned it for ns/name's
	// container) has exited and its log is closed; at once if it already
	// has. It need not be closed once ctx (the request's) is done, and
	// must release what it holds then.
	LogEnded(ctx context.Context, ns, name, container, path string) <-chan struct{}
}

// KubeletServerConfig is what a KubeletServer needs. Logs is required; a
// client CA (or an explicit AllowAnonymous) too, and SubjectAccessReviews
// unless Authorization is AuthorizationAlwaysAllow.
type KubeletServerConfig struct {
	// Logs finds the log files; it may implement LogEnds.
	Logs LogSource
	// Streams, when set, serves exec, attach, port-forward and run
	// (handleStreams); without it those paths are 404.
	Streams Streams
	// Metrics, when set, serves GET /metrics (the Prometheus handler),
	// authorized as the kubelet's: nodes/metrics.
	Metrics http.Handler
	// Stats, when set, serves the usage: GET /stats/summary (nodes/stats)
	// and GET /metrics/resource (nodes/metrics); see kubeletserver_stats.go.
	Stats StatsSource
	// Address is the IP to listen on; "" for all.
	Address string
	// Port defaults to DefaultKubeletPort, 10250.
	Port int32

	// TLSCertFile and TLSPrivateKeyFile are the serving certificate (with
	// its chain) and key, PEM, as the kubelet's --tls-cert-file and
	// --tls-private-key-file. When both are empty, a self-signed
	// certificate for NodeName and Addresses is used, kept in CertDir.
	TLSCertFile       string
	TLSPrivateKeyFile string
	// CertDir holds the self-signed certificate (kubelet.crt,
	// kubelet.key), so that a restart serves the same one; it is made
	// again when it expired or does not name the node and its addresses.
	CertDir   string
	NodeName  string
	Addresses []v1.NodeAddress

	// ClientCAFile is the PEM bundle of the CAs whose client certificates
	// are accepted, the kubelet's --client-ca-file: the cluster's CA,
	// which signed the API server's --kubelet-client-certificate.
	ClientCAFile string
	// AllowAnonymous takes clients without credentials for the user
	// system:anonymous (group system:unauthenticated), authorized like
	// any other: the kubelet's --anonymous-auth. Without a ClientCAFile
	// the server refuses to start unless it is set. With
	// AuthorizationAlwaysAllow, anyone who reaches the port reads every
	// container's log: for development only.
	AllowAnonymous bool
	// TokenReviews, when set, authenticates bearer tokens by asking the
	// API server (the kubelet's --authentication-token-webhook).
	TokenReviews authenticationclient.TokenReviewInterface

	// Authorization is how an authenticated request is authorized; zero
	// is AuthorizationWebhook.
	Authorization AuthorizationMode
	// SubjectAccessReviews asks the API server (AuthorizationWebhook).
	SubjectAccessReviews authorizationclient.SubjectAccessReviewInterface
	// AuditLogger gets one line per request: who, what, and the decision.
	// Default Logger.
	AuditLogger *slog.Logger

	// Limits bound the server's connections; zero is the kubelet's
	// (httplimit.Kubelet): idle 90 s, a request and its response 4 h
	// (exec, attach and port-forward leave the deadlines when they take
	// the connection over; `logs -f` ends after 4 h as the kubelet's),
	// and at most httplimit.DefaultMaxConns connections at once, of which
	// connections that have not authenticated hold at most
	// httplimit.DefaultMaxUnauthenticated (the oldest closed for a new
	// one): idle clients without credentials cannot lock out those with.
	Limits httplimit.Limits

	// Clock gives now for sinceSeconds, the certificate's validity and
	// the lifetimes of the review caches; default the real clock. When it
	// is a clock.Clock, its timers also time the wait for a TokenReview
	// (the real clock's otherwise).
	Clock  clock.PassiveClock
	Logger *slog.Logger
}

// KubeletServer serves the kubelet's HTTPS API (container logs) to the API
// server. Its methods are safe for concurrent use.
type KubeletServer struct {
	cfg     KubeletServerConfig
	log     *slog.Logger
	audit   *slog.Logger
	tls     *tls.Config
	handler http.Handler
	// tokens is nil without TokenReviews.
	tokens *tokenAuthenticator
	authz  authorizer
}

// NewKubeletServer loads or makes the serving certificate and loads the
// client CAs. It fails without a ClientCAFile unless AllowAnonymous is set,
// and in AuthorizationWebhook mode without SubjectAccessReviews and a
// NodeName.
func NewKubeletServer(cfg KubeletServerConfig) (*KubeletServer, error) {
	if cfg.Logs == nil {
		return nil, errors.New("kubelet server: no log source")
	}
	if cfg.ClientCAFile == "" && !cfg.AllowAnonymous {
		return nil, errors.New("kubelet server: no client CA file: every client would be anonymous; give the cluster's CA, or allow anonymous clients explicitly")
	}
	if cfg.Port == 0 {
		cfg.Port = DefaultKubeletPort
	}
	if cfg.Authorization == 0 {
		cfg.Authorization = AuthorizationWebhook
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AuditLogger == nil {
		cfg.AuditLogger = cfg.Logger
	}
	s := &KubeletServer{cfg: cfg, log: cfg.Logger, audit: cfg.AuditLogger}
	var err error
	if s.authz, err = newAuthorizer(cfg); err != nil {
		return nil, fmt.Errorf("kubelet server: %w", err)
	}
	if cfg.TokenReviews != nil {
		s.tokens = newTokenAuthenticator(cfg.TokenReviews, cfg.Clock)
	}

	cert, err := s.servingCert()
	if err != nil {
		return nil, fmt.Errorf("kubelet server: %w", err)
	}
	s.tls = &tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{cert},
		ClientAuth:   tls.NoClientCert,
	}
	if cfg.ClientCAFile != "" {
		pool, err := loadCAs(cfg.ClientCAFile)
		if err != nil {
			return nil, fmt.Errorf("kubelet server: client CA: %w", err)
		}
		s.tls.ClientCAs = pool
		// A certificate is verified when given; without one, a client
		// may have a token, or get a 401 (unless anonymous is allowed),
		// which says more than a failed handshake.
		s.tls.ClientAuth = tls.VerifyClientCertIfGiven
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", s.containerLogs)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte("ok"))
	})
	if cfg.Metrics != nil {
		mux.Handle("GET /metrics", cfg.Metrics)
	}
	if cfg.Streams != nil {
		s.handleStreams(mux, cfg.Streams)
	}
	s.handleStats(mux)
	mux.HandleFunc("/", http.NotFound)
	s.handler = s.guard(mux)
	return s, nil
}

// newAuthorizer is the authorizer of cfg.Authorization.
func newAuthorizer(cfg KubeletServerConfig) (authorizer, error) {
	switch cfg.Authorization {
	case AuthorizationWebhook:
		if cfg.SubjectAccessReviews == nil || cfg.NodeName == "" {
			return nil, errors.New("authorization mode Webhook needs the API server's SubjectAccessReviews and the node's name")
		}
		return &reviewAuthorizer{
			client: cfg.SubjectAccessReviews, node: cfg.NodeName,
			allowTTL: authorizedCacheTTL, denyTTL: unauthorizedCacheTTL,
			cache: utilcache.NewLRUExpireCacheWithClock(reviewCacheSize, cfg.Clock),
		}, nil
	case AuthorizationAlwaysAllow:
		return alwaysAllow{}, nil
	default:
		return nil, fmt.Errorf("unknown authorization mode %v", cfg.Authorization)
	}
}

// loadCAs reads a PEM bundle of CA certificates.
func loadCAs(path string) (*x509.CertPool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, fmt.Errorf("%s: no PEM certificate", path)
	}
	return pool, nil
}

// Handler is the server's HTTP handler. It expects requests that came over
// TLS configured with TLSConfig: it authenticates them by their verified
// client certificate (or bearer token) and authorizes them.
func (s *KubeletServer) Handler() http.Handler { return s.handler }

// TLSConfig is the server's TLS configuration: its certificate and the
// client CAs. The caller owns the returned copy.
func (s *KubeletServer) TLSConfig() *tls.Config { return s.tls.Clone() }

// Addr is where ListenAndServe listens.
func (s *KubeletServer) Addr() string {
	return net.JoinHostPort(s.cfg.Address, strconv.Itoa(int(s.cfg.Port)))
}

// ListenAndServe listens on Addr and serves until ctx ends; see Serve.
func (s *KubeletServer) ListenAndServe(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.Addr())
	if err != nil {
		return fmt.Errorf("kubelet server: %w", err)
	}
	return s.Serve(ctx, ln)
}

// limits are the configured Limits, or the kubelet's with
// httplimit.DefaultMaxUnauthenticated of its connections for clients that
// have not authenticated.
func (s *KubeletServer) limits() httplimit.Limits {
	if s.cfg.Limits == (httplimit.Limits{}) {
		l := httplimit.Kubelet()
		l.MaxUnauthenticated = httplimit.DefaultMaxUnauthenticated
		return l
	}
	return s.cfg.Limits
}

// shutdownGrace bounds how long Serve waits for requests in flight once
// its ctx is done; streams (follow) end at once, their ctx being
// cancelled.
const shutdownGrace = 5 * time.Second

// Serve serves HTTPS on ln until ctx ends, then stops: streams in flight
// are cancelled and the others are given a few seconds. It closes ln, and
// returns nil after a shutdown for ctx, the error of the listener
// otherwise.
func (s *KubeletServer) Serve(ctx context.Context, ln net.Listener) error {
	reqCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	srv := &http.Server{
		Handler:     s.handler,
		TLSConfig:   s.TLSConfig(),
		BaseContext: func(net.Listener) context.Context { return reqCtx },
		// Failed handshakes (a client certificate of another CA, say)
		// are only told here.
		ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelInfo),
	}
	s.limits().Apply(srv)
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(s.limits().Listener(ln), "", "") }()
	s.log.Info("kubelet server listening", "addr", ln.Addr().String())
	select {
	case err := <-errc:
		return fmt.Errorf("kubelet server: %w", err)
	case <-ctx.Done():
	}
	cancelRequests()
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	if err != nil {
		_ = srv.Close()
		return fmt.Errorf("kubelet server: shutdown: %w", err)
	}
	return nil
}
