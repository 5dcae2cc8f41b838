package cluster

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// podSeen is what a workload can see of one of its pods: its UID, IP,
// each container's ID and restart count, and whether it is Ready (or
// Succeeded, which no longer serves).
type podSeen struct {
	name     string
	ip       string
	ids      map[string]string
	restarts map[string]int32
	ready    bool
}

func seePod(p *v1.Pod) podSeen {
	s := podSeen{name: p.Name, ip: p.Status.PodIP, ids: map[string]string{}, restarts: map[string]int32{},
		ready: podReady(p) || p.Status.Phase == v1.PodSucceeded}
	for _, cs := range append(append([]v1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		s.ids[cs.Name] = cs.ContainerID
		s.restarts[cs.Name] = cs.RestartCount
	}
	return s
}

// differs says how what a workload sees of p differs from was (nil: no
// difference). A container that is no longer running may have no ID in a
// status (a terminated one keeps it).
func (was podSeen) differs(p *v1.Pod) []string {
	now := seePod(p)
	var d []string
	if now.ip != was.ip {
		d = append(d, fmt.Sprintf("podIP %q, was %q", now.ip, was.ip))
	}
	for name, id := range was.ids {
		if now.ids[name] != id {
			d = append(d, fmt.Sprintf("container %s ID %q, was %q", name, now.ids[name], id))
		}
		if now.restarts[name] != was.restarts[name] {
			d = append(d, fmt.Sprintf("container %s restartCount %d, was %d", name, now.restarts[name], was.restarts[name]))
		}
	}
	return d
}

// podRecorder keeps every change of the namespace's pods that the API
// server shows from a resource version on; a watch that ends in an error
// or before stop is an error of check's, not a quiet record.
type podRecorder struct {
	mu      sync.Mutex
	seen    []*v1.Pod
	events  []watch.EventType
	err     error
	stopped bool
	stop    func()
	done    chan struct{}
}

func recordPods(t *testing.T, c *controlPlane, ns string, opts metav1.ListOptions) *podRecorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	w, err := c.client.CoreV1().Pods(ns).Watch(ctx, opts)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r := &podRecorder{done: make(chan struct{})}
	r.stop = func() {
		r.mu.Lock()
		r.stopped = true
		r.mu.Unlock()
		cancel()
		w.Stop()
	}
	go func() {
		defer close(r.done)
		for ev := range w.ResultChan() {
			r.mu.Lock()
			if p, ok := ev.Object.(*v1.Pod); ok {
				r.seen = append(r.seen, p)
				r.events = append(r.events, ev.Type)
			} else if ev.Type == watch.Error && r.err == nil && !r.stopped { // stop's cancel ends in an error event
				r.err = fmt.Errorf("the watch of %s's pods failed: %v", ns, ev.Object)
			}
			r.mu.Unlock()
		}
		r.mu.Lock()
		if !r.stopped && r.err == nil {
			r.err = fmt.Errorf("the watch of %s's pods ended before the check", ns)
		}
		r.mu.Unlock()
	}()
	t.Cleanup(func() { r.stop(); <-r.done })
	return r
}

// check ends the recording and says what, of the pods of before, changed
// in a way their workloads could see (an IP, a container ID, a restart,
// a deletion, a pod not in before unless made names it) and how often a
// pod went from Ready to not Ready.
func (r *podRecorder) check(before map[types.UID]podSeen, made []string) (changes []string, unready map[string]int, err error) {
	r.stop()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	unready = map[string]int{}
	ready := map[types.UID]bool{}
	for uid, was := range before {
		ready[uid] = was.ready
	}
	for i, p := range r.seen {
		was, ok := before[p.UID]
		if !ok {
			if !slices.Contains(made, p.Name) {
				changes = append(changes, fmt.Sprintf("%s pod %s (uid %s), not one of before", r.events[i], p.Name, p.UID))
			}
			continue
		}
		if r.events[i] == watch.Deleted || p.DeletionTimestamp != nil {
			changes = append(changes, fmt.Sprintf("pod %s deleted", p.Name))
		}
		for _, d := range was.differs(p) {
			changes = append(changes, p.Name+": "+d)
		}
		if now := podReady(p) || p.Status.Phase == v1.PodSucceeded; ready[p.UID] && !now {
			unready[p.Name]++
			ready[p.UID] = false
		} else if now {
			ready[p.UID] = true
		}
	}
	return changes, unready, r.err
}

