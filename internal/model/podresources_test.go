package model

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// cm is a list of cpu and memory, "" leaving one out; both "": nil.
func cm(cpu, memory string) v1.ResourceList {
	if cpu == "" && memory == "" {
		return nil
	}
	l := v1.ResourceList{}
	if cpu != "" {
		l[v1.ResourceCPU] = resource.MustParse(cpu)
	}
	if memory != "" {
		l[v1.ResourceMemory] = resource.MustParse(memory)
	}
	return l
}

func ctr(name string, requests, limits v1.ResourceList) v1.Container {
	return v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: requests, Limits: limits}}
}

// The API server's completion of pod-level resources on create, with
// PodLevelResourcesFixDefaulting (on by default since 1.37): the cases of
// pkg/registry/core/pod/strategy_test.go (TestPodLevelResourcesDefaulting)
// on pkg/api/pod/util.go, DefaultPodLevelResources.
func TestDefaultPodLevelResources(t *testing.T) {
	sidecar := func(c v1.Container) v1.Container {
		c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
		return c
	}
	tests := map[string]struct {
		containers, inits        []v1.Container
		pod                      *v1.ResourceRequirements
		wantRequests, wantLimits v1.ResourceList
	}{
		"empty limits map": {
			containers: []v1.Container{ctr("c1", cm("100m", "128Mi"), cm("200m", "256Mi"))},
			pod:        &v1.ResourceRequirements{Limits: v1.ResourceList{}},
			wantLimits: v1.ResourceList{},
		},
		"memory request set, container limits set for CPU": {
			containers:   []v1.Container{ctr("c1", cm("100m", "128Mi"), cm("100m", "")), ctr("c2", cm("200m", "128Mi"), cm("200m", ""))},
			pod:          &v1.ResourceRequirements{Requests: cm("", "256Mi")},
			wantRequests: cm("300m", "256Mi"), wantLimits: cm("300m", ""),
		},
		"cpu request set, containers have memory requests and limits": {
			containers:   []v1.Container{ctr("c1", cm("", "128Mi"), cm("", "256Mi")), ctr("c2", cm("", "128Mi"), cm("", "256Mi"))},
			pod:          &v1.ResourceRequirements{Requests: cm("200m", "")},
			wantRequests: cm("200m", "256Mi"), wantLimits: cm("", "512Mi"),
		},
		"limits not defaulted when a container misses them": {
			containers:   []v1.Container{ctr("c1", cm("50m", "64Mi"), cm("100m", "128Mi")), ctr("c2", cm("50m", "64Mi"), nil)},
			pod:          &v1.ResourceRequirements{Requests: cm("200m", "256Mi")},
			wantRequests: cm("200m", "256Mi"),
		},
		"pod memory limit set, cpu limit defaulted from containers": {
			containers:   []v1.Container{ctr("c1", cm("100m", "128Mi"), cm("100m", "128Mi")), ctr("c2", cm("80m", "128Mi"), cm("100m", "128Mi"))},
			pod:          &v1.ResourceRequirements{Requests: cm("", "256Mi"), Limits: cm("", "256Mi")},
			wantRequests: cm("180m", "256Mi"), wantLimits: cm("200m", "256Mi"),
		},
		"both limits already set": {
			containers:   []v1.Container{ctr("c1", cm("100m", "128Mi"), cm("100m", "128Mi"))},
			pod:          &v1.ResourceRequirements{Requests: cm("100m", "128Mi"), Limits: cm("500m", "512Mi")},
			wantRequests: cm("100m", "128Mi"), wantLimits: cm("500m", "512Mi"),
		},
		"init container with limits included": {
			containers:   []v1.Container{ctr("c1", cm("100m", "128Mi"), cm("100m", "128Mi"))},
			inits:        []v1.Container{ctr("init1", cm("200m", "256Mi"), cm("200m", "256Mi"))},
			pod:          &v1.ResourceRequirements{Requests: cm("200m", "256Mi")},
			wantRequests: cm("200m", "256Mi"), wantLimits: cm("200m", "256Mi"),
		},
		"init container without limits: none defaulted": {
			containers:   []v1.Container{ctr("c1", cm("100m", "128Mi"), cm("100m", "128Mi"))},
			inits:        []v1.Container{ctr("init1", cm("200m", "256Mi"), nil)},
			pod:          &v1.ResourceRequirements{Requests: cm("200m", "256Mi")},
			wantRequests: cm("200m", "256Mi"),
		},
		"sidecar with limits included": {
			containers:   []v1.Container{ctr("c1", cm("100m", "128Mi"), cm("100m", "128Mi"))},
			inits:        []v1.Container{sidecar(ctr("sidecar", cm("50m", "64Mi"), cm("50m", "64Mi")))},
			pod:          &v1.ResourceRequirements{Requests: cm("150m", "192Mi")},
			wantRequests: cm("150m", "192Mi"), wantLimits: cm("150m", "192Mi"),
		},
		"limit raised to the pod's request": {
			containers:   []v1.Container{ctr("c1", cm("100m", "128Mi"), cm("100m", "128Mi"))},
			pod:          &v1.ResourceRequirements{Requests: cm("500m", "512Mi")},
			wantRequests: cm("500m", "512Mi"), wantLimits: cm("500m", "512Mi"),
		},
		"pod requests defaulted from the containers' when limits set": {
			containers:   []v1.Container{ctr("c1", cm("100m", "128Mi"), cm("200m", "256Mi"))},
			pod:          &v1.ResourceRequirements{Limits: cm("500m", "512Mi")},
			wantRequests: cm("100m", "128Mi"), wantLimits: cm("500m", "512Mi"),
		},
		"pod requests from the pod limits when no container requests": {
			containers:   []v1.Container{ctr("c1", nil, nil), ctr("c2", nil, nil)},
			pod:          &v1.ResourceRequirements{Limits: cm("", "128Mi")},
			wantRequests: cm("", "128Mi"), wantLimits: cm("", "128Mi"),
		},
		"unsupported resources are not defaulted": {
			containers: []v1.Container{ctr("c1", v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}, v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")})},
			pod:        &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}},
			// Kept as given: nothing is added.
			wantRequests: v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			spec := &v1.PodSpec{Containers: tt.containers, InitContainers: tt.inits, Resources: tt.pod}
			defaultPodLevelResources(spec)
			if !equality.Semantic.DeepEqual(spec.Resources.Requests, tt.wantRequests) || !equality.Semantic.DeepEqual(spec.Resources.Limits, tt.wantLimits) {
				t.Errorf("requests %v limits %v, want %v and %v", spec.Resources.Requests, spec.Resources.Limits, tt.wantRequests, tt.wantLimits)
			}
		})
	}
}

