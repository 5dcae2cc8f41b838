package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	toolswatch "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/test/internal/bintest"
)

// The workloads of the controllers of kube-controller-manager (Job,
// DaemonSet, Deployment) on a CRI node with the pod network, the node's
// default: the controllers make the pods, kube-scheduler places them, the
// node runs them and the controllers see what it reports.
//
// The tests of this package share one control plane and run their nodes
// side by side: each workload here is pinned to its test's node (a
// nodeSelector on kubernetes.io/hostname, so that the DaemonSet controller
// too makes a pod for that node only), tolerates whatever taints the node
// has, and lives in a namespace of its test's own.

// workloadTimeout bounds the wait for a workload's pods: the controller
// makes them, the scheduler places them (once the node lifecycle controller
// saw the node Ready), the node pulls, makes the sandbox and its network,
// and starts the containers, on a machine shared with the other tests.
const workloadTimeout = 2 * waitTimeout

// deferStatusesAnnotation is where the node publishes the defer
// containers' statuses (docs/lifecycle.md, "Status and events").
const deferStatusesAnnotation = "pod.alpha.kubernetes.io/defer-container-statuses"

// startCRINode starts a node on the CRI runtime of hack/with-cri.sh, with
// the pod network (the default in cluster mode).
func startCRINode(t *testing.T, c *controlPlane) *node {
	t.Helper()
	rt := bintest.CRI()
	return startNode(t, c, nodeName(t, "a"), rt.Args...)
}

// needCRICluster is what every test here needs: the control plane with
// its controllers and the CRI environment. It runs before t.Parallel.
func needCRICluster(t *testing.T) *controlPlane {
	t.Helper()
	c := needControlPlane(t)
	needControllers(t, c)
	bintest.CRI().Need(t)
	return c
}

// pinned makes spec run on n only, whatever taints n has.
func pinned(n *node, spec v1.PodSpec) v1.PodSpec {
	spec.NodeSelector = map[string]string{v1.LabelHostname: n.name}
	spec.Tolerations = []v1.Toleration{{Operator: v1.TolerationOpExists}}
	spec.TerminationGracePeriodSeconds = ptr.To[int64](5)
	return spec
}

// sleeper is a busybox container that runs until its stop signal, and
// exits 0 on it.
func sleeper(name string) v1.Container {
	return v1.Container{
		Name: name, Image: "busybox",
		Command: []string{"sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1 & wait; done"},
	}
}

// waitPods watches the pods of ns that selector matches until cond holds
// for them, and returns them.
func (c *controlPlane) waitPods(t *testing.T, ns, selector, what string, within time.Duration, cond func([]*v1.Pod) bool) []*v1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	lw := cache.NewFilteredListWatchFromClient(c.client.CoreV1().RESTClient(), "pods", ns, func(o *metav1.ListOptions) { o.LabelSelector = selector })
	var last []*v1.Pod
	check := func(store cache.Store) bool {
		last = last[:0]
		for _, o := range store.List() {
			last = append(last, o.(*v1.Pod))
		}
		slices.SortFunc(last, func(a, b *v1.Pod) int { return strings.Compare(a.Name, b.Name) })
		return cond(last)
	}
	var store cache.Store
	_, err := toolswatch.UntilWithSync(ctx, lw, &v1.Pod{}, func(s cache.Store) (bool, error) {
		store = s
		return check(s), nil
	}, func(watch.Event) (bool, error) { return check(store), nil })
	if err != nil {
		var seen []string
		for _, p := range last {
			seen = append(seen, p.Name+" on "+p.Spec.NodeName+": "+podSummary(p))
		}
		t.Fatalf("pods %s in %s: no %s within %v: %v; last seen: %v", selector, ns, what, within, err, seen)
	}
	return slices.Clone(last)
}

// waitJob watches the Job until cond holds for it.
func (c *controlPlane) waitJob(t *testing.T, ns, name, what string, within time.Duration, cond func(*batchv1.Job) bool) *batchv1.Job {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	lw := cache.NewListWatchFromClient(c.client.BatchV1().RESTClient(), "jobs", ns, fields.OneTermEqualSelector("metadata.name", name))
	var last *batchv1.Job
	_, err := toolswatch.UntilWithSync(ctx, lw, &batchv1.Job{}, func(store cache.Store) (bool, error) {
		if items := store.List(); len(items) > 0 {
			last = items[0].(*batchv1.Job)
			return cond(last), nil
		}
		return false, nil
	}, func(ev watch.Event) (bool, error) {
		j, ok := ev.Object.(*batchv1.Job)
		if !ok || ev.Type == watch.Deleted {
			return false, nil
		}
		last = j
		return cond(j), nil
	})
	if err != nil {
		st := "(none)"
		if last != nil {
			st = fmt.Sprintf("%+v", last.Status)
		}
		t.Fatalf("job %s/%s: no %s within %v: %v; last status: %s", ns, name, what, within, err, st)
	}
	return last
}

