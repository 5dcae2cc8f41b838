package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The control plane of hack/control-plane-up.sh is a whole one: a
// scheduler places pods, the controller-manager makes each namespace's
// default ServiceAccount, and ServiceAccount admission gives pods their
// token volume, as in any real cluster.

// needControllers fails (skips without PODWARD_REQUIRE_CLUSTER) when the
// control plane runs no scheduler and controller-manager
// (PODWARD_CP_CONTROLLERS=0).
func needControllers(t *testing.T, c *controlPlane) {
	t.Helper()
	if c.env["CP_CONTROLLERS"] != "1" {
		t.Fatalf("the control plane runs no kube-controller-manager and kube-scheduler (CP_CONTROLLERS=%q in %s)", c.env["CP_CONTROLLERS"], c.env["PODWARD_CP_BASE"])
	}
}

// testNamespace makes a namespace of the test's own, deleted at its end,
// and waits for its default ServiceAccount and kube-root-ca.crt ConfigMap
// (the controller-manager's).
func testNamespace(t *testing.T, c *controlPlane) string {
	t.Helper()
	ctx := t.Context()
	name := strings.ReplaceAll(nodeName(t, "ns"), ".", "-")
	if _, err := c.client.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.client.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		_, err := c.client.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			_, err = c.client.CoreV1().ConfigMaps(name).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		}
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("namespace %s: no default ServiceAccount and kube-root-ca.crt within %v (the controller-manager makes them): %v", name, waitTimeout, err)
	}
	return name
}

// TestSchedulerPlacesPodOnNode: a pod without spec.nodeName, in a new
// namespace, is placed on the podward node by kube-scheduler (once the node
// lifecycle controller has seen it Ready) and runs there; admission gave it
// its namespace's default ServiceAccount. The node runs the process
// runtime, so the pod tolerates its taint (TestSchedulerKeepsOffProcessNode
// is one that does not).
func TestSchedulerPlacesPodOnNode(t *testing.T) {
	c := needControlPlane(t)
	needControllers(t, c)
	t.Parallel()
	n := startNode(t, c, nodeName(t, "a"))
	ns := testNamespace(t, c)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "scheduled", Namespace: ns},
		Spec: v1.PodSpec{
			// only this test's node: the other tests' nodes run beside it
			NodeSelector: map[string]string{v1.LabelHostname: n.name},
			Tolerations:  []v1.Toleration{processRuntimeToleration},
			Containers: []v1.Container{{
				Name: "app", Image: "busybox",
				Command: []string{"/bin/bash", "-c", "trap 'exit 0' TERM; while true; do sleep 100 & wait; done"},
			}},
		},
	}
	if _, err := c.client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		grace := int64(1)
		_ = c.client.CoreV1().Pods(ns).Delete(context.Background(), "scheduled", metav1.DeleteOptions{GracePeriodSeconds: &grace})
		c.waitPod(t, ns, "scheduled", "deletion", waitTimeout, func(p *v1.Pod) bool { return p == nil })
	})
	got := c.waitPod(t, ns, "scheduled", "Running on the node", waitTimeout, func(p *v1.Pod) bool {
		return p != nil && p.Spec.NodeName == n.name && p.Status.Phase == v1.PodRunning
	})
	if got.Spec.ServiceAccountName != "default" {
		t.Errorf("spec.serviceAccountName = %q, want default (ServiceAccount admission)", got.Spec.ServiceAccountName)
	}
	var scheduled *v1.PodCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == v1.PodScheduled {
			scheduled = &got.Status.Conditions[i]
		}
	}
	if scheduled == nil || scheduled.Status != v1.ConditionTrue {
		t.Errorf("PodScheduled condition %+v, want True (set by the scheduler)", scheduled)
	}
}

// TestServiceAccountAdmissionGivesTokenVolume: a pod that does not opt out
// gets the kube-api-access-* projected volume (the token, kube-root-ca.crt
// and the namespace) and its mount in every container, as in every real
// cluster. The pod is created unschedulable, so that only admission is
// looked at here.
func TestServiceAccountAdmissionGivesTokenVolume(t *testing.T) {
	c := needControlPlane(t)
	needControllers(t, c)
	t.Parallel()
	ns := testNamespace(t, c)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "token", Namespace: ns},
		Spec: v1.PodSpec{
			NodeSelector: map[string]string{"podward.test/no-such-node": "true"},
			Containers:   []v1.Container{{Name: "app", Image: "busybox"}},
		},
	}
	got, err := c.client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var vol *v1.Volume
	for i := range got.Spec.Volumes {
		if strings.HasPrefix(got.Spec.Volumes[i].Name, "kube-api-access-") {
			vol = &got.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Projected == nil {
		t.Fatalf("volumes %+v: want the projected kube-api-access-* volume of ServiceAccount admission", got.Spec.Volumes)
	}
	var token, ca, namespace bool
	for _, s := range vol.Projected.Sources {
		token = token || s.ServiceAccountToken != nil
		ca = ca || (s.ConfigMap != nil && s.ConfigMap.Name == "kube-root-ca.crt")
		namespace = namespace || s.DownwardAPI != nil
	}
	if !token || !ca || !namespace {
		t.Errorf("projected sources %+v: want a serviceAccountToken, the kube-root-ca.crt ConfigMap and the namespace", vol.Projected.Sources)
	}
	mounted := false
	for _, m := range got.Spec.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == vol.Name && m.MountPath == "/var/run/secrets/kubernetes.io/serviceaccount")
	}
	if !mounted {
		t.Errorf("container mounts %+v: want %s at /var/run/secrets/kubernetes.io/serviceaccount", got.Spec.Containers[0].VolumeMounts, vol.Name)
	}
}
