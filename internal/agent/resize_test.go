package agent

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
)

// burstable is a Burstable pod, which a resize may give a memory limit.
const burstable = manifest + `    resources:
      requests:
        cpu: 100m
`

// waitPod waits until the pod the agent publishes for uid satisfies ok.
func waitPod(t *testing.T, a *Agent, uid types.UID, what string, ok func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	watch := a.WatchPods(ctx, "default")
	for {
		if p, _, err := a.Get(uid); err == nil && ok(p) {
			return p
		}
		select {
		case <-watch:
		case <-ctx.Done():
			p, _, _ := a.Get(uid)
			t.Fatalf("timed out waiting for %s: %+v", what, p)
		}
	}
}

// observed says whether the pod's status, and each of its conditions,
// observe generation gen.
func observed(p *v1.Pod, gen int64) bool {
	if p.Status.ObservedGeneration != gen || len(p.Status.Conditions) == 0 {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.ObservedGeneration != gen {
			return false
		}
	}
	return true
}

// The agent's own API is the pods' API server in standalone mode: a pod it
// creates has metadata.generation 1, and a resize bumps it
// (registry/core/pod/strategy.go, PrepareForCreate and
// updatePodGeneration), as an added ephemeral container does; the status
// and its conditions observe it (KEP-5067, the kubelet 1.37's status
// manager and pkg/kubelet/status/generate.go).
func TestResizeBumpsGenerationStandalone(t *testing.T) {
	a, rt := newAgent(t)
	pod, err := a.Create(decode(t, burstable))
	if err != nil {
		t.Fatal(err)
	}
	if pod.Generation != 1 {
		t.Fatalf("created with generation %d, want 1", pod.Generation)
	}
	waitPod(t, a, pod.UID, "generation 1 observed", func(p *v1.Pod) bool { return observed(p, 1) && slices.Contains(rt.Calls(), "start app") })

	patched := pod.Pod.DeepCopy()
	patched.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	got, err := a.ResizePod("default", "web", patched)
	if err != nil {
		t.Fatal(err)
	}
	if got.Generation != 2 {
		t.Errorf("resize answered generation %d, want 2", got.Generation)
	}
	waitPod(t, a, pod.UID, "generation 2 observed", func(p *v1.Pod) bool { return p.Generation == 2 && observed(p, 2) })
	if got, err := a.ResizePod("default", "web", patched); err != nil || got.Generation != 2 {
		t.Errorf("a resize that changes nothing: generation %d, %v; want 2", got.Generation, err)
	}

	ecs := []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
	if got, err := a.AddEphemeralContainers("default", "web", ecs); err != nil || got.Generation != 3 {
		t.Fatalf("an ephemeral container: generation %d, %v; want 3", got.Generation, err)
	}
	waitPod(t, a, pod.UID, "generation 3 observed", func(p *v1.Pod) bool { return observed(p, 3) })
}

// In cluster mode the generation is the API server's: a resize brings the
// one it bumped, and so does an ephemeral container; an update of nothing
// the node takes up is not observed.
func TestSyncResourcesTakesTheAPIServersGeneration(t *testing.T) {
	a, _ := newAgent(t)
	pod := decode(t, burstable)
	pod.UID, pod.Generation = "cluster-1", 3
	if err := a.Sync(pod); err != nil {
		t.Fatal(err)
	}
	waitPod(t, a, pod.UID, "generation 3 observed", func(p *v1.Pod) bool { return observed(p, 3) })

	api := pod.Pod.DeepCopy()
	api.Generation = 4
	api.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	if err := a.SyncResources(pod.UID, api); err != nil {
		t.Fatal(err)
	}
	waitPod(t, a, pod.UID, "generation 4 observed", func(p *v1.Pod) bool {
		return observed(p, 4) && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Resources != nil &&
			p.Status.ContainerStatuses[0].Resources.Limits.Memory().String() == "64Mi"
	})
	api = api.DeepCopy()
	api.Generation = 5
	api.Spec.Containers[0].Image = "busybox:2"
	if err := a.SyncResources(pod.UID, api); err != nil {
		t.Fatal(err)
	}
	if p, _, _ := a.Get(pod.UID); p.Generation != 4 {
		t.Errorf("generation %d after an update of the image, which the node does not take up; want 4", p.Generation)
	}
	ecs := []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
	if err := a.SyncEphemeralContainers(pod.UID, 6, ecs); err != nil {
		t.Fatal(err)
	}
	p := waitPod(t, a, pod.UID, "generation 6 observed", func(p *v1.Pod) bool { return observed(p, 6) })
	if p.Spec.Containers[0].Image != "busybox" {
		t.Errorf("image %q: an update the node does not take up was taken", p.Spec.Containers[0].Image)
	}
}

// A read after a write sees the write: while the pod's worker is held in
// its setup (PreparePod blocks), it cannot take an added ephemeral
// container or a resize, yet the answers and Get give the recorded spec and
// generation, as the API server gives the stored object.
func TestGetGivesTheRecordedSpec(t *testing.T) {
	a, rt := newAgent(t)
	held, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	rt.PrepareHook = func(ctx context.Context) error {
		once.Do(func() { close(held) })
		select {
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}
	defer close(release)
	pod, err := a.Create(decode(t, burstable))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the worker never reached PreparePod")
	}
	ecs := []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
	got, err := a.AddEphemeralContainers("default", "web", ecs)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.EphemeralContainers) != 1 || got.Generation != 2 {
		t.Errorf("answer: %d ephemeral containers, generation %d; want 1 and 2", len(got.Spec.EphemeralContainers), got.Generation)
	}
	patched := got.DeepCopy()
	patched.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}
	if got, err = a.ResizePod("default", "web", patched); err != nil {
		t.Fatal(err)
	}
	p, _, err := a.Get(pod.UID)
	if err != nil {
		t.Fatal(err)
	}
	for what, r := range map[string]*v1.Pod{"resize's answer": got, "Get": p} {
		if len(r.Spec.EphemeralContainers) != 1 || r.Generation != 3 || !r.Spec.Containers[0].Resources.Limits.Memory().Equal(resource.MustParse("64Mi")) {
			t.Errorf("%s: %d ephemeral containers, generation %d, limits %v; want 1, 3 and the 64Mi limit", what, len(r.Spec.EphemeralContainers), r.Generation, r.Spec.Containers[0].Resources.Limits)
		}
	}
}
