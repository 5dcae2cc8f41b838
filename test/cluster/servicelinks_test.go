package cluster

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/clusterobjects"
)

// envPod prints its environment, one variable a line, and ends.
const envPod = `
apiVersion: v1
kind: Pod
metadata:
  name: {{.Name}}
  namespace: {{.NS}}
spec:
  restartPolicy: Never
  enableServiceLinks: {{.Links}}
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "env | sort"]
    env:
    - name: WEB_URL
      value: "http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT_HTTP)/"
`

// TestServiceLinks: a pod on the node gets the Docker-links variables of
// its namespace's Services and the master service's (the API server's
// kubernetes Service of default), read by the node's Service informer;
// with enableServiceLinks false only the master service's.
func TestServiceLinks(t *testing.T) {
	c := needControlPlane(t)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"))
	ns := namespace(t, c, "svcenv")
	ctx := t.Context()
	web, err := c.client.CoreV1().Services(ns).Create(ctx, &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: v1.ServiceSpec{Ports: []v1.ServicePort{
			{Name: "http", Port: 80}, {Name: "dns-udp", Port: 53, Protocol: v1.ProtocolUDP},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	master, err := c.client.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mip, mport := master.Spec.ClusterIP, strconv.Itoa(int(master.Spec.Ports[0].Port))
	ip := web.Spec.ClusterIP

	for _, links := range []bool{true, false} {
		name := "env-links-" + strconv.FormatBool(links)
		r := strings.NewReplacer("{{.Name}}", name, "{{.NS}}", ns, "{{.Links}}", strconv.FormatBool(links))
		n.apply(t, r.Replace(envPod))
		p := c.waitPod(t, ns, name, "its end", waitTimeout, func(p *v1.Pod) bool {
			return p != nil && (p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed)
		})
		out := c.mustKubectl(t, "logs", "-n", ns, name)
		if p.Status.Phase != v1.PodSucceeded {
			t.Fatalf("pod %s %s: %s; its log:\n%s", name, p.Status.Phase, podSummary(p), out)
		}
		lines := map[string]bool{}
		for _, l := range strings.Split(out, "\n") {
			lines[l] = true
		}
		masterLines := []string{
			"KUBERNETES_SERVICE_HOST=" + mip, "KUBERNETES_SERVICE_PORT=" + mport,
			"KUBERNETES_PORT=tcp://" + mip + ":" + mport,
		}
		webLines := []string{
			"WEB_SERVICE_HOST=" + ip, "WEB_SERVICE_PORT=80", "WEB_SERVICE_PORT_HTTP=80", "WEB_SERVICE_PORT_DNS_UDP=53",
			"WEB_PORT=tcp://" + ip + ":80", "WEB_PORT_53_UDP=udp://" + ip + ":53", "WEB_PORT_53_UDP_ADDR=" + ip,
			"WEB_URL=http://" + ip + ":80/",
		}
		for _, l := range masterLines {
			if !lines[l] {
				t.Errorf("pod %s: no %q in its env:\n%s", name, l, out)
			}
		}
		for _, l := range webLines {
			if lines[l] != links {
				t.Errorf("pod %s (enableServiceLinks %v): %q present %v:\n%s", name, links, l, lines[l], out)
			}
		}
	}
}

// TestServicesAsTheNode: the node's Service informer lists and watches the
// Services of every namespace as the node itself (system:node:NAME), which
// the Node authorizer allows.
func TestServicesAsTheNode(t *testing.T) {
	cp := needControlPlane(t)
	t.Parallel()
	client := nodeIdentity(t, cp, nodeName(t, "svc"))
	s := clusterobjects.NewServices(context.Background(), client)
	t.Cleanup(s.Close)
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	if err := s.WaitForServices(ctx); err != nil {
		t.Fatalf("WaitForServices as the node: %v", err)
	}
	list, err := s.Services("default")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, svc := range list {
		found = found || svc.Name == "kubernetes"
	}
	if !found {
		t.Errorf("Services(default) = %d services, want the kubernetes Service among them", len(list))
	}
}
