package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
	rtfake "github.com/podward/podward/internal/runtime/fake"
)

// podsHarness is a Pods between a fake API server and a real agent on the
// fake runtime.
type podsHarness struct {
	t      *testing.T
	client *fake.Clientset
	rt     *rtfake.Runtime
	agent  *agent.Agent
	// spy records the agent's SyncMetadata calls.
	spy *metaSpy

	mu      sync.Mutex
	changed chan struct{}
}

func newPodsHarness(t *testing.T) *podsHarness {
	t.Helper()
	return newPodsHarnessWith(t, agent.Config{})
}

// newPodsHarnessWith is newPodsHarness with an agent configured by cfg
// (the harness fills in its runtime, clock, planner, logger and node).
func newPodsHarnessWith(t *testing.T, acfg agent.Config) *podsHarness {
	t.Helper()
	return newPodsHarnessSeeded(t, acfg, nil)
}

// newPodsHarnessSeeded is newPodsHarnessWith that calls seed, when not
// nil, before the pod source starts: what it gives the agent and the API
// server is what a node restarted with them finds.
func newPodsHarnessSeeded(t *testing.T, acfg agent.Config, seed func(*podsHarness)) *podsHarness {
	t.Helper()
	h := &podsHarness{t: t, client: fake.NewClientset(), changed: make(chan struct{})}
	// Every change through the API wakes the waiters (reads do not: the
	// waiters read).
	h.client.PrependReactor("*", "*", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		switch a.GetVerb() {
		case "get", "list", "watch":
		default:
			h.ring()
		}
		return false, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	clk := clock.RealClock{}
	h.rt = rtfake.New(clk)
	cfg := planner.DefaultConfig()
	cfg.PromptKill = 0
	acfg.Runtime, acfg.Clock, acfg.Planner, acfg.Logger = h.rt, clk, cfg, slog.New(slog.DiscardHandler)
	acfg.NodeName, acfg.NodeIP = "node-a", "10.0.0.7"
	h.agent = agent.New(ctx, acfg)
	h.spy = &metaSpy{Agent: h.agent, h: h}
	if seed != nil {
		seed(h)
	}
	pods := NewPods(PodsConfig{Client: h.client, NodeName: "node-a", Agent: h.spy, StatusDelay: time.Millisecond})
	done := make(chan struct{})
	go func() { defer close(done); _ = pods.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; h.agent.Wait() })
	return h
}

func (h *podsHarness) ring() {
	h.mu.Lock()
	close(h.changed)
	h.changed = make(chan struct{})
	h.mu.Unlock()
}

func (h *podsHarness) waitFor(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		h.mu.Lock()
		ch := h.changed
		h.mu.Unlock()
		rch := h.rt.Changed()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-rch:
		case <-deadline:
			h.t.Fatalf("timed out waiting for %s; runtime calls %q; API actions %s", what, h.rt.Calls(), h.actions())
		}
	}
}

func (h *podsHarness) actions() string {
	var out []string
	for _, a := range h.client.Actions() {
		out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
	}
	return strings.Join(out, ", ")
}

func (h *podsHarness) get(name string) (*v1.Pod, error) {
	return h.client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
}

func apiPod(name string, uid types.UID, annotations map[string]string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, Annotations: annotations},
		Spec: v1.PodSpec{
			NodeName:                      "node-a",
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			Containers:                    []v1.Container{{Name: "app", Image: "busybox", Command: []string{"sleep", "100"}}},
		},
	}
}