// agentKillKeepsPods kills node n's agent (SIGKILL) and starts it again on
// the same --root, runs meanwhile (which returns the names of the pods it
// made itself), and checks that none of the node's pods in the namespaces
// changed in a way their workloads could see (podSeen: replaced, deleted,
// another IP, a container restarted), nor turned not Ready, from the kill
// until meanwhile ended and each running one is Ready.
func agentKillKeepsPods(t *testing.T, c *controlPlane, n *node, namespaces []string, meanwhile func(t *testing.T) (made []string)) {
	onNode := metav1.ListOptions{FieldSelector: "spec.nodeName=" + n.name}
	before := map[types.UID]podSeen{}
	var recs []*podRecorder
	for _, ns := range namespaces {
		list, err := c.client.CoreV1().Pods(ns).List(t.Context(), onNode)
		if err != nil {
			t.Fatal(err)
		}
		for i := range list.Items {
			p := &list.Items[i]
			before[p.UID] = seePod(p)
			t.Logf("before: %s ip %s containers %v", p.Name, p.Status.PodIP, before[p.UID].ids)
		}
		opts := onNode
		opts.ResourceVersion = list.ResourceVersion
		recs = append(recs, recordPods(t, c, ns, opts))
	}
	killed := time.Now()
	n.signal(syscall.SIGKILL)
	n.start()
	t.Logf("agent killed and registered again in %v", time.Since(killed).Round(time.Millisecond))
	made := meanwhile(t)
	for _, ns := range namespaces {
		c.waitPods(t, ns, "", "every pod of before Ready or Succeeded", workloadTimeout, func(ps []*v1.Pod) bool {
			for _, p := range ps {
				if _, ok := before[p.UID]; ok && !podReady(p) && p.Status.Phase != v1.PodSucceeded {
					return false
				}
			}
			return true
		})
	}
	t.Logf("every pod ready %v after the kill", time.Since(killed).Round(time.Millisecond))
	for _, rec := range recs {
		changes, unready, err := rec.check(before, made)
		if err != nil {
			t.Error(err)
		}
		for _, ch := range changes {
			t.Errorf("seen after the kill: %s", ch)
		}
		for pod, turns := range unready {
			t.Errorf("pod %s turned from Ready to not Ready %d time(s) after the kill", pod, turns)
		}
	}
}

// TestAgentKillChangesNothing: the CRI node's agent is killed (SIGKILL)
// while a Deployment's 2 pods (with a readiness probe), a DaemonSet's pod
// and a Job's running pod run on it, and started again on the same
// --root. The workloads see nothing of it: no pod is replaced, no
// container restarts (same IDs, restartCount unchanged), each pod keeps
// its IP, the Job's pod, which runs on through the restart, completes and
// the Job controller sees it Complete, and every pod is Ready again.
//
// Nor does any pod turn not Ready: the Deployment's readiness probe is an
// exec of 2 s, so that the restarted agent writes its first status before
// its first attempt ends; the agent keeps a running container's readiness
// across its restart, as the kubelet since 1.35 does (KEP-4781; its
// deprecated feature gate ChangeContainerStatusOnKubeletRestart, off by
// default, resets it), and the probes go on from it (docs/lifecycle.md,
// "Probes"). An agent that started readiness over published the web pods
// not Ready until that attempt succeeded.
func TestAgentKillChangesNothing(t *testing.T) {
	c := needCRICluster(t)
	t.Parallel()
	n := startCRINode(t, c)
	ns := testNamespace(t, c)
	trigger := t.TempDir()
	ctx := t.Context()
	deploy := webDeployment(n, ns, "web", 2)
	deploy.Spec.Template.Spec.Containers[0].ReadinessProbe = slowReadiness()
	ds := daemonSet(n, ns, "per-node")
	job := triggeredJob(n, ns, "work", trigger)
	if _, err := c.client.AppsV1().Deployments(ns).Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitPods(t, ns, "app=web", "2 Ready pods on the node", workloadTimeout, func(ps []*v1.Pod) bool { return allOnNode(ps, 2, n.name, podReady) })
	c.waitPods(t, ns, "app=per-node", "Ready pod on the node", workloadTimeout, func(ps []*v1.Pod) bool { return allOnNode(ps, 1, n.name, podReady) })
	c.waitPods(t, ns, batchv1.JobNameLabel+"=work", "Running pod on the node", workloadTimeout, func(ps []*v1.Pod) bool {
		return allOnNode(ps, 1, n.name, func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	})
	agentKillKeepsPods(t, c, n, []string{ns}, func(t *testing.T) []string {
		touch(t, filepath.Join(trigger, "go"))
		j := c.waitJob(t, ns, job.Name, "completion", workloadTimeout, jobComplete)
		if j.Status.Succeeded != 1 || j.Status.Failed != 0 {
			t.Fatalf("job after the restart: status %+v; want Complete with succeeded 1", j.Status)
		}
		return nil
	})
}

// slowReadiness is a readiness probe whose every attempt takes 2 s: an
// exec of the web container's own check, after a sleep.
func slowReadiness() *v1.Probe {
	return &v1.Probe{
		ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{
			Command: []string{"sh", "-c", "sleep 2; test -e /www/index.html"},
		}},
		PeriodSeconds:  3,
		TimeoutSeconds: 5,
	}
}
