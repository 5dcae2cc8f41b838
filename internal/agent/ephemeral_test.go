package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// An update of the ephemeralcontainers subresource starts the new container
// in the running pod, reports its status, and is refused with the API
// server's field errors when it removes one or sets what an ephemeral
// container may not (pkg/apis/core/validation/validation.go,
// ValidatePodEphemeralContainersUpdate).
func TestAddEphemeralContainers(t *testing.T) {
	a, rt := newAgent(t)
	pod, err := a.Create(decode(t, manifest))
	if err != nil {
		t.Fatal(err)
	}
	waitRunning(t, a, pod.Name)
	dbg := v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debugger-abcde", Image: "busybox"}, TargetContainerName: "app"}
	got, err := a.AddEphemeralContainers("default", pod.Name, []v1.EphemeralContainer{dbg})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.EphemeralContainers) != 1 || got.Spec.EphemeralContainers[0].TerminationMessagePolicy != v1.TerminationMessageReadFile {
		t.Fatalf("answered spec.ephemeralContainers = %+v, want the defaulted container", got.Spec.EphemeralContainers)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	w := a.WatchPods(ctx, "default")
	for {
		p, err := a.GetPod("default", pod.Name)
		if err == nil && len(p.Status.EphemeralContainerStatuses) == 1 && p.Status.EphemeralContainerStatuses[0].State.Running != nil {
			break
		}
		if _, ok := <-w; !ok {
			t.Fatalf("the ephemeral container never ran; calls %v", rt.Calls())
		}
	}
	if !slices.Contains(rt.Calls(), "start debugger-abcde") {
		t.Fatalf("calls = %v", rt.Calls())
	}

	removed := v1.EphemeralContainer{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "other", Image: "busybox"}}
	if _, err := a.AddEphemeralContainers("default", pod.Name, []v1.EphemeralContainer{removed}); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), `existing ephemeral containers "debugger-abcde" may not be removed`) {
		t.Fatalf("a removal: err = %v", err)
	}
	withPort := removed
	withPort.Ports = []v1.ContainerPort{{ContainerPort: 80}}
	if _, err := a.AddEphemeralContainers("default", pod.Name, []v1.EphemeralContainer{dbg, withPort}); !errors.Is(err, ErrInvalid) ||
		!strings.Contains(err.Error(), "spec.ephemeralContainers[1].ports: Forbidden: cannot be set for an Ephemeral Container") {
		t.Fatalf("a port: err = %v", err)
	}
	if _, err := a.AddEphemeralContainers("default", "nope", nil); !errors.Is(err, ErrNotFound) {
		t.Fatalf("an unknown pod: err = %v", err)
	}
	// Applying the manifest again leaves the pod and its ephemeral
	// container be.
	if _, res, err := a.Apply(decode(t, manifest)); err != nil || res != Unchanged {
		t.Fatalf("apply again: %v %v, want unchanged", res, err)
	}
}

// A pod the API server hands over with ephemeral containers already (a
// node that lost its state) is admitted, and they start; the API server
// checked them as an update, and so does the agent.
func TestSyncPodWithEphemeralContainers(t *testing.T) {
	a, rt := newAgent(t)
	pod := decode(t, manifest)
	pod.UID = "from-api"
	pod.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "dbg", Image: "busybox"}}}
	if err := a.Sync(pod); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	waitChange(t, ctx, func() string { return fmt.Sprintf("the ephemeral container never started; calls %v", rt.Calls()) }, rt.Changed, func() bool { return slices.Contains(rt.Calls(), "start dbg") })
	bad := decode(t, manifest)
	bad.Name, bad.UID = "other", "from-api-2"
	bad.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "app", Image: "busybox"}}}
	if err := a.Sync(bad); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `spec.ephemeralContainers[0].name: Duplicate value: "app"`) {
		t.Fatalf("a duplicate name: %v", err)
	}
}
