package e2e

import (
	"os"
	"path/filepath"
	"testing"
)

const netFilesPod = `
apiVersion: v1
kind: Pod
metadata:
  name: netfiles
spec:
  restartPolicy: Never
  subdomain: sub
  hostAliases:
  - ip: 192.0.2.9
    hostnames: [db, db.local]
  dnsConfig:
    options:
    - name: edns0
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "cat /etc/resolv.conf /etc/hosts"]
`

// TestPodNetworkFiles: a pod's /etc/resolv.conf is the kubelet's
// ClusterFirst one made from --cluster-dns, --cluster-domain and
// --resolv-conf, with its dnsConfig merged, and its /etc/hosts carries its
// hostAliases, on both runtimes (issue 23 items 2 and 3); without
// --cluster-dns the pod gets the host's resolver and a MissingClusterDNS
// warning.
func TestPodNetworkFiles(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the process runtime mounts the files in the container's mount namespace: needs root")
	}
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		dir := t.TempDir()
		resolv := filepath.Join(dir, "resolv.conf")
		if err := os.WriteFile(resolv, []byte("nameserver 192.0.2.53\nsearch example.com\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		r := rt.run(t, "--cluster-dns", "10.96.0.10", "--cluster-domain", "cluster.local", "--resolv-conf", resolv,
			"-f", rt.manifest(t, dir, netFilesPod, nil))
		r.assertCode(t, 0)
		for _, want := range []string{
			"search default.svc.cluster.local svc.cluster.local cluster.local example.com",
			"nameserver 10.96.0.10",
			"options ndots:5 edns0",
			"# Entries added by HostAliases.",
			"192.0.2.9\tdb\tdb.local",
		} {
			r.mustFind(t, output("app", want))
		}
		// Without a cluster DNS, ClusterFirst falls back to the host's
		// resolver with the kubelet's warning.
		r = rt.run(t, "--resolv-conf", resolv, "-f", rt.manifest(t, dir, netFilesPod, nil))
		r.assertCode(t, 0)
		r.mustFind(t, contains(`Warning MissingClusterDNS pod/netfiles pod: "netfiles_default(`))
		r.mustFind(t, output("app", "nameserver 192.0.2.53"))
	})
}
