package podnet

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var hostConf = Config{Servers: []string{"192.0.2.53", "192.0.2.54"}, Searches: []string{"example.com", "corp.example"}, Options: []string{"ndots:2", "edns0"}}

func dnsPod(policy v1.DNSPolicy, hostNetwork bool, dc *v1.PodDNSConfig) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1"},
		Spec:       v1.PodSpec{DNSPolicy: policy, HostNetwork: hostNetwork, DNSConfig: dc},
	}
}

// One row per dnsPolicy, as the kubelet's GetPodDNS (dns.go) makes them.
func TestDNSPolicies(t *testing.T) {
	cluster := Settings{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: "/etc/resolv.conf"}
	standalone := Settings{ClusterDomain: "cluster.local", ResolvConf: "/etc/resolv.conf"}
	clusterFirst := Config{
		Servers:  []string{"10.96.0.10"},
		Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com", "corp.example"},
		Options:  []string{"ndots:5"},
	}
	missing := Warning{ReasonMissingClusterDNS, `pod: "web_shop(u1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`}
	tests := map[string]struct {
		pod      *v1.Pod
		s        Settings
		want     Config
		wantHost bool
		warnings []Warning
	}{
		"ClusterFirst":                              {pod: dnsPod(v1.DNSClusterFirst, false, nil), s: cluster, want: clusterFirst},
		"ClusterFirstWithHostNet on the host":       {pod: dnsPod(v1.DNSClusterFirstWithHostNet, true, nil), s: cluster, want: clusterFirst},
		"ClusterFirstWithHostNet off the host":      {pod: dnsPod(v1.DNSClusterFirstWithHostNet, false, nil), s: cluster, want: clusterFirst},
		"ClusterFirst on the host network: Default": {pod: dnsPod(v1.DNSClusterFirst, true, nil), s: cluster, want: hostConf, wantHost: true},
		"Default": {pod: dnsPod(v1.DNSDefault, false, nil), s: cluster, want: hostConf, wantHost: true},
		"None":    {pod: dnsPod(v1.DNSNone, false, &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}}), s: cluster, want: Config{Servers: []string{"1.1.1.1"}}},
		"ClusterFirst without a cluster DNS": {pod: dnsPod(v1.DNSClusterFirst, false, nil), s: standalone, want: hostConf, wantHost: true,
			warnings: []Warning{missing}},
		"Default without a resolv.conf": {pod: dnsPod(v1.DNSDefault, false, nil), s: Settings{},
			want: Config{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}},
		"ClusterFirst without a cluster domain": {pod: dnsPod(v1.DNSClusterFirst, false, nil), s: Settings{ClusterDNS: []string{"10.96.0.10"}, ResolvConf: "/etc/resolv.conf"},
			want: Config{Servers: []string{"10.96.0.10"}, Searches: hostConf.Searches, Options: []string{"ndots:5"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, isHost, warnings := DNS(tc.pod, tc.s, hostConf)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("config = %+v, want %+v", got, tc.want)
			}
			if isHost != tc.wantHost {
				t.Errorf("isHost = %v, want %v", isHost, tc.wantHost)
			}
			if !reflect.DeepEqual(warnings, tc.warnings) {
				t.Errorf("warnings = %q, want %q", warnings, tc.warnings)
			}
		})
	}
}

// dnsConfig is merged in as appendDNSConfig does: nameservers and searches
// appended without duplicates, options replaced by name.
func TestDNSConfigMerged(t *testing.T) {
	s := Settings{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: "/etc/resolv.conf"}
	pod := dnsPod(v1.DNSClusterFirst, false, &v1.PodDNSConfig{
		Nameservers: []string{"10.96.0.10", "1.1.1.1"},
		Searches:    []string{"cluster.local", "my.dns.search.suffix"},
		Options:     []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}, {Name: "timeout", Value: ptr.To("")}},
	})
	got, isHost, warnings := DNS(pod, s, hostConf)
	want := Config{
		Servers:  []string{"10.96.0.10", "1.1.1.1"},
		Searches: []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com", "corp.example", "my.dns.search.suffix"},
		Options:  []string{"ndots:2", "edns0", "timeout"},
	}
	if !reflect.DeepEqual(got, want) || isHost || len(warnings) != 0 {
		t.Errorf("got %+v, %v, %q; want %+v, false, none", got, isHost, warnings, want)
	}
	// Default with a dnsConfig is no longer the host's file.
	if _, isHost, _ := DNS(dnsPod(v1.DNSDefault, true, &v1.PodDNSConfig{Searches: []string{"x"}}), s, hostConf); isHost {
		t.Error("Default with a dnsConfig: isHost")
	}
}

