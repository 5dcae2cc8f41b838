package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/podward/podward/internal/model"
)

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// portOf is the port of a listener or server address "127.0.0.1:port".
func portOf(t *testing.T, addr string) int {
	t.Helper()
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// closedPort is a port on 127.0.0.1 that nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := portOf(t, l.Addr().String())
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return port
}

func TestHTTPGet(t *testing.T) {
	type request struct {
		path   string
		host   string
		header http.Header
	}
	requests := make(chan request, 100)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests <- request{path: r.URL.Path, host: r.Host, header: r.Header.Clone()}
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/no-content":
			w.WriteHeader(http.StatusNoContent)
		case "/found":
			http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
		case "/found-here":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/found-broken":
			http.Redirect(w, r, "/fail", http.StatusFound)
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	}))
	defer srv.Close()
	port := portOf(t, srv.Listener.Addr().String())
	spec := &v1.Container{Name: "web", Ports: []v1.ContainerPort{{Name: "metrics", ContainerPort: 1}, {Name: "http", ContainerPort: int32(port)}}}

	tests := map[string]struct {
		path    string
		port    intstr.IntOrString
		wantErr string // empty: success
	}{
		"200":                              {path: "/ok", port: intstr.FromInt(port)},
		"204":                              {path: "/no-content", port: intstr.FromInt(port)},
		"302 elsewhere is not followed":    {path: "/found", port: intstr.FromInt(port)},
		"302 on the same host is followed": {path: "/found-here", port: intstr.FromInt(port)},
		"302 to a failing page":            {path: "/found-broken", port: intstr.FromInt(port), wantErr: "/fail returned HTTP 500"},
		"404":                              {path: "/missing", port: intstr.FromInt(port), wantErr: "returned HTTP 404"},
		"500":                              {path: "/fail", port: intstr.FromInt(port), wantErr: "GET " + srv.URL + "/fail returned HTTP 500"},
		"named port":                       {path: "/ok", port: intstr.FromString("http")},
		"path without slash":               {path: "ok", port: intstr.FromInt(port)},
		"unknown named port":               {path: "/ok", port: intstr.FromString("nope"), wantErr: `port "nope" is not a port of the container`},
		"port out of range":                {path: "/ok", port: intstr.FromInt(70000), wantErr: "out of range"},
		"connection refused":               {path: "/ok", port: intstr.FromInt(closedPort(t)), wantErr: "connection refused"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := HTTPGet(testContext(t), spec, &v1.HTTPGetAction{Path: tc.path, Port: tc.port, Scheme: v1.URISchemeHTTP})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("HTTPGet = %v, want success", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("HTTPGet = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}

	t.Run("headers", func(t *testing.T) {
		for len(requests) > 0 {
			<-requests
		}
		err := HTTPGet(testContext(t), spec, &v1.HTTPGetAction{
			Path: "/ok", Port: intstr.FromString("http"),
			HTTPHeaders: []v1.HTTPHeader{
				{Name: "X-Custom", Value: "one"}, {Name: "x-custom", Value: "two"},
				{Name: "Host", Value: "app.example"}, {Name: "User-Agent", Value: "mine"},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		r := <-requests
		if got := r.header.Values("X-Custom"); len(got) != 2 || got[0] != "one" || got[1] != "two" {
			t.Errorf("X-Custom = %q, want one, two", got)
		}
		if r.host != "app.example" {
			t.Errorf("Host = %q, want app.example", r.host)
		}
		if ua := r.header.Get("User-Agent"); ua != "mine" {
			t.Errorf("User-Agent = %q, want the probe's own", ua)
		}
		if a := r.header.Get("Accept"); a != "*/*" {
			t.Errorf("Accept = %q, want */*", a)
		}
	})

	t.Run("https without verification", func(t *testing.T) {
		tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
		defer tlsSrv.Close()
		err := HTTPGet(testContext(t), nil, &v1.HTTPGetAction{
			Path: "/", Port: intstr.FromInt(portOf(t, tlsSrv.Listener.Addr().String())), Scheme: v1.URISchemeHTTPS,
		})
		if err != nil {
			t.Errorf("HTTPGet over HTTPS = %v", err)
		}
	})

	t.Run("context bounds the request", func(t *testing.T) {
		hang := make(chan struct{})
		slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-hang:
			case <-r.Context().Done():
			}
		}))
		defer slow.Close()
		defer close(hang)
		ctx, cancel := context.WithCancel(context.Background())
		u, _ := url.Parse(slow.URL)
		p, _ := strconv.Atoi(u.Port())
		done := make(chan error, 1)
		go func() { done <- HTTPGet(ctx, nil, &v1.HTTPGetAction{Path: "/", Port: intstr.FromInt(p)}) }()
		cancel()
		if err := <-done; err == nil {
			t.Error("HTTPGet succeeded after its context ended")
		}
	})
}

func TestTCPSocket(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	defer func() { _ = l.Close(); <-accepted }()
	open := portOf(t, l.Addr().String())
	spec := &v1.Container{Ports: []v1.ContainerPort{{Name: "svc", ContainerPort: int32(open)}}}

	tests := map[string]struct {
		action  v1.TCPSocketAction
		wantErr string
	}{
		"open port":          {action: v1.TCPSocketAction{Port: intstr.FromInt(open)}},
		"named port":         {action: v1.TCPSocketAction{Port: intstr.FromString("svc")}},
		"explicit host":      {action: v1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromInt(open)}},
		"closed port":        {action: v1.TCPSocketAction{Port: intstr.FromInt(closedPort(t))}, wantErr: "connection refused"},
		"unknown named port": {action: v1.TCPSocketAction{Port: intstr.FromString("nope")}, wantErr: "not a port of the container"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := TCPSocket(testContext(t), spec, &tc.action)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("TCPSocket = %v, want success", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("TCPSocket = %v, want an error with %q", err, tc.wantErr)
			}
		})
	}
}