// Only a pod that sets spec.resources is completed; Default leaves an
// unset one unset.
func TestDefaultLeavesPodLevelResourcesUnset(t *testing.T) {
	p := &Pod{Pod: &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{ctr("c1", nil, cm("1", "1Gi"))}}}}
	Default(p)
	if p.Spec.Resources != nil {
		t.Errorf("spec.resources = %v, want none", p.Spec.Resources)
	}
}

// The aggregate of a pod's containers, as component-helpers' PodRequests
// computes it: an init container that needs more than the regular ones
// and the sidecars started before it sets the amount; a defer container
// counts as one that starts after every sidecar.
func TestAggregateResources(t *testing.T) {
	spec := &v1.PodSpec{
		Containers: []v1.Container{ctr("app", cm("100m", "64Mi"), nil)},
		InitContainers: []v1.Container{
			ctr("init", cm("300m", "16Mi"), nil),
			{Name: "side", RestartPolicy: ptr.To(v1.ContainerRestartPolicyAlways), Resources: v1.ResourceRequirements{Requests: cm("50m", "8Mi")}},
		},
	}
	if got, want := AggregateResources(spec, nil, Requests), cm("300m", "72Mi"); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("requests = %v, want %v", got, want)
	}
	deferred := []v1.Container{ctr("upload", cm("", "128Mi"), nil)}
	if got, want := AggregateResources(spec, deferred, Requests), cm("300m", "136Mi"); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("requests with a defer container = %v, want %v", got, want)
	}
}
