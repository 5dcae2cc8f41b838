package podworker

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/fake"
)

// addrRuntime gives the pods of ips networks of their own.
type addrRuntime struct {
	*fake.Runtime
	ips map[types.UID][]string
}

func (r addrRuntime) PodIPs(uid types.UID) []string { return r.ips[uid] }

var _ runtime.PodAddresser = addrRuntime{}

// TestStatusAddresses: hostIP(s) are the node's; podIP(s) the pod's own
// addresses, the primary first, when the runtime gave it a network of its
// own, and the node's when it shares the host's network.
func TestStatusAddresses(t *testing.T) {
	own := testPod("own", v1.RestartPolicyAlways, "main:app")
	shared := testPod("shared", v1.RestartPolicyAlways, "main:app")
	rt := addrRuntime{ips: map[types.UID][]string{own.UID: {"10.88.0.7", "fd00::7"}}}
	h := newHarnessConfig(t, func(f *fake.Runtime) runtime.Runtime { rt.Runtime = f; return rt },
		func(_ *harness, c *Config) { c.HostIP = "192.0.2.10" })
	for name, tc := range map[string]struct {
		pod   *v1.Pod
		podIP []string
	}{
		"own network":    {own.Pod, []string{"10.88.0.7", "fd00::7"}},
		"host's network": {shared.Pod, []string{"192.0.2.10"}},
	} {
		t.Run(name, func(t *testing.T) {
			p := testPod(string(tc.pod.UID), v1.RestartPolicyAlways, "main:app")
			h.w.UpdatePod(UpdateOptions{Pod: p})
			var st *v1.Pod
			h.waitFor("the pod running", func() bool {
				st, _, _ = h.w.PodStatus(p.UID)
				return st != nil && len(st.Status.ContainerStatuses) == 1 && st.Status.ContainerStatuses[0].State.Running != nil
			})
			var ips []string
			for _, ip := range st.Status.PodIPs {
				ips = append(ips, ip.IP)
			}
			if st.Status.PodIP != tc.podIP[0] || !slices.Equal(ips, tc.podIP) {
				t.Errorf("podIP %q podIPs %v, want %v", st.Status.PodIP, ips, tc.podIP)
			}
			if st.Status.HostIP != "192.0.2.10" || len(st.Status.HostIPs) != 1 || st.Status.HostIPs[0].IP != "192.0.2.10" {
				t.Errorf("hostIP %q hostIPs %v, want the node's 192.0.2.10", st.Status.HostIP, st.Status.HostIPs)
			}
		})
	}
}
