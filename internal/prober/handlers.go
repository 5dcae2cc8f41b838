package prober

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podward/podward/internal/model"
)

// Execer runs exec probes in the container's context (the process
// runtime's Exec). It returns the command's output and exit code; err is
// for a command that could not run (or was cut off by ctx).
type Execer interface {
	Exec(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string) ([]byte, int, error)
}

// defaultHost is where httpGet, tcpSocket and grpc handlers connect when
// they name no host: containers share the host's network.
const defaultHost = "127.0.0.1"

// userAgent is sent by httpGet and grpc handlers unless a probe sets its
// own; it starts like the kubelet's so that servers that recognise probes
// recognise ours.
const userAgent = "kube-probe/podward"

// maxOutput caps a failed attempt's Output (it ends up in an event).
const maxOutput = 1024

// httpClient is shared by every httpGet handler. It keeps no idle
// connections to containers, does not use proxies, skips TLS verification
// (as the kubelet does for HTTPS probes) and follows redirects only on the
// same host: a redirect elsewhere counts as the 3xx it is (a success with a
// warning, see doHTTP).
var httpClient = &http.Client{
	Transport: &http.Transport{
		DisableKeepAlives:      true,
		DisableCompression:     true,
		TLSClientConfig:        &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // as the kubelet's probes
		MaxResponseHeaderBytes: 64 << 10,
	},
	CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Hostname() != via[0].URL.Hostname() {
			return http.ErrUseLastResponse
		}
		if len(via) >= 10 {
			return errors.New("stopped after 10 redirects")
		}
		return nil
	},
}

// HTTPGet runs an httpGet handler for container spec: a 2xx or 3xx answer
// is a success. The host defaults to 127.0.0.1, a named port is looked up
// in spec.Ports, and httpHeaders are sent (a Host header sets the request's
// host). ctx bounds the whole request; HTTPGet sets no timeout of its own.
func HTTPGet(ctx context.Context, spec *v1.Container, g *v1.HTTPGetAction) error {
	req, err := newHTTPRequest(spec, g)
	if err != nil {
		return err
	}
	_, err = doHTTP(req.WithContext(ctx))
	return err
}

// TCPSocket runs a tcpSocket handler for container spec: it succeeds when a
// connection to the port (by number, or by the name of one of spec.Ports)
// on the host (default 127.0.0.1) opens. The connection is closed at once,
// with a reset (see dial_linux.go). ctx bounds the dial; TCPSocket sets no
// timeout of its own.
func TCPSocket(ctx context.Context, spec *v1.Container, t *v1.TCPSocketAction) error {
	addr, err := address(spec, t.Host, t.Port)
	if err != nil {
		return err
	}
	target := newTCPTarget(addr)
	return dialTCP(ctx, &target)
}

// WithHost is g with host as its host when it names none: the handlers of a
// pod with a network of its own go to the pod's IP.
func WithHost(g *v1.HTTPGetAction, host string) *v1.HTTPGetAction {
	if g.Host != "" || host == "" {
		return g
	}
	cp := *g
	cp.Host = host
	return &cp
}

// newHTTPRequest builds the GET request of an httpGet handler, without a
// context. The request is only read by doHTTP, so a probe builds it once
// and sends a shallow copy with each attempt's context.
func newHTTPRequest(spec *v1.Container, g *v1.HTTPGetAction) (*http.Request, error) {
	addr, err := address(spec, g.Host, g.Port)
	if err != nil {
		return nil, err
	}
	scheme := strings.ToLower(string(g.Scheme))
	if scheme == "" {
		scheme = "http"
	}
	path := g.Path
	if !strings.HasPrefix(path, "/") {
		path = "/" + path
	}
	u, err := url.Parse(scheme + "://" + addr + path)
	if err != nil {
		return nil, fmt.Errorf("httpGet URL: %w", err)
	}
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, u.String(), nil) //nolint:contextcheck // a template: each send replaces the context
	if err != nil {
		return nil, fmt.Errorf("httpGet request: %w", err)
	}
	for _, h := range g.HTTPHeaders {
		if http.CanonicalHeaderKey(h.Name) == "Host" {
			req.Host = h.Value
			continue
		}
		req.Header.Add(h.Name, h.Value)
	}
	if _, ok := req.Header["User-Agent"]; !ok {
		req.Header.Set("User-Agent", userAgent)
	}
	if _, ok := req.Header["Accept"]; !ok {
		req.Header.Set("Accept", "*/*")
	} else if req.Header.Get("Accept") == "" {
		req.Header.Del("Accept")
	}
	return req, nil
}