func TestGRPCProbe(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	hs.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("serving", healthpb.HealthCheckResponse_SERVING)
	hs.SetServingStatus("down", healthpb.HealthCheckResponse_NOT_SERVING)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		srv.Stop()
		<-served
	}()
	port := int32(portOf(t, l.Addr().String()))

	// A server that speaks gRPC but not the health protocol.
	bare, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bareSrv := grpc.NewServer()
	bareServed := make(chan error, 1)
	go func() { bareServed <- bareSrv.Serve(bare) }()
	defer func() {
		bareSrv.Stop()
		<-bareServed
	}()

	tests := map[string]struct {
		port    int32
		service *string
		wantErr string
	}{
		"SERVING":             {port: port, service: ptr("serving")},
		"overall, by default": {port: port},
		"NOT_SERVING":         {port: port, service: ptr("down"), wantErr: `service unhealthy (responded with "NOT_SERVING")`},
		"unknown service":     {port: port, service: ptr("nope"), wantErr: "NotFound"},
		"no health service":   {port: int32(portOf(t, bare.Addr().String())), wantErr: "does not implement the grpc health protocol"},
		"nothing listens":     {port: int32(closedPort(t)), wantErr: "grpc health check of 127.0.0.1:"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			a := prepare(nil, &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: tc.port, Service: tc.service}}}, "")
			ok, output, _ := a.run(testContext(t), nil, nil, model.ContainerRef{}, time.Second)
			switch {
			case tc.wantErr == "" && !ok:
				t.Errorf("grpc probe failed: %s", output)
			case tc.wantErr != "" && (ok || !strings.Contains(output, tc.wantErr)):
				t.Errorf("grpc probe = %v, %q; want a failure with %q", ok, output, tc.wantErr)
			}
		})
	}

	t.Run("through the manager", func(t *testing.T) {
		h := newHarness(t)
		pod := newPod("p", v1.Container{Name: "app", ReadinessProbe: &v1.Probe{
			ProbeHandler:   v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: port, Service: ptr("down")}},
			TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
		}})
		h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
		h.settle()
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: false, Failed: true})
		hs.SetServingStatus("down", healthpb.HealthCheckResponse_SERVING)
		h.step(time.Second)
		h.expect(Result{Container: "app", Kind: Readiness, Healthy: true, Changed: true})
	})
}

func TestTCPProbeThroughManager(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	port := portOf(t, l.Addr().String())

	h := newHarness(t)
	pod := newPod("p", v1.Container{Name: "app", LivenessProbe: &v1.Probe{
		ProbeHandler:   v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(port)}},
		TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 2,
	}})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	h.settle()
	h.expect()
	_ = l.Close()
	<-accepted
	h.step(time.Second)
	got := h.expect(Result{Container: "app", Kind: Liveness, Healthy: true, Failed: true})
	if !strings.Contains(got[0].Output, "connection refused") {
		t.Errorf("Output = %q, want connection refused", got[0].Output)
	}
	h.step(time.Second)
	h.expect(Result{Container: "app", Kind: Liveness, Healthy: false, Changed: true, Failed: true})
}

