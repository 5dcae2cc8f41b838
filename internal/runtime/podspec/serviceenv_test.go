package podspec

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/objects/objectstest"
	"github.com/podward/podward/internal/runtime"
)

func service(ns, name, clusterIP string, ports ...v1.ServicePort) *v1.Service {
	return &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       v1.ServiceSpec{ClusterIP: clusterIP, Ports: ports},
	}
}

func masterService() *v1.Service {
	return service("default", "kubernetes", "10.96.0.1", v1.ServicePort{Name: "https", Port: 443, Protocol: v1.ProtocolTCP})
}

// masterEnv is what every pod sees of the master service.
var masterEnv = []EnvVar{
	{"KUBERNETES_SERVICE_HOST", "10.96.0.1"},
	{"KUBERNETES_SERVICE_PORT", "443"},
	{"KUBERNETES_SERVICE_PORT_HTTPS", "443"},
	{"KUBERNETES_PORT", "tcp://10.96.0.1:443"},
	{"KUBERNETES_PORT_443_TCP", "tcp://10.96.0.1:443"},
	{"KUBERNETES_PORT_443_TCP_PROTO", "tcp"},
	{"KUBERNETES_PORT_443_TCP_PORT", "443"},
	{"KUBERNETES_PORT_443_TCP_ADDR", "10.96.0.1"},
}

// twoPorts is a service with two named ports, the second UDP, and a
// dashed name, and the variables the kubelet gives it.
var (
	twoPorts = service("shop", "my-svc", "10.0.0.11",
		v1.ServicePort{Name: "http", Port: 80},
		v1.ServicePort{Name: "metrics-port", Port: 9090, Protocol: v1.ProtocolUDP})
	twoPortsEnv = []EnvVar{
		{"MY_SVC_SERVICE_HOST", "10.0.0.11"},
		{"MY_SVC_SERVICE_PORT", "80"},
		{"MY_SVC_SERVICE_PORT_HTTP", "80"},
		{"MY_SVC_SERVICE_PORT_METRICS_PORT", "9090"},
		{"MY_SVC_PORT", "tcp://10.0.0.11:80"},
		{"MY_SVC_PORT_80_TCP", "tcp://10.0.0.11:80"},
		{"MY_SVC_PORT_80_TCP_PROTO", "tcp"},
		{"MY_SVC_PORT_80_TCP_PORT", "80"},
		{"MY_SVC_PORT_80_TCP_ADDR", "10.0.0.11"},
		{"MY_SVC_PORT_9090_UDP", "udp://10.0.0.11:9090"},
		{"MY_SVC_PORT_9090_UDP_PROTO", "udp"},
		{"MY_SVC_PORT_9090_UDP_PORT", "9090"},
		{"MY_SVC_PORT_9090_UDP_ADDR", "10.0.0.11"},
	}
)

