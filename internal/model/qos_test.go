package model

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// resources builds requirements from quantities by resource name; a nil
// map is no list.
func resources(requests, limits map[v1.ResourceName]string) v1.ResourceRequirements {
	list := func(m map[v1.ResourceName]string) v1.ResourceList {
		if m == nil {
			return nil
		}
		l := v1.ResourceList{}
		for name, q := range m {
			l[name] = resource.MustParse(q)
		}
		return l
	}
	return v1.ResourceRequirements{Requests: list(requests), Limits: list(limits)}
}

type rl = map[v1.ResourceName]string

// Kubernetes' rules (k8s.io/kubernetes pkg/apis/core/v1/helper/qos,
// ComputePodQOS, with pod-level resources as in 1.37), on defaulted pods:
// Default copies limits into unset requests first, as the API server does
// before it computes the class.
func TestComputeQOSClass(t *testing.T) {
	guaranteed := resources(rl{"cpu": "100m", "memory": "100Mi"}, rl{"cpu": "100m", "memory": "100Mi"})
	tests := map[string]struct {
		containers, inits []v1.ResourceRequirements
		pod               *v1.ResourceRequirements
		want              v1.PodQOSClass
	}{
		"nothing":                   {containers: []v1.ResourceRequirements{{}}, want: v1.PodQOSBestEffort},
		"zero requests":             {containers: []v1.ResourceRequirements{resources(rl{"cpu": "0", "memory": "0"}, nil)}, want: v1.PodQOSBestEffort},
		"other resources only":      {containers: []v1.ResourceRequirements{resources(rl{"ephemeral-storage": "1Gi"}, rl{"ephemeral-storage": "1Gi"})}, want: v1.PodQOSBestEffort},
		"requests equal limits":     {containers: []v1.ResourceRequirements{guaranteed, guaranteed}, want: v1.PodQOSGuaranteed},
		"limits only (defaulted)":   {containers: []v1.ResourceRequirements{resources(nil, rl{"cpu": "1", "memory": "1Gi"})}, want: v1.PodQOSGuaranteed},
		"init container too":        {containers: []v1.ResourceRequirements{guaranteed}, inits: []v1.ResourceRequirements{guaranteed}, want: v1.PodQOSGuaranteed},
		"init container without":    {containers: []v1.ResourceRequirements{guaranteed}, inits: []v1.ResourceRequirements{{}}, want: v1.PodQOSBurstable},
		"one container best effort": {containers: []v1.ResourceRequirements{guaranteed, {}}, want: v1.PodQOSBurstable},
		"requests below limits":     {containers: []v1.ResourceRequirements{resources(rl{"cpu": "100m", "memory": "100Mi"}, rl{"cpu": "200m", "memory": "100Mi"})}, want: v1.PodQOSBurstable},
		"cpu limit only":            {containers: []v1.ResourceRequirements{resources(nil, rl{"cpu": "100m"})}, want: v1.PodQOSBurstable},
		"requests only":             {containers: []v1.ResourceRequirements{resources(rl{"memory": "100Mi"}, nil)}, want: v1.PodQOSBurstable},
		"pod level guaranteed":      {containers: []v1.ResourceRequirements{{}}, pod: &guaranteed, want: v1.PodQOSGuaranteed},
		"pod level limits only":     {containers: []v1.ResourceRequirements{{}}, pod: &v1.ResourceRequirements{Limits: guaranteed.Limits}, want: v1.PodQOSGuaranteed},
		// The API server defaults the pod-level limits to the containers'
		// when each has them (pkg/api/pod/util.go, defaultPodLevelLimits).
		"pod level requests only":       {containers: []v1.ResourceRequirements{guaranteed}, pod: &v1.ResourceRequirements{Requests: guaranteed.Requests}, want: v1.PodQOSGuaranteed},
		"pod level requests, no limits": {containers: []v1.ResourceRequirements{{}}, pod: &v1.ResourceRequirements{Requests: guaranteed.Requests}, want: v1.PodQOSBurstable},
		// The pod-level cpu request is the containers' (50m), not the
		// pod-level limit.
		"pod level limits, ctr requests": {containers: []v1.ResourceRequirements{resources(rl{"cpu": "50m"}, nil)}, pod: &v1.ResourceRequirements{Limits: guaranteed.Limits}, want: v1.PodQOSBurstable},
		"pod level memory limit only":    {containers: []v1.ResourceRequirements{{}, {}}, pod: &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi")}}, want: v1.PodQOSBurstable},
		"pod level decides over ctrs":    {containers: []v1.ResourceRequirements{{}}, pod: ptrTo(resources(rl{"cpu": "100m"}, rl{"cpu": "1", "memory": "1Gi"})), want: v1.PodQOSBurstable},
		"pod level cpu limit only":       {containers: []v1.ResourceRequirements{{}}, pod: ptrTo(resources(nil, rl{"cpu": "1"})), want: v1.PodQOSBurstable},
		"pod level empty: containers":    {containers: []v1.ResourceRequirements{guaranteed}, pod: &v1.ResourceRequirements{}, want: v1.PodQOSGuaranteed},
		"requests summed over the pod":   {containers: []v1.ResourceRequirements{resources(rl{"cpu": "100m", "memory": "100Mi"}, rl{"cpu": "200m", "memory": "100Mi"}), resources(rl{"cpu": "100m", "memory": "100Mi"}, rl{"cpu": "0", "memory": "100Mi"})}, want: v1.PodQOSBurstable},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			p := &Pod{Pod: &v1.Pod{}}
			for i, r := range tt.containers {
				p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: string(rune('a' + i)), Resources: r})
			}
			for i, r := range tt.inits {
				p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: string(rune('i' + i)), Resources: r})
			}
			p.Spec.Resources = tt.pod
			Default(p)
			if got := ComputeQOSClass(&p.Spec); got != tt.want {
				t.Errorf("ComputeQOSClass = %s, want %s", got, tt.want)
			}
			if got := QOSClass(p.Pod); got != tt.want {
				t.Errorf("QOSClass = %s, want %s", got, tt.want)
			}
		})
	}
}

// A class the pod carries (set by the API server on create) is kept, as the
// kubelet's GetPodQOS keeps it.
func TestQOSClassKeepsTheAPIServers(t *testing.T) {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}, Status: v1.PodStatus{QOSClass: v1.PodQOSBurstable}}
	if got := QOSClass(p); got != v1.PodQOSBurstable {
		t.Errorf("QOSClass = %s, want the pod's Burstable", got)
	}
}

func ptrTo[T any](v T) *T { return &v }
