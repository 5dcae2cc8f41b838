package cluster

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	v1 "k8s.io/api/core/v1"
)

const metricsPod = `
apiVersion: v1
kind: Pod
metadata:
  name: node-metrics
spec:
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"]
`

// TestKubeletPortServesMetrics: the node's kubelet port serves /metrics in
// the Prometheus text format to a user the API server allows get on
// nodes/metrics (RBAC, through a SubjectAccessReview), as the kubelet does
// (kubelet 1.37, pkg/kubelet/server/auth.go: /metrics needs nodes/metrics);
// nodes/proxy, which reads the logs, is not enough, and a client without
// credentials gets 401. The values are the node's: its running pod shows.
func TestKubeletPortServesMetrics(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	ca := loadClusterCA(t, c)
	suffix := randomSuffix(t)
	scraper, logReader := "podward-scraper-"+suffix, "podward-proxy-"+suffix
	c.bindNodesRole(t, scraper, "metrics")
	c.bindNodesRole(t, logReader, "proxy")

	n := startNode(t, c, nodeName(t, "m"))
	n.apply(t, metricsPod)
	c.waitPod(t, "default", "node-metrics", "Running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning
	})

	t.Run("bound to nodes/metrics", func(t *testing.T) {
		code, body := n.kubeletGet(t, "/metrics", ca.clientCert(t, scraper), "")
		if code != 200 {
			t.Fatalf("got %d %q", code, body)
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(body))
		if err != nil {
			t.Fatalf("parse /metrics: %v", err)
		}
		if f := fams["kubelet_running_pods"]; f == nil || len(f.Metric) != 1 || f.Metric[0].GetGauge().GetValue() < 1 {
			t.Errorf("kubelet_running_pods %v, want the running pod counted", f)
		}
		if f := fams["kubelet_started_containers_total"]; f == nil {
			t.Error("no kubelet_started_containers_total")
		}
		n.waitLogLine(t, `msg="kubelet API request" user=`+scraper+" ", "path=/metrics", "decision=allowed")
	})
	forbidden := func(user string) string {
		return fmt.Sprintf("Forbidden (user=%s, verb=get, resource=nodes, subresource(s)=[metrics])\n", user)
	}
	for _, tc := range []struct {
		name string
		cert *tls.Certificate
		code int
		body string
	}{
		{"bound to nodes/proxy only", ca.clientCert(t, logReader), 403, forbidden(logReader)},
		{"no role", ca.clientCert(t, "random-user-"+suffix), 403, forbidden("random-user-" + suffix)},
		{"no credentials", nil, 401, "Unauthorized\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if code, body := n.kubeletGet(t, "/metrics", tc.cert, ""); code != tc.code || body != tc.body {
				t.Errorf("got %d %q, want %d %q", code, body, tc.code, tc.body)
			}
		})
	}
	c.mustKubectl(t, "delete", "pod", "node-metrics", "--timeout", "60s")
}
