package cri

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/runtime/podnet"
	"github.com/podward/podward/internal/runtime/podspec"
)

// The sandbox gets the pod's DNS configuration as the kubelet's GetPodDNS
// makes it (podnet.DNS), its host name as GeneratePodHostNameAndDomain and
// GetNodenameForKernel make it; without a cluster DNS a ClusterFirst pod
// falls back to the host's with the kubelet's MissingClusterDNS warning.
func TestSandboxDNSConfig(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cluster := podnet.Settings{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: resolv}
	tests := map[string]struct {
		settings    podnet.Settings
		policy      v1.DNSPolicy
		dnsConfig   *v1.PodDNSConfig
		want        *runtimeapi.DNSConfig
		wantWarning string
	}{
		"ClusterFirst": {settings: cluster, policy: v1.DNSClusterFirst, want: &runtimeapi.DNSConfig{
			Servers:  []string{"10.96.0.10"},
			Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com"},
			Options:  []string{"ndots:5"},
		}},
		"Default": {settings: cluster, policy: v1.DNSDefault, want: &runtimeapi.DNSConfig{Servers: []string{"192.0.2.53"}, Searches: []string{"example.com"}}},
		"None": {settings: cluster, policy: v1.DNSNone, dnsConfig: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}}},
			want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Options: []string{"ndots:1"}}},
		"ClusterFirst without a cluster DNS": {settings: podnet.Settings{ResolvConf: resolv}, policy: v1.DNSClusterFirst,
			want:        &runtimeapi.DNSConfig{Servers: []string{"192.0.2.53"}, Searches: []string{"example.com"}},
			wantWarning: podnet.ReasonMissingClusterDNS},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.DNS, c.PodNetwork = tc.settings, true })
			pod := testPod("uid-1")
			pod.Spec.DNSPolicy, pod.Spec.DNSConfig = tc.policy, tc.dnsConfig
			pod.Spec.Subdomain, pod.Spec.SetHostnameAsFQDN = "sub", ptr.To(true)
			h.prepare(pod)
			sbs := h.f.sandboxList()
			if len(sbs) != 1 {
				t.Fatalf("%d sandboxes, want 1", len(sbs))
			}
			if got := sbs[0].config.DnsConfig; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("DnsConfig = %v, want %v", got, tc.want)
			}
			wantHost := "web.sub.default.svc." + tc.settings.ClusterDomain
			if got := sbs[0].config.Hostname; got != wantHost {
				t.Errorf("hostname = %q, want %q", got, wantHost)
			}
			select {
			case w := <-h.r.Warnings():
				if string(w.Reason) != tc.wantWarning || w.PodUID != pod.UID {
					t.Errorf("warning %+v, want %q", w, tc.wantWarning)
				}
			default:
				if tc.wantWarning != "" {
					t.Errorf("no warning, want %q", tc.wantWarning)
				}
			}
		})
	}
}

// Each container gets the pod's hosts file at /etc/hosts, written after the
// sandbox runs with its IP (the kubelet's makeHostsMount); a pod on the
// host's network gets the host's file with its hostAliases; a container
// that mounts a volume at /etc/hosts keeps it.
func TestHostsFileMount(t *testing.T) {
	aliases := []v1.HostAlias{{IP: "192.0.2.9", Hostnames: []string{"db", "db.local"}}}
	machineHosts, err := os.ReadFile(podspec.MachineHostsFile)
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		podNetwork, hostNetwork bool
		ownHosts                bool
		want                    string // "": no mount
	}{
		// Every address of the pod's, as the kubelet writes them (the
		// fake's sandbox has an IPv6 one too).
		"pod network": {podNetwork: true,
			want: string(podnet.HostsFile([]string{"10.88.0.7", "fd00::7"}, "web", "sub.default.svc.cluster.local", aliases))},
		"hostNetwork": {podNetwork: true, hostNetwork: true, want: string(podnet.HostNetworkHostsFile(machineHosts, aliases))},
		"on the host's network without PodNetwork, at the node's IP": {
			want: string(podnet.HostsFile([]string{"127.0.0.1"}, "web", "sub.default.svc.cluster.local", aliases))},
		"a volume at /etc/hosts": {podNetwork: true, ownHosts: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.PodNetwork, c.DNS = tc.podNetwork, podnet.Settings{ClusterDomain: "cluster.local", ResolvConf: podnet.EtcResolvConf}
			})
			pod := testPod("uid-1")
			pod.Spec.Subdomain, pod.Spec.HostAliases, pod.Spec.HostNetwork = "sub", aliases, tc.hostNetwork
			if tc.ownHosts {
				if os.Geteuid() != 0 {
					t.Skip("a subPath is bind-mounted on the host: needs root")
				}
				app := &pod.Spec.Containers[0]
				app.VolumeMounts = append(app.VolumeMounts, v1.VolumeMount{Name: "data", MountPath: "/etc/hosts", SubPath: "hosts"})
			}
			h.prepare(pod)
			c := h.start(pod, "app", 0)
			var hosts *runtimeapi.Mount
			for _, m := range h.f.container(c.ID).config.Mounts {
				if m.ContainerPath == podnet.EtcHosts && strings.HasSuffix(m.HostPath, "etc-hosts") {
					hosts = m
				}
			}
			if tc.want == "" {
				if hosts != nil {
					t.Errorf("the pod's hosts file mounted over the container's own: %v", hosts)
				}
				return
			}
			if hosts == nil {
				t.Fatal("no /etc/hosts mount")
			}
			got, err := os.ReadFile(hosts.HostPath)
			if err != nil || string(got) != tc.want {
				t.Errorf("hosts file = %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// The sandbox's config, DNS included, is built when the sandbox is run and
// goes as it is with each CreateContainer: the host's resolv.conf is not
// read again, so one that went unreadable since fails no container. After
// a restart, the config of the ready sandbox found is built once again.
func TestSandboxConfigKeptForContainers(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) {
		c.DNS, c.PodNetwork = podnet.Settings{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: resolv}, true
	})
	pod := testPod("uid-1")
	h.prepare(pod)
	sbs := h.f.sandboxList()
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes, want 1", len(sbs))
	}
	if err := os.Remove(resolv); err != nil {
		t.Fatal(err)
	}
	h.start(pod, "setup", 0)
	cs := h.f.containerList()
	if len(cs) != 1 {
		t.Fatalf("%d containers, want 1", len(cs))
	}
	if cs[0].sbConfig.String() != sbs[0].config.String() {
		t.Errorf("CreateContainer's sandbox config = %v, want the sandbox's %v", cs[0].sbConfig, sbs[0].config)
	}

	// A new Runtime finds the sandbox and builds its config again, once.
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.reopen()
	h.prepare(pod)
	if err := os.Remove(resolv); err != nil {
		t.Fatal(err)
	}
	h.start(pod, "app", 0)
	for _, c := range h.f.containerList() {
		if c.config.Metadata.Name == "app" && c.sbConfig.String() != sbs[0].config.String() {
			t.Errorf("after a restart, CreateContainer's sandbox config = %v, want the sandbox's %v", c.sbConfig, sbs[0].config)
		}
	}
}
