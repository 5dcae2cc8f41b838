package planner

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// TestResize follows the kubelet 1.37's computePodResizeAction
// (pkg/kubelet/kuberuntime/kuberuntime_manager.go): a changed resource
// whose resizePolicy is RestartContainer restarts the container; any other
// change is applied in place; NotRequired is the default.
func TestResize(t *testing.T) {
	res := func(cpu, mem string) v1.ResourceRequirements {
		r := v1.ResourceRequirements{Limits: v1.ResourceList{}}
		if cpu != "" {
			r.Limits[v1.ResourceCPU] = resource.MustParse(cpu)
		}
		if mem != "" {
			r.Limits[v1.ResourceMemory] = resource.MustParse(mem)
		}
		return r
	}
	restartMem := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	for name, tc := range map[string]struct {
		spec    v1.ResourceRequirements
		policy  []v1.ContainerResizePolicy
		applied v1.ResourceRequirements
		want    ResizeAction
	}{
		"unchanged":                       {spec: res("500m", "64Mi"), applied: res("0.5", "64Mi"), want: ResizeNone},
		"memory raised, default policy":   {spec: res("500m", "128Mi"), applied: res("500m", "64Mi"), want: ResizeInPlace},
		"memory raised, RestartContainer": {spec: res("500m", "128Mi"), policy: restartMem, applied: res("500m", "64Mi"), want: ResizeRestart},
		"cpu changed, memory restarts":    {spec: res("1", "64Mi"), policy: restartMem, applied: res("500m", "64Mi"), want: ResizeInPlace},
		"limit added":                     {spec: res("1", "64Mi"), applied: res("", "64Mi"), want: ResizeInPlace},
		"unchanged with RestartContainer": {spec: res("1", "64Mi"), policy: restartMem, applied: res("1", "64Mi"), want: ResizeNone},
	} {
		t.Run(name, func(t *testing.T) {
			c := &v1.Container{Name: "app", Resources: tc.spec, ResizePolicy: tc.policy}
			if got := Resize(c, tc.applied); got != tc.want {
				t.Errorf("Resize = %v, want %v", got, tc.want)
			}
		})
	}
}
