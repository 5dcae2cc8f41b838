package podspec

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
)

// The kubelet's GeneratePodHostNameAndDomain and truncatePodHostnameIfNeeded
// (pkg/kubelet/kubelet_pods.go).
func TestHostname(t *testing.T) {
	long := strings.Repeat("a", 62) + "-b"
	tests := map[string]struct {
		name, hostname, subdomain string
		want                      string
	}{
		"the pod's name":             {name: "web", want: "web"},
		"spec.hostname":              {name: "web-0", hostname: "db", want: "db"},
		"subdomain changes nothing":  {name: "web-0", hostname: "db", subdomain: "svc", want: "db"},
		"cut to 63, no trailing '-'": {name: long, want: strings.Repeat("a", 62)},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			pod := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: v1.PodSpec{Hostname: tc.hostname, Subdomain: tc.subdomain}}}
			if got := Hostname(pod); got != tc.want {
				t.Errorf("Hostname = %q, want %q", got, tc.want)
			}
		})
	}
}
