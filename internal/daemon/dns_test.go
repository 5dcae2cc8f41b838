package daemon

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/podward/podward/internal/runtime/podnet"
)

// The DNS flags' defaults (cluster mode: kubeadm's cluster.local;
// standalone: the kubelet's ""), what reaches the runtimes, and the bad
// values refused naming the flag.
func TestDNSSettings(t *testing.T) {
	if d := DefaultClusterOptions().Runtime; d.ClusterDomain != DefaultClusterDomain || d.ResolvConf != "/etc/resolv.conf" {
		t.Errorf("cluster defaults: domain %q, resolv.conf %q", d.ClusterDomain, d.ResolvConf)
	}
	if d := DefaultOptions().Runtime; d.ClusterDomain != "" || d.ResolvConf != "/etc/resolv.conf" {
		t.Errorf("standalone defaults: domain %q, resolv.conf %q", d.ClusterDomain, d.ResolvConf)
	}
	o := RuntimeOptions{ClusterDNS: []string{"10.96.0.10", "fd00::a"}, ClusterDomain: "cluster.local", ResolvConf: "/x"}
	got, err := o.dnsSettings()
	want := podnet.Settings{ClusterDNS: []string{"10.96.0.10", "fd00::a"}, ClusterDomain: "cluster.local", ResolvConf: "/x"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("dnsSettings = %+v, %v; want %+v", got, err, want)
	}
	for flag, o := range map[string]RuntimeOptions{
		"--cluster-dns":    {ClusterDNS: []string{"10.96.0.10", "dns.example"}},
		"--cluster-domain": {ClusterDomain: "Cluster_Local"},
	} {
		_, err := o.dnsSettings()
		if !errors.Is(err, ErrBadOptions) || !strings.HasPrefix(err.Error(), flag+": ") {
			t.Errorf("%s: %v, want a bad option naming it", flag, err)
		}
	}
}
