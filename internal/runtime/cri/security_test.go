package cri

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/runtime/podspec"
)

// A container that is not privileged gets the kubelet's masked and
// read-only paths (procMount Default): containerd masks only what the
// request lists. A privileged one gets none.
func TestSecurityContextMasksProc(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	c := &pod.Spec.Containers[0]
	sc, err := h.r.securityContext(context.Background(), pod, c, c.Image)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sc.MaskedPaths, podspec.MaskedPaths) || !slices.Equal(sc.ReadonlyPaths, podspec.ReadonlyPaths) {
		t.Errorf("masked %q, read-only %q; want the kubelet's defaults", sc.MaskedPaths, sc.ReadonlyPaths)
	}
	c.SecurityContext = &v1.SecurityContext{Privileged: ptr.To(true)}
	if sc, err = h.r.securityContext(context.Background(), pod, c, c.Image); err != nil {
		t.Fatal(err)
	}
	if len(sc.MaskedPaths) != 0 || len(sc.ReadonlyPaths) != 0 || !sc.Privileged {
		t.Errorf("privileged: masked %q, read-only %q", sc.MaskedPaths, sc.ReadonlyPaths)
	}
}
