package podnet

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
)

// The kubelet's GeneratePodHostNameAndDomain, truncatePodHostnameIfNeeded
// (kubelet_pods.go) and GetNodenameForKernel (pkg/kubelet/util).
func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	tests := map[string]struct {
		name, hostname, subdomain string
		override                  *string
		fqdn                      bool
		wantHost, wantDomain      string
		wantKernel                string
		wantErr                   string
	}{
		"the pod's name":             {name: "web", wantHost: "web", wantKernel: "web"},
		"spec.hostname":              {name: "web-0", hostname: "db", wantHost: "db", wantKernel: "db"},
		"cut to 63, no trailing '-'": {name: long, wantHost: strings.Repeat("a", 62), wantKernel: strings.Repeat("a", 62)},
		"subdomain makes the domain": {name: "web-0", hostname: "db", subdomain: "sub",
			wantHost: "db", wantDomain: "sub.shop.svc.cluster.local", wantKernel: "db"},
		"setHostnameAsFQDN": {name: "web-0", subdomain: "sub", fqdn: true,
			wantHost: "web-0", wantDomain: "sub.shop.svc.cluster.local", wantKernel: "web-0.sub.shop.svc.cluster.local"},
		"setHostnameAsFQDN without a subdomain": {name: "web-0", fqdn: true, wantHost: "web-0", wantKernel: "web-0"},
		"setHostnameAsFQDN too long": {name: strings.Repeat("b", 40), subdomain: "sub", fqdn: true,
			wantErr: "failed to construct FQDN from pod hostname and cluster domain, FQDN " + strings.Repeat("b", 40) + ".sub.shop.svc.cluster.local is too long (64 characters is the max, 67 characters requested)"},
		"hostnameOverride wins, without a domain": {name: "web-0", hostname: "db", subdomain: "sub", override: ptr.To("my.host.example"),
			wantHost: "my.host.example", wantKernel: "my.host.example"},
		"hostnameOverride not a subdomain": {name: "web-0", override: ptr.To("Not_Valid"), wantErr: `spec.hostnameOverride "Not_Valid" is not a valid DNS subdomain`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &model.Pod{Pod: &v1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: tc.name, Namespace: "shop"},
				Spec:       v1.PodSpec{Hostname: tc.hostname, Subdomain: tc.subdomain, HostnameOverride: tc.override, SetHostnameAsFQDN: &tc.fqdn},
			}}
			kernel, err := Hostname(pod, "cluster.local")
			if tc.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			host, domain, err := HostnameAndDomain(pod, "cluster.local")
			if err != nil || host != tc.wantHost || domain != tc.wantDomain {
				t.Errorf("HostnameAndDomain = %q, %q, %v; want %q, %q", host, domain, err, tc.wantHost, tc.wantDomain)
			}
			if kernel != tc.wantKernel {
				t.Errorf("Hostname = %q, want %q", kernel, tc.wantKernel)
			}
		})
	}
}
