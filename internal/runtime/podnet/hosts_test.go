package podnet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
)

const localhost = "# Kubernetes-managed hosts file.\n" +
	"127.0.0.1\tlocalhost\n" +
	"::1\tlocalhost ip6-localhost ip6-loopback\n" +
	"fe00::0\tip6-localnet\n" +
	"fe00::0\tip6-mcastprefix\n" +
	"fe00::1\tip6-allnodes\n" +
	"fe00::2\tip6-allrouters\n"

// The kubelet's managedHostsFileContent and its tests
// (kubelet_pods_test.go, TestManagedHostsFileContent).
func TestHostsFile(t *testing.T) {
	aliases := []v1.HostAlias{
		{IP: "123.45.67.89", Hostnames: []string{"foo", "bar", "baz"}},
		{IP: "456.78.90.123", Hostnames: []string{"park", "doo", "boo"}},
	}
	tests := map[string]struct {
		ips              []string
		hostname, domain string
		aliases          []v1.HostAlias
		want             string
	}{
		"the pod's name": {ips: []string{"10.0.0.5"}, hostname: "web", want: localhost + "10.0.0.5\tweb\n"},
		"with a domain, every pod IP": {ips: []string{"10.0.0.5", "fd00::5"}, hostname: "web-0", domain: "web.shop.svc.cluster.local",
			want: localhost + "10.0.0.5\tweb-0.web.shop.svc.cluster.local\tweb-0\n" + "fd00::5\tweb-0.web.shop.svc.cluster.local\tweb-0\n"},
		"hostAliases": {ips: []string{"203.0.113.1"}, hostname: "podFoo", aliases: aliases,
			want: localhost + "203.0.113.1\tpodFoo\n\n# Entries added by HostAliases.\n123.45.67.89\tfoo\tbar\tbaz\n456.78.90.123\tpark\tdoo\tboo\n"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := string(HostsFile(tc.ips, tc.hostname, tc.domain, tc.aliases)); got != tc.want {
				t.Errorf("HostsFile =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// A host-network pod's file is the node's with the kubelet's header and the
// aliases (nodeHostsFileContent).
func TestHostNetworkHostsFile(t *testing.T) {
	node := "127.0.0.1\tlocalhost\n192.0.2.1\tnode1\n"
	got := string(HostNetworkHostsFile([]byte(node), []v1.HostAlias{{IP: "192.0.2.9", Hostnames: []string{"db"}}}))
	want := "# Kubernetes-managed hosts file (host network).\n" + node + "\n# Entries added by HostAliases.\n192.0.2.9\tdb\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// shouldMountHostsFile and makeMounts: a pod IP or the host network, and
// no volumeMount of the container at /etc/hosts.
func TestMountsHostsFile(t *testing.T) {
	c := &v1.Container{Name: "c"}
	if MountsHostsFile(c, nil, false) {
		t.Error("no pod IP yet: mounted")
	}
	if !MountsHostsFile(c, []string{"10.0.0.5"}, false) {
		t.Error("with a pod IP: not mounted")
	}
	if !MountsHostsFile(c, nil, true) {
		t.Error("host network: not mounted")
	}
	c.VolumeMounts = []v1.VolumeMount{{Name: "v", MountPath: "/etc/hosts"}}
	if MountsHostsFile(c, []string{"10.0.0.5"}, false) {
		t.Error("the container mounts its own /etc/hosts: mounted")
	}
}

// HostsFileFor picks the kubelet's file by the pod's network: the managed
// one naming its host name and domain at its IPs, or the machine's with
// the aliases on the host's network (where the IPs do not matter).
func TestHostsFileFor(t *testing.T) {
	aliases := []v1.HostAlias{{IP: "192.0.2.9", Hostnames: []string{"db"}}}
	machine := []byte("10.0.0.1\tnode\n")
	pod := func(hostNetwork bool) *model.Pod {
		return &model.Pod{Pod: &v1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
			Spec:       v1.PodSpec{Subdomain: "sub", HostNetwork: hostNetwork, HostAliases: aliases},
		}}
	}
	got, err := HostsFileFor(pod(false), []string{"10.88.0.7"}, "cluster.local", machine)
	if err != nil {
		t.Fatal(err)
	}
	if want := HostsFile([]string{"10.88.0.7"}, "web", "sub.shop.svc.cluster.local", aliases); string(got) != string(want) {
		t.Errorf("pod network: got\n%s\nwant\n%s", got, want)
	}
	got, err = HostsFileFor(pod(true), []string{"10.88.0.7"}, "cluster.local", machine)
	if err != nil {
		t.Fatal(err)
	}
	if want := HostNetworkHostsFile(machine, aliases); string(got) != string(want) {
		t.Errorf("host network: got\n%s\nwant\n%s", got, want)
	}
	bad := pod(false)
	bad.Spec.Hostname = "Not_A_Label"
	if _, err := HostsFileFor(bad, nil, "cluster.local", machine); err == nil {
		t.Error("an invalid spec.hostname: no error")
	}
}
