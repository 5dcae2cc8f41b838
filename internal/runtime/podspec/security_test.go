package podspec

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestEffectiveSecurity(t *testing.T) {
	spec := &v1.PodSpec{SecurityContext: &v1.PodSecurityContext{
		RunAsUser: ptr.To[int64](1000), RunAsGroup: ptr.To[int64](2000), RunAsNonRoot: ptr.To(true),
		SupplementalGroups: []int64{3000}, FSGroup: ptr.To[int64](4000),
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
		SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c1", User: "u"},
	}}
	pod := EffectiveSecurity(spec, &v1.Container{})
	if *pod.RunAsUser != 1000 || *pod.RunAsGroup != 2000 || !pod.RunAsNonRoot || !slices.Equal(pod.SupplementalGroups, []int64{3000, 4000}) ||
		!pod.SeccompRuntimeDefault() || pod.SELinux.User != "u" || pod.ProcMount != v1.DefaultProcMount {
		t.Errorf("pod's settings: %+v", pod)
	}
	c := &v1.Container{SecurityContext: &v1.SecurityContext{
		RunAsUser: ptr.To[int64](0), RunAsNonRoot: ptr.To(false), AllowPrivilegeEscalation: ptr.To(false),
		SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeUnconfined},
		SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c2"}, ProcMount: ptr.To(v1.UnmaskedProcMount),
		ReadOnlyRootFilesystem: ptr.To(true),
	}}
	s := EffectiveSecurity(spec, c)
	switch {
	case *s.RunAsUser != 0 || *s.RunAsGroup != 2000 || s.RunAsNonRoot:
		t.Errorf("user %v group %v nonRoot %v: the container's win, field by field", *s.RunAsUser, *s.RunAsGroup, s.RunAsNonRoot)
	case s.SeccompRuntimeDefault() || s.Seccomp.Type != v1.SeccompProfileTypeUnconfined:
		t.Errorf("seccomp %v, want the container's Unconfined", s.Seccomp)
	case s.SELinux.User != "" || s.SELinux.Level != "s0:c2":
		t.Errorf("seLinuxOptions %+v: the container's replace the pod's whole", s.SELinux)
	case !s.NoNewPrivs || !s.ReadOnlyRootFilesystem || s.ProcMount != v1.UnmaskedProcMount:
		t.Errorf("%+v", s)
	}
	c.SecurityContext.Privileged = ptr.To(true)
	if s := EffectiveSecurity(spec, c); s.NoNewPrivs || s.SeccompRuntimeDefault() {
		t.Errorf("privileged: no_new_privs %v; want none, as the kubelet gives a privileged container", s.NoNewPrivs)
	}
}

func TestCapabilitySet(t *testing.T) {
	all := []string{"CAP_CHOWN", "CAP_NET_ADMIN", "CAP_SYS_ADMIN", "CAP_KILL"}
	tests := map[string]struct {
		s    Security
		want []string
	}{
		"default":                       {Security{}, DefaultCapabilities},
		"privileged":                    {Security{Privileged: true, Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}}, all},
		"drop ALL":                      {Security{Capabilities: &v1.Capabilities{Drop: []v1.Capability{"ALL"}}}, []string{}},
		"drop ALL, add one":             {Security{Capabilities: &v1.Capabilities{Drop: []v1.Capability{"all"}, Add: []v1.Capability{"NET_BIND_SERVICE"}}}, []string{"CAP_NET_BIND_SERVICE"}},
		"add ALL":                       {Security{Capabilities: &v1.Capabilities{Add: []v1.Capability{"ALL"}}}, all},
		"add, with or without CAP_":     {Security{Capabilities: &v1.Capabilities{Add: []v1.Capability{"net_admin", "CAP_SYS_ADMIN"}}}, append(slices.Clone(DefaultCapabilities), "CAP_NET_ADMIN", "CAP_SYS_ADMIN")},
		"drop wins over add":            {Security{Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"NET_ADMIN", "KILL"}}}, slices.DeleteFunc(slices.Clone(DefaultCapabilities), func(c string) bool { return c == "CAP_KILL" })},
		"add ALL, drop one":             {Security{Capabilities: &v1.Capabilities{Add: []v1.Capability{"ALL"}, Drop: []v1.Capability{"SYS_ADMIN"}}}, []string{"CAP_CHOWN", "CAP_NET_ADMIN", "CAP_KILL"}},
		"default caps, drop one absent": {Security{Capabilities: &v1.Capabilities{Drop: []v1.Capability{"SYS_ADMIN"}}}, DefaultCapabilities},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := tc.s.CapabilitySet(all)
			if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tc.want))) {
				t.Errorf("CapabilitySet = %v, want %v", got, tc.want)
			}
		})
	}
}