func TestProbeWithoutHandler(t *testing.T) {
	a := prepare(nil, &v1.Probe{}, "")
	if ok, output, _ := a.run(testContext(t), nil, nil, model.ContainerRef{}, time.Second); ok || !strings.Contains(output, "no handler") {
		t.Errorf("run = %v, %q; want a failure for the missing handler", ok, output)
	}
	a = prepare(nil, execProbe("x"), "")
	if ok, output, _ := a.run(testContext(t), nil, nil, model.ContainerRef{}, time.Second); ok || !strings.Contains(output, "not supported") {
		t.Errorf("run without an Execer = %v, %q; want a failure", ok, output)
	}
}

func ptr[T any](v T) *T { return &v }

// A pod with a network of its own is probed at its IP, unless the handler
// names a host.
func TestPrepareUsesPodIP(t *testing.T) {
	tcp := prepare(nil, &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}}, "10.88.0.5")
	if tcp.target != "dial tcp 10.88.0.5:80" {
		t.Errorf("tcpSocket target %q", tcp.target)
	}
	named := prepare(nil, &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Host: "10.1.1.1", Port: intstr.FromInt32(80)}}}, "10.88.0.5")
	if named.target != "dial tcp 10.1.1.1:80" {
		t.Errorf("tcpSocket with a host: target %q", named.target)
	}
	get := prepare(nil, &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}, "10.88.0.5")
	if get.target != "GET http://10.88.0.5:8080/healthz" {
		t.Errorf("httpGet target %q", get.target)
	}
	grpc := prepare(nil, &v1.Probe{ProbeHandler: v1.ProbeHandler{GRPC: &v1.GRPCAction{Port: 9090}}}, "10.88.0.5")
	if grpc.addr != "10.88.0.5:9090" {
		t.Errorf("grpc addr %q", grpc.addr)
	}
	host := prepare(nil, &v1.Probe{ProbeHandler: v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(80)}}}, "")
	if host.target != "dial tcp 127.0.0.1:80" {
		t.Errorf("host network target %q", host.target)
	}
}

// An httpGet probe answered with a redirect to another host does not
// follow it: the attempt succeeds with the kubelet's warning, the start of
// the answer's body in it (pkg/probe/http, DoHTTPProbe: at most 10 KiB),
// and the manager reports every such attempt, for the worker's
// ProbeWarning event. A redirect on the same host is followed, without a
// warning.
func TestHTTPRedirectElsewhereWarns(t *testing.T) {
	long := strings.Repeat("x", 20<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
		case "/here":
			http.Redirect(w, r, "/ok", http.StatusFound)
		case "/long":
			w.Header().Set("Location", "http://elsewhere.invalid/")
			w.WriteHeader(http.StatusMovedPermanently)
			_, _ = w.Write([]byte(long))
		default:
			http.Redirect(w, r, "http://0.0.0.0/", http.StatusFound)
		}
	}))
	defer srv.Close()
	port := portOf(t, srv.Listener.Addr().String())
	probe := func(path string) *v1.Probe {
		return &v1.Probe{
			ProbeHandler:   v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: path, Port: intstr.FromInt(port)}},
			TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 1,
		}
	}
	const found = `Probe terminated redirects, Response body: <a href="http://0.0.0.0/">Found</a>.`
	for path, want := range map[string]string{
		"/redirect": found + "\n\n",
		"/here":     "",
		"/long":     "Probe terminated redirects, Response body: " + long[:10<<10],
	} {
		a := prepare(nil, probe(path), "")
		ok, output, warning := a.run(testContext(t), nil, nil, model.ContainerRef{}, time.Second)
		if !ok || warning != want {
			t.Errorf("%s: ok %v (%s), warning %.80q, want a success warning %.80q", path, ok, output, warning, want)
		}
	}

	h := newHarness(t)
	pod := newPod("p", v1.Container{Name: "app", LivenessProbe: probe("/redirect")})
	h.m.AddContainer(pod, ref(pod, 0), "c1", h.clk.Now())
	h.settle()
	warned := Result{Container: "app", Kind: Liveness, Healthy: true, Warning: found + "\n\n"}
	h.expect(warned)
	h.step(time.Second)
	h.expect(warned)
}