// jobComplete is the Job controller's verdict of success: the Complete
// condition and one succeeded pod.
func jobComplete(j *batchv1.Job) bool {
	for _, cond := range j.Status.Conditions {
		if cond.Type == batchv1.JobComplete && cond.Status == v1.ConditionTrue {
			return j.Status.Succeeded == 1
		}
		if cond.Type == batchv1.JobFailed && cond.Status == v1.ConditionTrue {
			return true // checked by the caller
		}
	}
	return false
}

// podReady says whether the pod is Running with its Ready condition True.
func podReady(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == v1.PodReady {
			return cond.Status == v1.ConditionTrue
		}
	}
	return false
}

// allOnNode says whether there are n pods, all on node, all satisfying ok.
func allOnNode(pods []*v1.Pod, want int, node string, ok func(*v1.Pod) bool) bool {
	if len(pods) != want {
		return false
	}
	for _, p := range pods {
		if p.Spec.NodeName != node || !ok(p) {
			return false
		}
	}
	return true
}

// orderLogSpec is the Job's pod of TestJobSidecarDeferContainer: each of
// its containers writes what it does, in turn, to the file /out/order, a
// hostPath of the test's.
func orderLogSpec(out string) v1.PodSpec {
	mount := []v1.VolumeMount{{Name: "out", MountPath: "/out"}}
	return v1.PodSpec{
		RestartPolicy: v1.RestartPolicyNever,
		InitContainers: []v1.Container{{
			Name: "sidecar", Image: "busybox", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways),
			Command:      []string{"sh", "-c", "trap 'echo sidecar stopped >> /out/order; exit 0' TERM; echo sidecar started >> /out/order; while true; do sleep 1 & wait; done"},
			VolumeMounts: mount,
		}},
		Containers: []v1.Container{{
			Name: "main", Image: "busybox",
			Command:      []string{"sh", "-c", "echo main done >> /out/order"},
			VolumeMounts: mount,
		}},
		Volumes: []v1.Volume{{Name: "out", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: out, Type: ptr.To(v1.HostPathDirectory)}}}},
	}
}

// deferContainers is the annotation of a defer container that records its
// run in /out/order, and sees the sidecar still running (the file says it
// started and has not said it stopped).
const deferContainers = `[{"name": "finish", "image": "busybox",
  "command": ["sh", "-c", "grep -q 'sidecar started' /out/order && ! grep -q 'sidecar stopped' /out/order && echo defer ran >> /out/order && echo deferred"],
  "volumeMounts": [{"name": "out", "mountPath": "/out"}]}]`

// TestJobSidecarDeferContainer: a Job whose pod has a sidecar (an init
// container with restartPolicy Always) and a defer container completes on
// the CRI node, and the Job controller sees it (Complete, succeeded 1):
// the main container ran with the sidecar beside it, then the defer
// container while the sidecar still ran, then the sidecar was stopped. The
// node publishes the defer container's status, exit code 0, in the pod's
// annotation.
func TestJobSidecarDeferContainer(t *testing.T) {
	c := needCRICluster(t)
	t.Parallel()
	n := startCRINode(t, c)
	ns := testNamespace(t, c)
	out := t.TempDir()
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "sidecar-defer", Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"pod.alpha.kubernetes.io/defer-containers": deferContainers}},
				Spec:       pinned(n, orderLogSpec(out)),
			},
		},
	}
	start := time.Now()
	if _, err := c.client.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	j := c.waitJob(t, ns, job.Name, "completion", workloadTimeout, jobComplete)
	t.Logf("job complete %v after its creation", time.Since(start).Round(time.Millisecond))
	if j.Status.Succeeded != 1 || j.Status.Failed != 0 {
		t.Fatalf("job status %+v, want Complete with succeeded 1, failed 0", j.Status)
	}
	pods := c.waitPods(t, ns, batchv1.JobNameLabel+"="+job.Name, "pod", waitTimeout, func(ps []*v1.Pod) bool { return len(ps) == 1 })
	p := pods[0]
	if p.Spec.NodeName != n.name || p.Status.Phase != v1.PodSucceeded {
		t.Errorf("the job's pod on %q, phase %s: want Succeeded on %s", p.Spec.NodeName, p.Status.Phase, n.name)
	}
	got, err := os.ReadFile(filepath.Join(out, "order"))
	if want := "sidecar started\nmain done\ndefer ran\nsidecar stopped\n"; err != nil || string(got) != want {
		t.Errorf("the containers' order: %q (%v), want %q", got, err, want)
	}
	checkTerminated(t, "sidecar", p.Status.InitContainerStatuses)
	checkTerminated(t, "main", p.Status.ContainerStatuses)
	var deferred []v1.ContainerStatus
	if err := json.Unmarshal([]byte(p.Annotations[deferStatusesAnnotation]), &deferred); err != nil {
		t.Fatalf("annotation %s = %q: %v", deferStatusesAnnotation, p.Annotations[deferStatusesAnnotation], err)
	}
	checkTerminated(t, "finish", deferred)
}

