package process

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/podnet"
)

// A container finds its pod's resolv.conf and hosts file, as the kubelet
// makes them (podnet), at /etc/resolv.conf and /etc/hosts; the host's stay
// as they were. A pod on the host's network whose DNS is the host's keeps
// the host's /etc/resolv.conf and gets the host's hosts file with its
// aliases.
func TestContainerSeesThePodsNetworkFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the files are mounted in the container's mount namespace")
	}
	hostResolv, err := os.ReadFile(podnet.EtcResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	hostHosts, err := os.ReadFile(podnet.EtcHosts)
	if err != nil {
		t.Fatal(err)
	}
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.com\noptions edns0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	aliases := []v1.HostAlias{{IP: "192.0.2.9", Hostnames: []string{"db", "db.local"}}}
	tests := map[string]struct {
		hostNetwork bool
		policy      v1.DNSPolicy
		resolvConf  string
		want        string
	}{
		"ClusterFirst": {policy: v1.DNSClusterFirst, resolvConf: resolv,
			want: "search default.svc.cluster.local svc.cluster.local cluster.local example.com\nnameserver 10.96.0.10\noptions ndots:5\n" +
				string(podnet.HostsFile([]string{"127.0.0.1"}, "web", "sub.default.svc.cluster.local", aliases))},
		"Default on the host network": {hostNetwork: true, policy: v1.DNSDefault, resolvConf: podnet.EtcResolvConf,
			want: string(hostResolv) + string(podnet.HostNetworkHostsFile(hostHosts, aliases))},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			h := newHarnessWith(t, Config{Root: t.TempDir(), DNS: podnet.Settings{
				ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: tc.resolvConf,
			}})
			pod := newPod(t, shell("main", "cat /etc/resolv.conf /etc/hosts"))
			pod.Spec.HostNetwork, pod.Spec.DNSPolicy = tc.hostNetwork, tc.policy
			pod.Spec.Subdomain, pod.Spec.HostAliases = "sub", aliases
			h.prepare(pod)
			cont, ev := h.run(pod, 0)
			if ev.Exit.ExitCode != 0 {
				t.Fatalf("exit code %d: %q", ev.Exit.ExitCode, logLines(t, cont.LogPath))
			}
			var got strings.Builder
			for _, l := range logLines(t, cont.LogPath) {
				got.WriteString(strings.TrimPrefix(l, "stdout ") + "\n")
			}
			if got.String() != tc.want {
				t.Errorf("the container's files:\n%s\nwant\n%s", got.String(), tc.want)
			}
			if _, err := os.Stat(h.r.resolvConfFile(pod.UID)); tc.hostNetwork != os.IsNotExist(err) {
				t.Errorf("the pod's own resolv.conf: %v; want one only off the host network", err)
			}
		})
	}
	if now, _ := os.ReadFile(podnet.EtcResolvConf); string(now) != string(hostResolv) {
		t.Errorf("the host's resolv.conf changed")
	}
}

// Without a cluster DNS, a ClusterFirst pod gets the host's resolver and
// the kubelet's MissingClusterDNS warning, as a Warning of the pod.
func TestMissingClusterDNSWarning(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the process runtime makes the pod's resolv.conf only where it can mount it")
	}
	h := newHarnessWith(t, Config{Root: t.TempDir(), DNS: podnet.Settings{ResolvConf: podnet.EtcResolvConf}})
	pod := newPod(t, shell("main", "true"))
	pod.Spec.DNSPolicy = v1.DNSClusterFirst
	h.prepare(pod)
	select {
	case w := <-h.r.Warnings():
		if w.PodUID != pod.UID || w.Reason != runtime.WarningReason(podnet.ReasonMissingClusterDNS) ||
			!strings.Contains(w.Message, `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`) {
			t.Errorf("warning = %+v", w)
		}
	case <-time.After(waitLimit):
		t.Fatal("no warning")
	}
	got, err := os.ReadFile(h.r.resolvConfFile(pod.UID))
	if err != nil {
		t.Fatal(err)
	}
	host, err := podnet.ReadHostDNS(podnet.EtcResolvConf)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(host.ResolvConf()) {
		t.Errorf("resolv.conf = %q, want the host's %q", got, host.ResolvConf())
	}
}

// A container that mounts a volume at /etc/hosts keeps it: the pod's hosts
// file is not mounted over it (the kubelet's shouldMountHostsFile), while
// its resolv.conf still is.
func TestVolumeAtEtcHostsKeepsIt(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the files are mounted in the container's mount namespace")
	}
	own := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(own, []byte("192.0.2.1\tmine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, Config{Root: t.TempDir(), DNS: podnet.Settings{ResolvConf: resolv}})
	c := shell("main", "cat /etc/resolv.conf /etc/hosts")
	c.VolumeMounts = []v1.VolumeMount{{Name: "hosts", MountPath: "/etc/hosts"}}
	pod := newPod(t, c)
	pod.Spec.Volumes = []v1.Volume{{Name: "hosts", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: own}}}}
	h.prepare(pod)
	cont, ev := h.run(pod, 0)
	if ev.Exit.ExitCode != 0 {
		t.Fatalf("exit code %d: %q", ev.Exit.ExitCode, logLines(t, cont.LogPath))
	}
	var got strings.Builder
	for _, l := range logLines(t, cont.LogPath) {
		got.WriteString(strings.TrimPrefix(l, "stdout ") + "\n")
	}
	if want := "nameserver 192.0.2.53\n192.0.2.1\tmine\n"; got.String() != want {
		t.Errorf("the container's files:\n%s\nwant\n%s", got.String(), want)
	}
}