// maxRedirectBody is how much of the body of a redirect that was not
// followed goes into its warning: the kubelet reads that much of a probe's
// answer (pkg/probe/http, maxRespBodyLength).
const maxRedirectBody = 10 << 10

// doHTTP sends req and judges the answer by its status code: 2xx and 3xx
// are a success. A 3xx is the answer of a redirect the client did not
// follow (to another host, see httpClient): a success with a warning, in
// the kubelet's words with the start of the answer's body
// (pkg/probe/http, DoHTTPProbe).
func doHTTP(req *http.Request) (warning string, err error) {
	resp, err := httpClient.Do(req)
	if err != nil {
		return "", err // *url.Error: `Get "http://…": dial tcp …: connection refused`
	}
	// With keep-alives off the body need not be drained.
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		return "", fmt.Errorf("GET %s returned HTTP %d", resp.Request.URL.Redacted(), resp.StatusCode)
	}
	if resp.StatusCode >= 300 {
		body, err := io.ReadAll(io.LimitReader(resp.Body, maxRedirectBody))
		if err != nil {
			return "", fmt.Errorf("GET %s: read the answer: %w", resp.Request.URL.Redacted(), err)
		}
		return "Probe terminated redirects, Response body: " + string(body), nil
	}
	return "", nil
}

var grpcOptions = []grpc.DialOption{
	grpc.WithTransportCredentials(insecure.NewCredentials()), // as the kubelet: no credentials
	grpc.WithUserAgent(userAgent),
}

// grpcCheck asks the gRPC health service at addr about service: only
// SERVING is a success. It opens a connection of its own and closes it.
func grpcCheck(ctx context.Context, addr, service string) error {
	conn, err := grpc.NewClient("passthrough:///"+addr, grpcOptions...)
	if err != nil {
		return fmt.Errorf("grpc client for %s: %w", addr, err)
	}
	defer func() { _ = conn.Close() }()
	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: service})
	if err != nil {
		if status.Code(err) == codes.Unimplemented {
			return fmt.Errorf("%s does not implement the grpc health protocol (grpc.health.v1.Health): %w", addr, err)
		}
		return fmt.Errorf("grpc health check of %s: %w", addr, err)
	}
	if s := resp.GetStatus(); s != healthpb.HealthCheckResponse_SERVING {
		return fmt.Errorf("service unhealthy (responded with %q)", s.String())
	}
	return nil
}

