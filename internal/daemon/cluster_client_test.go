package daemon

import (
	"os"
	"path/filepath"
	"testing"
)

// The node's API client has the kubelet's rate limits, not client-go's
// 5/10, which throttle a node watching each object its pods reference.
func TestClusterClientHasKubeletRateLimits(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`
	if err := os.WriteFile(kubeconfig, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	o := ClusterOptions{Kubeconfig: kubeconfig}
	rc, err := o.restConfig()
	if err != nil {
		t.Fatalf("restConfig: %v", err)
	}
	if rc.QPS != 50 || rc.Burst != 100 {
		t.Errorf("QPS %v, Burst %d; want the kubelet's 50 and 100", rc.QPS, rc.Burst)
	}
	if rc.Host != "https://127.0.0.1:6443" {
		t.Errorf("host %q", rc.Host)
	}
}
