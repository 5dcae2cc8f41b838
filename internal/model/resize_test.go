package model

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestApplyResize checks the API server's rules for pods/resize
// (pkg/apis/core/validation/validation.go, ValidatePodResize, and the
// resize strategy, which takes resources and resizePolicy only).
func TestApplyResize(t *testing.T) {
	res := func(kv ...string) v1.ResourceList {
		l := v1.ResourceList{}
		for i := 0; i < len(kv); i += 2 {
			l[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
		}
		return l
	}
	cur := &Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: v1.PodSpec{Containers: []v1.Container{{
			Name: "app", Image: "x",
			Resources: v1.ResourceRequirements{Requests: res("cpu", "100m", "memory", "64Mi"), Limits: res("cpu", "200m", "memory", "64Mi")},
		}}},
	}}
	for name, tc := range map[string]struct {
		limits, requests v1.ResourceList
		image            string
		wantErr          string
	}{
		"memory raised":     {requests: res("cpu", "100m", "memory", "64Mi"), limits: res("cpu", "200m", "memory", "128Mi")},
		"image ignored":     {requests: res("cpu", "100m", "memory", "64Mi"), limits: res("cpu", "200m", "memory", "64Mi"), image: "y"},
		"QoS to Guaranteed": {requests: res("cpu", "200m", "memory", "64Mi"), limits: res("cpu", "200m", "memory", "64Mi"), wantErr: "Pod QOS Class may not change as a result of resizing"},
		"other resource":    {requests: res("cpu", "100m", "memory", "64Mi"), limits: res("cpu", "200m", "memory", "64Mi", "ephemeral-storage", "1Gi"), wantErr: "only cpu and memory resources are mutable"},
	} {
		t.Run(name, func(t *testing.T) {
			patched := cur.Pod.DeepCopy()
			patched.Spec.Containers[0].Resources = v1.ResourceRequirements{Limits: tc.limits, Requests: tc.requests}
			if tc.image != "" {
				patched.Spec.Containers[0].Image = tc.image
			}
			next, errs := ApplyResize(cur, patched)
			if tc.wantErr != "" {
				if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.wantErr) {
					t.Fatalf("errs = %v, want %q", errs, tc.wantErr)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatalf("errs = %v", errs)
			}
			got := next.Spec.Containers[0]
			if got.Image != "x" || !got.Resources.Limits.Memory().Equal(*tc.limits.Memory()) {
				t.Errorf("container = %s %v, want image x and limits %v", got.Image, got.Resources.Limits, tc.limits)
			}
			if cur.Spec.Containers[0].Resources.Limits.Memory().String() != "64Mi" {
				t.Errorf("cur changed")
			}
		})
	}
}

// A resize is validated as the pod is on create: its resizePolicy is the
// API server's (ValidatePodResize runs validateResizePolicy), so a pod
// whose restartPolicy is Never never asks for a restart.
func TestApplyResizeChecksResizePolicy(t *testing.T) {
	cur := &Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: v1.PodSpec{RestartPolicy: v1.RestartPolicyNever, Containers: []v1.Container{{
			Name: "app", Image: "x",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}},
		}}},
	}}
	patched := cur.Pod.DeepCopy()
	patched.Spec.Containers[0].ResizePolicy = []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	_, errs := ApplyResize(cur, patched)
	want := `spec.containers[0].resizePolicy: Invalid value: "RestartContainer": must be 'NotRequired' when pod ` + "`restartPolicy`" + ` is 'Never'`
	if len(errs) != 1 || errs[0].Error() != want {
		t.Fatalf("errs = %v, want %q", errs, want)
	}
	patched.Spec.Containers[0].ResizePolicy[0].RestartPolicy = v1.NotRequired
	if _, errs := ApplyResize(cur, patched); len(errs) > 0 {
		t.Fatalf("NotRequired: %v", errs)
	}
}
