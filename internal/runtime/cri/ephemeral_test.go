package cri

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// An ephemeral container with a target joins the process namespace of the
// target's running instance: NamespaceMode_TARGET with its ID, as the
// kubelet asks for it (pkg/kubelet/kuberuntime/kuberuntime_container.go,
// getTargetID); without a target it gets its own, as any container.
func TestEphemeralContainerTargetsThePIDNamespace(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "busybox", Command: []string{"sleep", "300"}}, TargetContainerName: "app"},
		{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "plain", Image: "busybox", Command: []string{"sleep", "300"}}},
	}
	h.prepare(pod)
	app := h.start(pod, "app", 0)
	dbg := h.start(pod, "dbg", 0)
	ns := h.f.container(dbg.ID).config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	if ns.GetPid() != runtimeapi.NamespaceMode_TARGET || ns.GetTargetId() != app.ID {
		t.Fatalf("namespaces of the targeted ephemeral container = %v, want pid TARGET %s", ns, app.ID)
	}
	plain := h.start(pod, "plain", 0)
	if ns := h.f.container(plain.ID).config.GetLinux().GetSecurityContext().GetNamespaceOptions(); ns.GetPid() != runtimeapi.NamespaceMode_CONTAINER || ns.GetTargetId() != "" {
		t.Fatalf("namespaces of an ephemeral container without a target = %v", ns)
	}
}