func TestServiceEnv(t *testing.T) {
	tests := map[string]struct {
		services  []*v1.Service
		namespace string
		disable   bool
		want      []EnvVar
	}{
		"none": {namespace: "shop"},
		"two named ports, a dashed name": {
			services: []*v1.Service{twoPorts}, namespace: "shop", want: twoPortsEnv,
		},
		"an unnamed single port has no _SERVICE_PORT_<NAME>": {
			services: []*v1.Service{service("shop", "db", "10.0.0.5", v1.ServicePort{Port: 5432})}, namespace: "shop",
			want: []EnvVar{
				{"DB_SERVICE_HOST", "10.0.0.5"}, {"DB_SERVICE_PORT", "5432"}, {"DB_PORT", "tcp://10.0.0.5:5432"},
				{"DB_PORT_5432_TCP", "tcp://10.0.0.5:5432"}, {"DB_PORT_5432_TCP_PROTO", "tcp"},
				{"DB_PORT_5432_TCP_PORT", "5432"}, {"DB_PORT_5432_TCP_ADDR", "10.0.0.5"},
			},
		},
		"an IPv6 ClusterIP in brackets": {
			services: []*v1.Service{service("shop", "v6", "fd00::1", v1.ServicePort{Port: 80, Protocol: v1.ProtocolSCTP})}, namespace: "shop",
			want: []EnvVar{
				{"V6_SERVICE_HOST", "fd00::1"}, {"V6_SERVICE_PORT", "80"}, {"V6_PORT", "sctp://[fd00::1]:80"},
				{"V6_PORT_80_SCTP", "sctp://[fd00::1]:80"}, {"V6_PORT_80_SCTP_PROTO", "sctp"},
				{"V6_PORT_80_SCTP_PORT", "80"}, {"V6_PORT_80_SCTP_ADDR", "fd00::1"},
			},
		},
		"headless and ClusterIP-less services are skipped": {
			services: []*v1.Service{
				service("shop", "headless", "None", v1.ServicePort{Port: 80}),
				service("shop", "external", "", v1.ServicePort{Port: 80}),
			},
			namespace: "shop",
		},
		"another namespace's services are not seen": {
			services: []*v1.Service{service("other", "theirs", "10.0.0.9", v1.ServicePort{Port: 80})}, namespace: "shop",
		},
		"the master service from default, for a pod of another namespace": {
			services: []*v1.Service{twoPorts, masterService()}, namespace: "shop",
			want: append(slices.Clone(masterEnv), twoPortsEnv...),
		},
		"enableServiceLinks false keeps the master service's only": {
			services: []*v1.Service{twoPorts, masterService()}, namespace: "shop", disable: true,
			want: masterEnv,
		},
		"enableServiceLinks false in default keeps the master service's only": {
			services:  []*v1.Service{service("default", "web", "10.0.0.2", v1.ServicePort{Port: 80}), masterService()},
			namespace: "default", disable: true,
			want: masterEnv,
		},
		"a namespace's own kubernetes service replaces the master's": {
			services: []*v1.Service{
				masterService(),
				service("shop", "kubernetes", "10.0.0.7", v1.ServicePort{Port: 8080}),
			},
			namespace: "shop",
			want: []EnvVar{
				{"KUBERNETES_SERVICE_HOST", "10.0.0.7"}, {"KUBERNETES_SERVICE_PORT", "8080"},
				{"KUBERNETES_PORT", "tcp://10.0.0.7:8080"}, {"KUBERNETES_PORT_8080_TCP", "tcp://10.0.0.7:8080"},
				{"KUBERNETES_PORT_8080_TCP_PROTO", "tcp"}, {"KUBERNETES_PORT_8080_TCP_PORT", "8080"},
				{"KUBERNETES_PORT_8080_TCP_ADDR", "10.0.0.7"},
			},
		},
		"another service named kubernetes outside default is no master": {
			services:  []*v1.Service{service("other", "kubernetes", "10.0.0.8", v1.ServicePort{Port: 443})},
			namespace: "shop",
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := ServiceEnv(tt.services, tt.namespace, !tt.disable)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ServiceEnv =\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}

func shopPod() *model.Pod {
	p := testPod()
	p.Namespace = "shop"
	return p
}

func testServices() *objectstest.Services {
	s := &objectstest.Services{}
	s.Put(masterService(), twoPorts, service("other", "theirs", "10.0.0.9", v1.ServicePort{Port: 80}))
	return s
}

func envOf(t *testing.T, pod *model.Pod, c *v1.Container, src EnvSources) ([]EnvVar, Vars) {
	t.Helper()
	env, vars, err := Env(context.Background(), pod, c, "spec.containers[0]", src)
	if err != nil {
		t.Fatalf("Env: %v", err)
	}
	return env, vars
}

// The service links are the base of the container's env: its own
// variables come first and win, its references see the links, and the
// links it did not set follow, as the kubelet appends them.
func TestEnvServiceLinks(t *testing.T) {
	o := &objectstest.Objects{}
	o.Put(&v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "cfg"},
		Data: map[string]string{"MY_SVC_SERVICE_PORT": "from-envfrom"}})
	c := &v1.Container{Name: "app",
		EnvFrom: []v1.EnvFromSource{{ConfigMapRef: cmRef("cfg")}},
		Env: []v1.EnvVar{
			{Name: "URL", Value: "http://$(MY_SVC_SERVICE_HOST):$(MY_SVC_SERVICE_PORT)/"},
			{Name: "KUBERNETES_SERVICE_HOST", Value: "mine"},
			{Name: "API", Value: "$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
		},
	}
	env, vars := envOf(t, shopPod(), c, EnvSources{Objects: o, Services: testServices()})

	wantOwn := []EnvVar{
		{"MY_SVC_SERVICE_PORT", "from-envfrom"},
		{"URL", "http://10.0.0.11:from-envfrom/"},
		{"KUBERNETES_SERVICE_HOST", "mine"},
		{"API", "mine:443"},
	}
	if !slices.Equal(env[:len(wantOwn)], wantOwn) {
		t.Errorf("the container's own variables = %v, want %v", env[:len(wantOwn)], wantOwn)
	}
	var wantRest []EnvVar
	for _, e := range append(slices.Clone(masterEnv), twoPortsEnv...) {
		if e.Name != "KUBERNETES_SERVICE_HOST" && e.Name != "MY_SVC_SERVICE_PORT" {
			wantRest = append(wantRest, e)
		}
	}
	if rest := env[len(wantOwn):]; !slices.Equal(rest, wantRest) {
		t.Errorf("the service links after them =\n%v\nwant\n%v", rest, wantRest)
	}
	if vars["MY_SVC_PORT_80_TCP_ADDR"] != "10.0.0.11" || vars["KUBERNETES_SERVICE_HOST"] != "mine" {
		t.Errorf("vars for command and args = %v, want the links under the container's own", vars)
	}
	for _, e := range env {
		if strings.HasPrefix(e.Name, "THEIRS_") {
			t.Errorf("another namespace's service seen: %v", e)
		}
	}
}

func TestEnvServiceLinksDisabled(t *testing.T) {
	pod := shopPod()
	no := false
	pod.Spec.EnableServiceLinks = &no
	c := &v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "X", Value: "$(MY_SVC_SERVICE_HOST)"}}}
	env, _ := envOf(t, pod, c, EnvSources{Services: testServices()})
	want := append([]EnvVar{{"X", "$(MY_SVC_SERVICE_HOST)"}}, masterEnv...)
	if !slices.Equal(env, want) {
		t.Errorf("Env =\n%v\nwant\n%v", env, want)
	}
}