// checkTerminated checks that statuses say the container name ran once and
// exited 0.
func checkTerminated(t *testing.T, name string, statuses []v1.ContainerStatus) {
	t.Helper()
	for _, cs := range statuses {
		if cs.Name != name {
			continue
		}
		if cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 || cs.RestartCount != 0 {
			t.Errorf("container %s: state %+v, restarts %d; want terminated with exit code 0, no restart", name, cs.State, cs.RestartCount)
		}
		return
	}
	t.Errorf("no status of container %s in %+v", name, statuses)
}

// daemonSet is a DaemonSet of one sleeper per node, pinned to n.
func daemonSet(n *node, ns, name string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pinned(n, v1.PodSpec{Containers: []v1.Container{sleeper("agent")}}),
			},
		},
	}
}

// TestDaemonSetPodReplaced: the DaemonSet controller puts a pod on the CRI
// node (its nodeSelector matches no other node) and, once `kubectl delete
// pod` deleted it, another one, with a new UID, Running and Ready.
func TestDaemonSetPodReplaced(t *testing.T) {
	c := needCRICluster(t)
	t.Parallel()
	n := startCRINode(t, c)
	ns := testNamespace(t, c)
	ds := daemonSet(n, ns, "per-node")
	start := time.Now()
	if _, err := c.client.AppsV1().DaemonSets(ns).Create(t.Context(), ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sel := "app=" + ds.Name
	first := c.waitPods(t, ns, sel, "Ready pod on the node", workloadTimeout, func(ps []*v1.Pod) bool {
		return allOnNode(ps, 1, n.name, podReady)
	})[0]
	t.Logf("daemon pod %s ready %v after the DaemonSet's creation", first.Name, time.Since(start).Round(time.Millisecond))
	deleted := time.Now()
	c.mustKubectl(t, "delete", "pod", "-n", ns, first.Name, "--timeout", "60s")
	second := c.waitPods(t, ns, sel, "new Ready pod on the node", workloadTimeout, func(ps []*v1.Pod) bool {
		return allOnNode(ps, 1, n.name, func(p *v1.Pod) bool { return p.UID != first.UID && podReady(p) })
	})[0]
	t.Logf("replacement %s (uid %s, was %s) ready %v after the delete", second.Name, second.UID, first.UID, time.Since(deleted).Round(time.Millisecond))
	if !metav1.IsControlledBy(second, mustGetDaemonSet(t, c, ns, ds.Name)) {
		t.Errorf("pod %s: owners %+v, want the DaemonSet %s", second.Name, second.OwnerReferences, ds.Name)
	}
}

func mustGetDaemonSet(t *testing.T, c *controlPlane, ns, name string) *appsv1.DaemonSet {
	t.Helper()
	ds, err := c.client.AppsV1().DaemonSets(ns).Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// webDeployment is a Deployment of replicas busybox httpd pods, pinned to
// n, ready once their readiness probe (HTTP, to the pod's IP) succeeds.
func webDeployment(n *node, ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	web := v1.Container{
		Name: "web", Image: "busybox",
		Command: []string{"sh", "-c", "mkdir -p /www && echo served > /www/index.html && trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"},
		Ports:   []v1.ContainerPort{{ContainerPort: 8080}},
		ReadinessProbe: &v1.Probe{
			ProbeHandler:  v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/index.html", Port: intstr.FromInt32(8080)}},
			PeriodSeconds: 1,
		},
	}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       pinned(n, v1.PodSpec{Containers: []v1.Container{web}}),
			},
		},
	}
}

// triggeredJob is a Job whose one pod runs until the file go appears in
// the hostPath dir, then exits 0.
func triggeredJob(n *node, ns, name, dir string) *batchv1.Job {
	spec := pinned(n, v1.PodSpec{
		RestartPolicy: v1.RestartPolicyNever,
		Containers: []v1.Container{{
			Name: "work", Image: "busybox",
			Command:      []string{"sh", "-c", "until [ -e /trigger/go ]; do sleep 0.2; done; echo done"},
			VolumeMounts: []v1.VolumeMount{{Name: "trigger", MountPath: "/trigger"}},
		}},
		Volumes: []v1.Volume{{Name: "trigger", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir, Type: ptr.To(v1.HostPathDirectory)}}}},
	})
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template:     v1.PodTemplateSpec{Spec: spec},
		},
	}
}
