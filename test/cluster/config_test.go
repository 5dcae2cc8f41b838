package cluster

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// tokenPod reads the API server as its service account, with the token,
// the CA and the namespace of the kube-api-access-* volume ServiceAccount
// admission gave it.
const tokenPod = `
apiVersion: v1
kind: Pod
metadata:
  name: whoami
  namespace: {{.NS}}
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c"]
    args:
    - |
      sa=/var/run/secrets/kubernetes.io/serviceaccount
      echo "namespace file: $(cat $sa/namespace)"
      {{.Kubectl}} --server {{.Server}} --token "$(cat $sa/token)" --certificate-authority $sa/ca.crt auth whoami -o json | tr -d '\n'
      echo
`

// TestPodReadsAPIWithItsToken: a pod that keeps the token volume
// ServiceAccount admission gives it (as every pod of a real cluster does)
// runs on the node and reads the API server with that token: the API
// server knows it as its namespace's default service account, bound to
// this very pod (the token is minted through the TokenRequest API with the
// pod as its bound object).
func TestPodReadsAPIWithItsToken(t *testing.T) {
	c := needControlPlane(t)
	needControllers(t, c)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"))
	ns := testNamespace(t, c)
	r := strings.NewReplacer("{{.NS}}", ns, "{{.Kubectl}}", c.env["KUBECTL"], "{{.Server}}", c.env["CP_APISERVER_URL"])
	n.apply(t, r.Replace(tokenPod))
	p := c.waitPod(t, ns, "whoami", "Succeeded", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && (p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed)
	})
	out := c.mustKubectl(t, "logs", "-n", ns, "whoami")
	if p.Status.Phase != v1.PodSucceeded {
		t.Fatalf("pod whoami %s: %s; its log:\n%s", p.Status.Phase, podSummary(p), out)
	}
	if !strings.Contains(out, "namespace file: "+ns+"\n") {
		t.Errorf("log %q: want the namespace file to hold %s", out, ns)
	}
	var review struct {
		Status struct {
			UserInfo struct {
				Username string              `json:"username"`
				Extra    map[string][]string `json:"extra"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	line := out[strings.Index(out, "{"):]
	if err := json.Unmarshal([]byte(strings.TrimSpace(line)), &review); err != nil {
		t.Fatalf("kubectl auth whoami in the pod: %v; log:\n%s", err, out)
	}
	if want := "system:serviceaccount:" + ns + ":default"; review.Status.UserInfo.Username != want {
		t.Errorf("the pod's token is %q, want %q", review.Status.UserInfo.Username, want)
	}
	if got := review.Status.UserInfo.Extra["authentication.kubernetes.io/pod-uid"]; len(got) != 1 || got[0] != string(p.UID) {
		t.Errorf("the token is bound to pod %v, want this pod %s", got, p.UID)
	}
}

// watcherPod prints its mounted ConfigMap's value each time it changes.
const watcherPod = `
apiVersion: v1
kind: Pod
metadata:
  name: watcher
  namespace: {{.NS}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c"]
    args:
    - |
      last=
      while true; do
        v=$(cat /etc/watched/value)
        if [ "$v" != "$last" ]; then echo "value=$v"; last=$v; fi
        sleep 0.05
      done
    volumeMounts: [{name: watched, mountPath: /etc/watched}]
  volumes: [{name: watched, configMap: {name: watched}}]
`

// TestConfigMapUpdateReachesPod: a ConfigMap a pod on the node mounts is
// read from the API server (as the node's own identity, which the Node
// authorizer lets read only what its pods reference), and each update of
// it reaches the mounted file within seconds (the kubelet: up to its sync
// period plus its cache TTL, about a minute).
func TestConfigMapUpdateReachesPod(t *testing.T) {
	c := needControlPlane(t)
	needControllers(t, c)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"))
	ns := testNamespace(t, c)
	cms := c.client.CoreV1().ConfigMaps(ns)
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}, Data: map[string]string{"value": "one"}}
	if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.apply(t, strings.ReplaceAll(watcherPod, "{{.NS}}", ns))
	c.waitPod(t, ns, "watcher", "Running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning
	})
	waitLogs(t, c, "value=one", "-n", ns, "watcher")
	for _, value := range []string{"two", "three"} {
		cm.Data["value"] = value
		if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		waitLogs(t, c, "value="+value, "-n", ns, "watcher")
		t.Logf("update to %q seen by the pod within %v", value, time.Since(start).Round(time.Millisecond))
	}
}

// labelsPod prints its downwardAPI labels and annotations files, each on
// one line, each time one changes.
const labelsPod = `
apiVersion: v1
kind: Pod
metadata:
  name: labelled
  namespace: {{.NS}}
  labels: {app: labelled}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    command: ["/bin/bash", "-c"]
    args:
    - |
      last=
      while true; do
        v="labels=$(tr '\n' ' ' < /etc/podinfo/labels) annotations=$(tr '\n' ' ' < /etc/podinfo/annotations)"
        if [ "$v" != "$last" ]; then echo "$v"; last=$v; fi
        sleep 0.05
      done
    volumeMounts: [{name: podinfo, mountPath: /etc/podinfo}]
  volumes:
  - name: podinfo
    downwardAPI:
      items:
      - {path: labels, fieldRef: {fieldPath: metadata.labels}}
      - {path: annotations, fieldRef: {fieldPath: metadata.annotations}}
`

// TestLabelChangeReachesDownwardAPIVolume: `kubectl label` and `kubectl
// annotate` of a running pod on the node rewrite its downwardAPI volume's
// labels and annotations files, as the kubelet does, without restarting
// its container.
func TestLabelChangeReachesDownwardAPIVolume(t *testing.T) {
	c := needControlPlane(t)
	needControllers(t, c)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"))
	ns := testNamespace(t, c)
	n.apply(t, strings.ReplaceAll(labelsPod, "{{.NS}}", ns))
	c.waitPod(t, ns, "labelled", "Running", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Status.Phase == v1.PodRunning
	})
	waitLogs(t, c, `labels=app="labelled"`, "-n", ns, "labelled")
	start := time.Now()
	c.mustKubectl(t, "label", "pod", "-n", ns, "labelled", "x=y", "--overwrite")
	waitLogs(t, c, `labels=app="labelled" x="y" `, "-n", ns, "labelled")
	t.Logf("the label change seen by the pod within %v", time.Since(start).Round(time.Millisecond))
	c.mustKubectl(t, "annotate", "pod", "-n", ns, "labelled", "note=hi")
	waitLogs(t, c, `note="hi"`, "-n", ns, "labelled")
	p, err := c.client.CoreV1().Pods(ns).Get(t.Context(), "labelled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the container restarted for a label change: %s", podSummary(p))
	}
}