// address is host:port of a handler: the host defaults to 127.0.0.1 and a
// named port is one of the container's ports.
func address(spec *v1.Container, host string, p intstr.IntOrString) (string, error) {
	port, err := resolvePort(spec, p)
	if err != nil {
		return "", err
	}
	if host == "" {
		host = defaultHost
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// resolvePort turns a port number or the name of one of the container's
// ports into a number.
func resolvePort(spec *v1.Container, p intstr.IntOrString) (int, error) {
	port := -1
	if p.Type == intstr.Int {
		port = p.IntValue()
	} else {
		if spec != nil {
			for _, cp := range spec.Ports {
				if cp.Name == p.StrVal {
					port = int(cp.ContainerPort)
					break
				}
			}
		}
		if port < 0 {
			n, err := strconv.Atoi(p.StrVal)
			if err != nil {
				return 0, fmt.Errorf("port %q is not a port of the container", p.StrVal)
			}
			port = n
		}
	}
	if port < 1 || port > 65535 {
		return 0, fmt.Errorf("port %s is out of range 1-65535", p.String())
	}
	return port, nil
}

// handlerKind says which handler a probe runs.
type handlerKind int8

const (
	handlerExec handlerKind = iota + 1
	handlerHTTP
	handlerTCP
	handlerGRPC
)

// action is a probe's handler, prepared once when the container is added so
// that an attempt does no parsing or port lookups.
type action struct {
	kind    handlerKind
	cmd     []string
	req     *http.Request // a template without context
	tcp     tcpTarget     // tcpSocket
	addr    string        // grpc
	service string        // grpc
	// target names what the attempt talks to, for the Output of a timeout.
	target string
	// err, when set, fails every attempt: the handler cannot run.
	err error
}

// prepare builds the action of probe p of container spec. podIP, when
// set, is where network handlers without a host connect (a pod with a
// network of its own); else 127.0.0.1.
func prepare(spec *v1.Container, p *v1.Probe, podIP string) action {
	h := &p.ProbeHandler
	switch {
	case h.Exec != nil:
		return action{kind: handlerExec, cmd: h.Exec.Command, target: fmt.Sprintf("command %q", strings.Join(h.Exec.Command, " "))}
	case h.HTTPGet != nil:
		req, err := newHTTPRequest(spec, WithHost(h.HTTPGet, podIP))
		if err != nil {
			return action{kind: handlerHTTP, err: err}
		}
		return action{kind: handlerHTTP, req: req, target: "GET " + req.URL.Redacted()}
	case h.TCPSocket != nil:
		addr, err := address(spec, cmp.Or(h.TCPSocket.Host, podIP), h.TCPSocket.Port)
		return action{kind: handlerTCP, tcp: newTCPTarget(addr), target: "dial tcp " + addr, err: err}
	case h.GRPC != nil:
		addr, err := address(spec, podIP, intstr.FromInt32(h.GRPC.Port))
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		return action{kind: handlerGRPC, addr: addr, service: service, target: "grpc health check of " + addr, err: err}
	default:
		return action{err: errors.New("the probe has no handler: set exec, httpGet, tcpSocket or grpc")}
	}
}

// run makes one attempt: ok (with a warning when it succeeded with one,
// see doHTTP), or the reason it failed. ctx ends at the attempt's deadline
// (with cause errTimeout) or when the probe is removed.
func (a *action) run(ctx context.Context, ex Execer, pod *model.Pod, ref model.ContainerRef, timeout time.Duration) (ok bool, output, warning string) {
	if a.err != nil {
		return false, a.err.Error(), ""
	}
	var err error
	switch a.kind {
	case handlerExec:
		if ex == nil {
			return false, "exec probes are not supported here", ""
		}
		var out []byte
		var code int
		out, code, err = ex.Exec(ctx, pod, ref, a.cmd)
		if err == nil && code != 0 {
			if s := strings.TrimSpace(string(out)); s != "" {
				return false, truncate(s), ""
			}
			return false, fmt.Sprintf("%s exited with code %d", a.target, code), ""
		}
	case handlerHTTP:
		warning, err = doHTTP(a.req.WithContext(ctx))
	case handlerTCP:
		err = dialTCP(ctx, &a.tcp)
	case handlerGRPC:
		err = grpcCheck(ctx, a.addr, a.service)
	}
	if err == nil {
		return true, "", warning
	}
	if errors.Is(context.Cause(ctx), errTimeout) {
		return false, fmt.Sprintf("%s timed out after %s", a.target, timeout), ""
	}
	return false, truncate(err.Error()), ""
}

func truncate(s string) string {
	if len(s) <= maxOutput {
		return s
	}
	return s[:maxOutput] + "…"
}
