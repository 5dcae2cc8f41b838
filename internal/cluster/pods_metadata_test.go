package cluster

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
)

// metaSpy is the harness's agent, recording its SyncMetadata calls.
type metaSpy struct {
	*agent.Agent
	h *podsHarness

	mu    sync.Mutex
	calls []podMeta
	uids  []types.UID
}

var _ PodAgent = (*metaSpy)(nil)

func (s *metaSpy) SyncMetadata(uid types.UID, labels, annotations map[string]string) error {
	s.mu.Lock()
	s.calls = append(s.calls, podMeta{labels: maps.Clone(labels), annotations: maps.Clone(annotations)})
	s.uids = append(s.uids, uid)
	s.mu.Unlock()
	err := s.Agent.SyncMetadata(uid, labels, annotations)
	s.h.ring()
	return err
}

// callsOf is the calls for uid.
func (s *metaSpy) callsOf(uid types.UID) []podMeta {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []podMeta
	for i, u := range s.uids {
		if u == uid {
			out = append(out, s.calls[i])
		}
	}
	return out
}

func (s *metaSpy) metaCalls() []podMeta {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.calls)
}

// waitAgentPod waits until the agent publishes pod uid so that cond holds.
func (h *podsHarness) waitAgentPod(uid types.UID, what string, cond func(*v1.Pod) bool) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for ev := range h.agent.WatchPods(ctx, "") {
		if ev.Pod.UID == uid && cond(ev.Pod) {
			return
		}
	}
	h.t.Fatalf("timed out waiting for the agent's pod %s to have %s", uid, what)
}

// patchPod merge-patches the API pod, as kubectl label and annotate do.
func (h *podsHarness) patchPod(name, patch string) {
	h.t.Helper()
	if _, err := h.client.CoreV1().Pods("default").Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// An update of a running pod's labels reaches the agent once, and one of
// its annotations once; the node's own writes — its status, and the defer
// containers' statuses in the pod's annotations, which come back from the
// API server as pod updates — never do. Each change is a sync point: the
// informer's updates before it have been handled by the time its call is
// made, so a call for the node's own writes would be counted before it.
func TestPodsMetadataChangeReachesAgentOnce(t *testing.T) {
	h := newPodsHarness(t)
	defers := `[{"name": "flush", "image": "busybox", "command": ["true"]}]`
	pod := apiPod("web", "uid-meta", map[string]string{model.DeferContainersAnnotation: defers})
	pod.Labels = map[string]string{"app": "web"}
	if _, err := h.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("a Running status and the node's defer statuses annotation", func() bool {
		p, err := h.get("web")
		return err == nil && p.Status.Phase == v1.PodRunning && p.Annotations[model.DeferContainerStatusesAnnotation] != ""
	})

	h.patchPod("web", `{"metadata": {"labels": {"x": "y"}}}`)
	h.waitFor("the label change handed to the agent", func() bool { return len(h.spy.metaCalls()) > 0 })
	calls := h.spy.metaCalls()
	wantLabels := map[string]string{"app": "web", "x": "y"}
	if len(calls) != 1 || !maps.Equal(calls[0].labels, wantLabels) {
		t.Fatalf("SyncMetadata calls %v; want one with labels %v", calls, wantLabels)
	}
	if _, ok := calls[0].annotations[model.DeferContainerStatusesAnnotation]; ok {
		t.Errorf("the node's own annotation handed to the agent as the pod's: %v", calls[0].annotations)
	}
	h.waitAgentPod("uid-meta", "the new label", func(p *v1.Pod) bool { return p.Labels["x"] == "y" })

	h.patchPod("web", `{"metadata": {"annotations": {"note": "hi"}}}`)
	h.waitFor("the annotation change handed to the agent", func() bool { return len(h.spy.metaCalls()) > 1 })
	calls = h.spy.metaCalls()
	if len(calls) != 2 || calls[1].annotations["note"] != "hi" || !maps.Equal(calls[1].labels, wantLabels) {
		t.Fatalf("SyncMetadata calls %v; want a second one with annotation note=hi", calls)
	}
}

// A pod whose metadata never changes is never handed to SyncMetadata,
// however often the node's status writes and others' condition updates
// come back as pod updates. The sync point is a later change of the pod's
// labels: the first call must be that one.
func TestPodsUnchangedPodDoesNotSyncMetadata(t *testing.T) {
	h := newPodsHarness(t)
	if _, err := h.client.CoreV1().Pods("default").Create(context.Background(), apiPod("web", "uid-same", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.waitFor("a Running status", func() bool {
		p, err := h.get("web")
		return err == nil && p.Status.Phase == v1.PodRunning
	})
	// An update that changes nothing of the metadata: a condition of
	// another's, through the status subresource.
	p, err := h.get("web")
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: "example.com/gate", Status: v1.ConditionTrue})
	if _, err := h.client.CoreV1().Pods("default").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.patchPod("web", `{"metadata": {"labels": {"x": "y"}}}`)
	h.waitFor("the label change handed to the agent", func() bool { return len(h.spy.metaCalls()) > 0 })
	if calls := h.spy.metaCalls(); len(calls) != 1 || calls[0].labels["x"] != "y" {
		t.Fatalf("SyncMetadata calls %v; want only the label change's", calls)
	}
}

// After a restart, the pods the agent already runs are compared with what
// the agent has of them: one whose labels changed while the node was down
// is handed its new labels once, one whose did not is handed nothing until
// they change.
func TestPodsRestartedNodeSyncsChangedMetadata(t *testing.T) {
	seed := func(h *podsHarness) {
		for _, uid := range []types.UID{"uid-changed", "uid-same"} {
			pod := apiPod(string(uid), uid, nil)
			pod.Labels = map[string]string{"app": "web"}
			mp, err := fromAPI(pod)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.agent.Sync(mp); err != nil {
				t.Fatal(err)
			}
			if uid == "uid-changed" {
				pod.Labels["x"] = "y"
			}
			if _, err := h.client.CoreV1().Pods("default").Create(context.Background(), pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	h := newPodsHarnessSeeded(t, agent.Config{}, seed)
	h.waitFor("the changed labels handed to the agent", func() bool { return len(h.spy.callsOf("uid-changed")) > 0 })
	h.patchPod("uid-same", `{"metadata": {"labels": {"x": "z"}}}`)
	h.waitFor("the later label change handed to the agent", func() bool { return len(h.spy.callsOf("uid-same")) > 0 })
	if calls := h.spy.callsOf("uid-changed"); len(calls) != 1 || calls[0].labels["x"] != "y" {
		t.Errorf("SyncMetadata calls of the pod changed while the node was down: %v; want one with x=y", calls)
	}
	if calls := h.spy.callsOf("uid-same"); len(calls) != 1 || calls[0].labels["x"] != "z" {
		t.Errorf("SyncMetadata calls of the unchanged pod: %v; want only its later change's", calls)
	}
}