// The kubelet's limits (formDNSConfigFitsLimits), each cut with its
// DNSConfigForming warning.
func TestDNSLimits(t *testing.T) {
	s := Settings{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local", ResolvConf: "/etc/resolv.conf"}
	t.Run("nameservers", func(t *testing.T) {
		pod := dnsPod(v1.DNSClusterFirst, false, &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8", "9.9.9.9"}})
		got, _, warnings := DNS(pod, s, hostConf)
		if want := []string{"10.96.0.10", "1.1.1.1", "8.8.8.8"}; !reflect.DeepEqual(got.Servers, want) {
			t.Errorf("servers = %q, want %q", got.Servers, want)
		}
		want := []Warning{{ReasonDNSConfigForming, "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 10.96.0.10 1.1.1.1 8.8.8.8"}}
		if !reflect.DeepEqual(warnings, want) {
			t.Errorf("warnings = %q, want %q", warnings, want)
		}
	})
	t.Run("search paths", func(t *testing.T) {
		var searches []string
		for i := range 40 {
			searches = append(searches, fmt.Sprintf("s%d.example", i))
		}
		got, _, warnings := DNS(dnsPod(v1.DNSNone, false, &v1.PodDNSConfig{Searches: searches}), s, hostConf)
		if !reflect.DeepEqual(got.Searches, searches[:MaxSearchPaths]) {
			t.Errorf("searches = %q, want the first %d", got.Searches, MaxSearchPaths)
		}
		if len(warnings) != 1 || !strings.HasPrefix(warnings[0].Message, "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: s0.example s1.example") {
			t.Errorf("warnings = %q", warnings)
		}
	})
	t.Run("a search path longer than a DNS subdomain", func(t *testing.T) {
		long := strings.Repeat("a", 254)
		got, _, warnings := DNS(dnsPod(v1.DNSNone, false, &v1.PodDNSConfig{Searches: []string{"a.example", long, "b.example"}}), s, hostConf)
		if want := []string{"a.example", "b.example"}; !reflect.DeepEqual(got.Searches, want) || len(warnings) != 1 {
			t.Errorf("searches = %q, warnings %q; want %q and a warning", got.Searches, warnings, want)
		}
	})
	t.Run("search line length", func(t *testing.T) {
		var searches []string
		for i := range 12 {
			searches = append(searches, fmt.Sprintf("%0200d", i)) // 12 × 201 - 1 = 2411 characters
		}
		got, _, warnings := DNS(dnsPod(v1.DNSNone, false, &v1.PodDNSConfig{Searches: searches}), s, hostConf)
		if len(got.Searches) != 10 || len(strings.Join(got.Searches, " ")) > MaxSearchListChars || len(warnings) != 1 {
			t.Errorf("%d searches (%d characters), warnings %q; want 10 within %d and a warning", len(got.Searches), len(strings.Join(got.Searches, " ")), warnings, MaxSearchListChars)
		}
	})
}

func TestResolvConf(t *testing.T) {
	c := Config{Servers: []string{"10.96.0.10", "1.1.1.1"}, Searches: []string{"a.svc", "svc"}, Options: []string{"ndots:5"}}
	want := "search a.svc svc\nnameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:5\n"
	if got := string(c.ResolvConf()); got != want {
		t.Errorf("ResolvConf = %q, want %q", got, want)
	}
	if got := string((Config{Servers: []string{"1.1.1.1"}}).ResolvConf()); got != "nameserver 1.1.1.1\n" {
		t.Errorf("servers only: %q", got)
	}
}

// The host's resolv.conf is read as parseResolvConf reads it.
func TestParseResolvConf(t *testing.T) {
	in := "# generated\nnameserver 192.0.2.53\nsearch old.example\nsearch example.com. corp.example\noptions ndots:1\noptions ndots:2 edns0\nnameserver 192.0.2.54\ndomain ignored\n"
	got, err := ParseResolvConf([]byte(in))
	if err != nil || !reflect.DeepEqual(got, hostConf) {
		t.Errorf("got %+v, %v; want %+v", got, err, hostConf)
	}
	if _, err := ParseResolvConf([]byte("nameserver\n")); err == nil || !strings.Contains(err.Error(), "nameserver list is empty") {
		t.Errorf("empty nameserver: %v", err)
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "resolv.conf")
	if err := os.WriteFile(p, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadHostDNS(p); err != nil || !reflect.DeepEqual(got, hostConf) {
		t.Errorf("ReadHostDNS = %+v, %v", got, err)
	}
	if _, err := ReadHostDNS(filepath.Join(dir, "missing")); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing file: %v", err)
	}
	if got, err := ReadHostDNS(""); err != nil || !reflect.DeepEqual(got, Config{}) {
		t.Errorf(`ReadHostDNS("") = %+v, %v`, got, err)
	}
}