func TestPodsRunsBoundPodAndWritesStatus(t *testing.T) {
	h := newPodsHarness(t)
	defers := `[{"name": "flush", "image": "busybox", "command": ["true"]}]`
	if _, err := h.client.CoreV1().Pods("default").Create(context.Background(),
		apiPod("web", "uid-1", map[string]string{model.DeferContainersAnnotation: defers}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the container to start", func() bool { return slices.Contains(h.rt.Calls(), "start app") })
	h.waitFor("a Running status", func() bool {
		p, err := h.get("web")
		return err == nil && p.Status.Phase == v1.PodRunning && p.Status.PodIP == "10.0.0.7" &&
			len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready &&
			strings.Contains(p.Annotations[model.DeferContainerStatusesAnnotation], `"flush"`)
	})
	h.waitFor("a Scheduled event posted", func() bool {
		evs, _ := h.client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{})
		for _, e := range evs.Items {
			if e.Reason == "Scheduled" && e.InvolvedObject.UID == "uid-1" && e.Source.Component == "podward" && e.Source.Host == "node-a" {
				return true
			}
		}
		return false
	})
}

// A deletion is the kubelet's: kill with the deletion's grace period; once
// terminated, delete the object with grace 0 and a UID precondition.
func TestPodsDeletesObjectOnceTerminated(t *testing.T) {
	h := newPodsHarness(t)
	ctx := context.Background()
	pod, err := h.client.CoreV1().Pods("default").Create(ctx, apiPod("web", "uid-2", map[string]string{
		model.DeferContainersAnnotation: `[{"name": "flush", "image": "busybox", "command": ["true"]}]`,
	}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("the container to start", func() bool { return slices.Contains(h.rt.Calls(), "start app") })

	// What the API server does on a graceful delete.
	pod = pod.DeepCopy()
	now := metav1.Now()
	pod.DeletionTimestamp, pod.DeletionGracePeriodSeconds = &now, ptr.To[int64](30)
	if _, err := h.client.CoreV1().Pods("default").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the defer container", func() bool { return slices.Contains(h.rt.Calls(), "start flush") })
	if _, err := h.get("web"); err != nil {
		t.Fatalf("the object went before the pod terminated: %v", err)
	}
	h.rt.Exit("uid-2", "flush", 0)
	h.waitFor("the object deleted", func() bool {
		_, err := h.get("web")
		return apierrors.IsNotFound(err)
	})
	var del k8stesting.DeleteAction
	for _, a := range h.client.Actions() {
		if d, ok := a.(k8stesting.DeleteAction); ok && d.GetResource().Resource == "pods" {
			del = d
		}
	}
	opts := del.GetDeleteOptions()
	if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds != 0 || opts.Preconditions == nil || *opts.Preconditions.UID != "uid-2" {
		t.Fatalf("delete options %+v, want grace 0 and the pod's UID as precondition", opts)
	}
}

// A pod the API server no longer has (force-deleted) is killed.
func TestPodsKillsPodGoneFromAPI(t *testing.T) {
	h := newPodsHarness(t)
	ctx := context.Background()
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, apiPod("web", "uid-3", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the container to start", func() bool { return slices.Contains(h.rt.Calls(), "start app") })
	if err := h.client.CoreV1().Pods("default").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the pod killed", func() bool { return len(h.rt.Running("uid-3")) == 0 })
}

// A pod this node cannot run is marked Failed with a reason, as the kubelet
// marks the pods it rejects.
func TestPodsRejectsPodItCannotRun(t *testing.T) {
	h := newPodsHarness(t)
	h.rt.CheckErr = errors.New("spec.containers[0].command: Required value: the process runtime runs a command")
	if _, err := h.client.CoreV1().Pods("default").Create(context.Background(), apiPod("web", "uid-4", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("a Failed status", func() bool {
		p, err := h.get("web")
		return err == nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == ReasonUnsupported &&
			strings.Contains(p.Status.Message, "spec.containers[0].command")
	})
	if slices.ContainsFunc(h.rt.Calls(), func(c string) bool { return strings.HasPrefix(c, "start") || c == "prepare" }) {
		t.Fatalf("a rejected pod was started: %q", h.rt.Calls())
	}
}

// A pod bound to a node that already runs --max-pods pods is Failed with
// the kubelet's reason and message, and a warning event with that message
// (pkg/kubelet/lifecycle/predicate.go; kubelet.go, rejectPod).
func TestPodsRejectsPodBeyondMaxPods(t *testing.T) {
	h := newPodsHarnessWith(t, agent.Config{MaxPods: 1})
	ctx := context.Background()
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, apiPod("first", "uid-1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the first pod to run", func() bool {
		p, err := h.get("first")
		return err == nil && p.Status.Phase == v1.PodRunning
	})
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, apiPod("second", "uid-2", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const msg = "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1"
	h.waitFor("an OutOfpods status", func() bool {
		p, err := h.get("second")
		return err == nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "OutOfpods" && p.Status.Message == "Pod was rejected: "+msg
	})
	// The event is posted after the status is written.
	h.waitFor("a warning OutOfpods event", func() bool {
		evs, err := h.client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		return err == nil && slices.ContainsFunc(evs.Items, func(e v1.Event) bool {
			return e.InvolvedObject.Name == "second" && e.Reason == "OutOfpods" && e.Type == v1.EventTypeWarning && e.Message == msg
		})
	})
	if n := strings.Count(strings.Join(h.rt.Calls(), "\n"), "start app"); n != 1 {
		t.Fatalf("started app %d times, want once: %q", n, h.rt.Calls())
	}
}

// The API server drops the legacy init-containers annotation; podward takes
// it back from the manifest kubectl apply recorded.
func TestPodsRestoresLegacyInitContainersFromKubectlApply(t *testing.T) {
	h := newPodsHarness(t)
	applied := `{"apiVersion":"v1","kind":"Pod","metadata":{"annotations":{"` + model.LegacyInitContainersAnnotation +
		`":"[{\"name\": \"first\", \"image\": \"bash\", \"command\": [\"true\"]}]"},"name":"web"}}`
	pod := apiPod("web", "uid-5", map[string]string{lastAppliedAnnotation: applied})
	if _, err := h.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("the init container to start", func() bool { return slices.Contains(h.rt.Calls(), "start first") })
	if slices.Contains(h.rt.Calls(), "start app") {
		t.Fatalf("app started before its init container completed: %q", h.rt.Calls())
	}
	h.rt.Exit("uid-5", "first", 0)
	h.waitFor("the app to start", func() bool { return slices.Contains(h.rt.Calls(), "start app") })
}

// An ephemeral container the runtime cannot run (kubectl debug without a
// command, on the process runtime) is refused alone: its status says why,
// as the kubelet reports a container whose configuration it cannot make
// (waiting, CreateContainerConfigError, which kubectl debug prints while it
// waits), and the ephemeral containers added after it still start.
func TestPodsRefusesOneEphemeralContainerAlone(t *testing.T) {
	h := newPodsHarness(t)
	h.rt.CheckHook = func(pod *model.Pod) error {
		var errs []error
		for i, ec := range pod.Spec.EphemeralContainers {
			if len(ec.Command) == 0 {
				errs = append(errs, fmt.Errorf("spec.ephemeralContainers[%d].command: Required value: no image to take it from", i))
			}
		}
		return errors.Join(errs...)
	}
	ctx := context.Background()
	pod, err := h.client.CoreV1().Pods("default").Create(ctx, apiPod("web", "uid-6", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("the container to start", func() bool { return slices.Contains(h.rt.Calls(), "start app") })
	// What the ephemeralcontainers subresource does: append one.
	debug := func(name string, cmd ...string) {
		t.Helper()
		pod.Spec.EphemeralContainers = append(pod.Spec.EphemeralContainers, v1.EphemeralContainer{
			EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: name, Image: "busybox", Command: cmd, Stdin: true, TTY: true},
			TargetContainerName:      "app",
		})
		if pod, err = h.client.CoreV1().Pods("default").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	statuses := func() string {
		p, err := h.get("web")
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, cs := range p.Status.EphemeralContainerStatuses {
			switch s := cs.State; {
			case s.Running != nil:
				out = append(out, cs.Name+" running")
			case s.Waiting != nil:
				out = append(out, cs.Name+" "+s.Waiting.Reason+": "+s.Waiting.Message)
			default:
				out = append(out, cs.Name+" other")
			}
		}
		return strings.Join(out, "; ")
	}
	const refused0 = "nocmd CreateContainerConfigError: spec.ephemeralContainers[0].command: Required value: no image to take it from"
	debug("nocmd")
	h.waitFor("nocmd refused", func() bool { return statuses() == refused0 })
	debug("dbg", "sh")
	h.waitFor("dbg running after nocmd", func() bool { return statuses() == refused0+"; dbg running" })
	debug("nocmd2")
	const refused2 = "nocmd2 CreateContainerConfigError: spec.ephemeralContainers[2].command: Required value: no image to take it from"
	h.waitFor("nocmd2 refused, named by its own index", func() bool {
		return statuses() == refused0+"; dbg running; "+refused2
	})
	if slices.ContainsFunc(h.rt.Calls(), func(c string) bool { return strings.HasPrefix(c, "start nocmd") }) {
		t.Fatalf("a refused ephemeral container was started: %q", h.rt.Calls())
	}
}

// The agent tells the kubelet server when a followed log's instance ended.
var _ LogEnds = (*agent.Agent)(nil)

// Readiness gates, as the e2e "Pods should support pod readiness gates"
// drives them: a controller patches the gates' conditions through the
// status subresource, and Ready follows (pkg/kubelet/status/generate.go);
// the node's own status writes keep those conditions as they are.
func TestPodsReadinessGates(t *testing.T) {
	h := newPodsHarness(t)
	ctx := context.Background()
	pod := apiPod("gated", "uid-7", nil)
	pod.Spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: "k8s.io/test-condition1"}, {ConditionType: "k8s.io/test-condition2"}}
	if _, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := func() (v1.PodCondition, []v1.PodCondition) {
		p, err := h.get("gated")
		if err != nil {
			return v1.PodCondition{}, nil
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodReady {
				return c, p.Status.Conditions
			}
		}
		return v1.PodCondition{}, p.Status.Conditions
	}
	waitReady := func(what string, status v1.ConditionStatus, reason, message string) {
		t.Helper()
		h.waitFor(what, func() bool {
			c, _ := ready()
			return c.Status == status && c.Reason == reason && c.Message == message
		})
	}
	waitReady("Ready False: no gate's condition", v1.ConditionFalse, "ReadinessGatesNotReady",
		`corresponding condition of pod readiness gate "k8s.io/test-condition1" does not exist., corresponding condition of pod readiness gate "k8s.io/test-condition2" does not exist.`)
	// What the e2e test does: a strategic merge patch of the status.
	setGates := func(s1, s2 v1.ConditionStatus) {
		t.Helper()
		patch := fmt.Sprintf(`{"status":{"conditions":[{"type":"k8s.io/test-condition1","status":%q},{"type":"k8s.io/test-condition2","status":%q}]}}`, s1, s2)
		if _, err := h.client.CoreV1().Pods("default").Patch(ctx, "gated", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
			t.Fatal(err)
		}
	}
	setGates(v1.ConditionTrue, v1.ConditionFalse)
	waitReady("Ready False: one gate False", v1.ConditionFalse, "ReadinessGatesNotReady",
		`the status of pod readiness gate "k8s.io/test-condition2" is not "True", but False`)
	setGates(v1.ConditionTrue, v1.ConditionTrue)
	waitReady("Ready True", v1.ConditionTrue, "", "")
	// The node wrote Ready after the gates were set: they are kept.
	_, conds := ready()
	for _, gate := range []v1.PodConditionType{"k8s.io/test-condition1", "k8s.io/test-condition2"} {
		if !slices.ContainsFunc(conds, func(c v1.PodCondition) bool { return c.Type == gate && c.Status == v1.ConditionTrue }) {
			t.Fatalf("conditions %+v: the gate's %s is gone", conds, gate)
		}
	}
	setGates(v1.ConditionFalse, v1.ConditionTrue)
	waitReady("Ready False again", v1.ConditionFalse, "ReadinessGatesNotReady",
		`the status of pod readiness gate "k8s.io/test-condition1" is not "True", but False`)
}

// The node's status patch never names a condition it does not own, so
// that one another controller set after the node last saw the pod stays as
// it is; it sets its own whole (a field it no longer has is removed) and
// removes the ones it no longer has.
func TestStatusPatchLeavesOthersConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	inAPI := &v1.Pod{Status: v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		{Type: "example.com/gate", Status: v1.ConditionTrue, LastTransitionTime: t0},
		{Type: v1.PodReady, Status: v1.ConditionFalse, Reason: "ReadinessGatesNotReady", Message: "gate", LastTransitionTime: t0},
		{Type: v1.PodResizePending, Status: v1.ConditionTrue, Reason: "Infeasible"},
	}}}
	// What the node saw: the gate still False, when it was set True since.
	st := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{
		{Type: "example.com/gate", Status: v1.ConditionFalse},
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: t0},
		{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: "EvictionByEvictionAPI"},
	}}
	body, set, err := statusPatch(st, []v1.PodConditionType{v1.PodResizePending})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(set, []v1.PodConditionType{v1.PodReady}) {
		t.Fatalf("sets %v, want only Ready", set)
	}
	got := applyStatusPatch(t, inAPI, body)
	want := []v1.PodCondition{
		{Type: "example.com/gate", Status: v1.ConditionTrue, LastTransitionTime: t0},
		{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: t0},
	}
	if !equality.Semantic.DeepEqual(got.Status.Conditions, want) {
		t.Fatalf("conditions after the patch %+v, want %+v (patch %s)", got.Status.Conditions, want, body)
	}
}

// applyStatusPatch is pod after the status part of a strategic merge patch
// (statusPatch's), merged as the API server merges it.
func applyStatusPatch(t *testing.T, pod *v1.Pod, body []byte) v1.Pod {
	t.Helper()
	old, _ := json.Marshal(pod)
	merged, err := strategicpatch.StrategicMergePatch(old, []byte(`{"status":`+string(body)+`}`), &v1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	var got v1.Pod
	if err := json.Unmarshal(merged, &got); err != nil {
		t.Fatal(err)
	}
	return got
}

// A pod's addresses are the node's to write, whole: the host's address it
// reported before its sandbox had one of its own is replaced, not merged
// beside the new one (which the API server refuses: one IP per family).
func TestStatusPatchReplacesPodIPs(t *testing.T) {
	inAPI := &v1.Pod{Status: v1.PodStatus{Phase: v1.PodPending,
		PodIP: "192.0.2.77", PodIPs: []v1.PodIP{{IP: "192.0.2.77"}},
		HostIP: "192.0.2.77", HostIPs: []v1.HostIP{{IP: "192.0.2.77"}}}}
	st := v1.PodStatus{Phase: v1.PodRunning,
		PodIP: "10.123.0.4", PodIPs: []v1.PodIP{{IP: "10.123.0.4"}},
		HostIP: "192.0.2.78", HostIPs: []v1.HostIP{{IP: "192.0.2.78"}}}
	body, _, err := statusPatch(st, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := applyStatusPatch(t, inAPI, body)
	if !equality.Semantic.DeepEqual(got.Status.PodIPs, st.PodIPs) || !equality.Semantic.DeepEqual(got.Status.HostIPs, st.HostIPs) {
		t.Errorf("after the patch podIPs %v hostIPs %v, want %v %v (patch %s)", got.Status.PodIPs, got.Status.HostIPs, st.PodIPs, st.HostIPs, body)
	}
}

// The e2e "Pods should allow activeDeadlineSeconds to be updated": an
// update lowers spec.activeDeadlineSeconds of a running pod, and the node
// enforces the new value (the kubelet's active deadline handler reads the
// spec at each sync): the pod ends Failed, DeadlineExceeded.
func TestPodsActiveDeadlineLowered(t *testing.T) {
	h := newPodsHarness(t)
	ctx := context.Background()
	pod := apiPod("deadline", "uid-8", nil)
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](3600)
	pod, err := h.client.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.waitFor("a Running status", func() bool {
		p, err := h.get("deadline")
		return err == nil && p.Status.Phase == v1.PodRunning
	})
	pod, err = h.get("deadline")
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
	pod.Generation = 2 // what the API server does on a spec update
	if _, err := h.client.CoreV1().Pods("default").Update(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("a Failed status, DeadlineExceeded", func() bool {
		p, err := h.get("deadline")
		return err == nil && p.Status.Phase == v1.PodFailed && p.Status.Reason == "DeadlineExceeded" &&
			p.Status.Message == "Pod was active on the node longer than the specified deadline" && p.Status.ObservedGeneration == 2
	})
}