// Without a lister (standalone) there are no service variables at all.
func TestEnvNoServiceLister(t *testing.T) {
	c := &v1.Container{Name: "app", Env: []v1.EnvVar{{Name: "X", Value: "$(KUBERNETES_SERVICE_HOST)"}}}
	env, _ := envOf(t, shopPod(), c, EnvSources{})
	if want := []EnvVar{{"X", "$(KUBERNETES_SERVICE_HOST)"}}; !slices.Equal(env, want) {
		t.Errorf("Env = %v, want %v", env, want)
	}
}

func TestEnvServicesNotRead(t *testing.T) {
	c := &v1.Container{Name: "app"}
	bounded := errors.New("wait for the services' first read: context deadline exceeded")

	t.Run("the bound passed: a configuration error, the kubelet's message", func(t *testing.T) {
		s := testServices()
		s.SyncErr = bounded
		_, _, err := Env(context.Background(), shopPod(), c, "spec.containers[0]", EnvSources{Services: s})
		var cfg *runtime.ContainerConfigError
		if !errors.As(err, &cfg) || cfg.Message != errServicesNotSynced || !errors.Is(err, bounded) {
			t.Fatalf("Env = %v, want a ContainerConfigError %q wrapping the wait's error", err, errServicesNotSynced)
		}
	})
	t.Run("ctx ended: its error", func(t *testing.T) {
		s := testServices()
		s.Unsynced = true
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, _, err := Env(ctx, shopPod(), c, "spec.containers[0]", EnvSources{Services: s})
		if !errors.Is(err, context.Canceled) || errors.Is(err, runtime.ErrContainerConfig) {
			t.Fatalf("Env = %v, want context.Canceled alone", err)
		}
	})
	t.Run("a static pod does not wait: it reads what is there", func(t *testing.T) {
		s := testServices()
		s.SyncErr = bounded
		pod := shopPod()
		pod.Annotations = map[string]string{model.ConfigSourceAnnotation: "file"}
		env, _ := envOf(t, pod, c, EnvSources{Services: s})
		if len(env) == 0 || env[0].Name != "KUBERNETES_SERVICE_HOST" {
			t.Fatalf("Env = %v, want the links read without waiting", env)
		}
	})
	t.Run("the list fails: a configuration error", func(t *testing.T) {
		s := testServices()
		s.ListErr = errors.New("boom")
		_, _, err := Env(context.Background(), shopPod(), c, "spec.containers[0]", EnvSources{Services: s})
		if !errors.Is(err, runtime.ErrContainerConfig) || !strings.Contains(err.Error(), "failed to list services") {
			t.Fatalf("Env = %v, want the kubelet's list error as a configuration error", err)
		}
	})
}
