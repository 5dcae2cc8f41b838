package podspec

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/cgroups"
)

func res(cpuReq, cpuLim, memReq, memLim string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{Requests: v1.ResourceList{}, Limits: v1.ResourceList{}}
	set := func(l v1.ResourceList, name v1.ResourceName, v string) {
		if v != "" {
			l[name] = resource.MustParse(v)
		}
	}
	set(r.Requests, v1.ResourceCPU, cpuReq)
	set(r.Limits, v1.ResourceCPU, cpuLim)
	set(r.Requests, v1.ResourceMemory, memReq)
	set(r.Limits, v1.ResourceMemory, memLim)
	return r
}

func podOf(containers ...v1.ResourceRequirements) *model.Pod {
	p := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "u"}}}
	for _, r := range containers {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "c", Resources: r})
	}
	return p
}

// The kubelet's container settings (kuberuntime_container_linux.go,
// calculateLinuxResources; cm/helpers_linux.go, MilliCPUToShares and
// MilliCPUToQuota).
func TestContainerResources(t *testing.T) {
	for name, tc := range map[string]struct {
		res  v1.ResourceRequirements
		want Resources
	}{
		"nothing: the minimum shares":   {res("", "", "", ""), Resources{CPUShares: 2}},
		"limit only: shares of it":      {res("", "200m", "", "64Mi"), Resources{CPUShares: 204, CPUQuota: 20000, Memory: 64 << 20}},
		"request and limit":             {res("100m", "1", "", ""), Resources{CPUShares: 102, CPUQuota: 100000}},
		"a tiny limit: at least 1 ms":   {res("", "1m", "", ""), Resources{CPUShares: 2, CPUQuota: 1000}},
		"a huge request: the max share": {res("1000", "", "", ""), Resources{CPUShares: 262144}},
	} {
		p := podOf(tc.res)
		if got := ContainerResources(p, &p.Spec.Containers[0]); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
}

// ResourceConfigForPod (pkg/kubelet/cm/helpers_linux.go): a Burstable pod
// is limited only in what every container limits.
func TestPodResources(t *testing.T) {
	for name, tc := range map[string]struct {
		pod  *model.Pod
		want Resources
	}{
		"best effort":                          {podOf(res("", "", "", "")), Resources{CPUShares: 2}},
		"guaranteed":                           {podOf(res("200m", "200m", "64Mi", "64Mi"), res("300m", "300m", "32Mi", "32Mi")), Resources{CPUShares: 512, CPUQuota: 50000, Memory: 96 << 20}},
		"burstable, memory limited everywhere": {podOf(res("100m", "", "", "64Mi"), res("", "", "", "32Mi")), Resources{CPUShares: 102, Memory: 96 << 20}},
		"burstable, one without a cpu limit":   {podOf(res("200m", "200m", "", ""), res("", "", "", "")), Resources{CPUShares: 204}},
	} {
		if got := PodResources(tc.pod); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
	// An init container needing more than the regular ones sets the pod's
	// amount (component-helpers' PodRequests); a sidecar adds to both.
	p := podOf(res("100m", "100m", "16Mi", "16Mi"))
	always := v1.ContainerRestartPolicyAlways
	p.Spec.InitContainers = []v1.Container{
		{Name: "side", RestartPolicy: &always, Resources: res("50m", "50m", "8Mi", "8Mi")},
		{Name: "init", Resources: res("500m", "500m", "64Mi", "64Mi")},
	}
	if got, want := PodResources(p), (Resources{CPUShares: 563, CPUQuota: 55000, Memory: 72 << 20}); got != want {
		t.Errorf("init and sidecar: %+v, want %+v", got, want)
	}
}

// withPod gives p pod-level resources.
func withPod(p *model.Pod, r v1.ResourceRequirements) *model.Pod {
	p.Spec.Resources = &r
	return p
}

// ResourceConfigForPod with pod-level resources: the kubelet's own cases
// (pkg/kubelet/cm/helpers_linux_test.go, TestResourceConfigForPod, those
// with podLevelResourcesEnabled), on pods as they are written there (not
// defaulted). Pod-level limits replace the containers' sums, and make a
// Burstable pod limited even where a container is not.
func TestPodResourcesPodLevel(t *testing.T) {
	const guaranteed, burstable, partial = 102, 102, 204 // shares of 100m, 100m, 200m
	for name, tc := range map[string]struct {
		pod  *model.Pod
		want Resources
	}{
		"besteffort-with-pod-level-resources-enabled": {withPod(podOf(res("", "", "", "")), res("", "", "", "")), Resources{CPUShares: 2}},
		"burstable-with-pod-level-requests":           {withPod(podOf(v1.ResourceRequirements{}), res("100m", "", "100Mi", "")), Resources{CPUShares: burstable}},
		"burstable-with-pod-and-container-level-requests": {
			withPod(podOf(res("10m", "", "50Mi", "")), res("100m", "", "100Mi", "")), Resources{CPUShares: burstable},
		},
		"burstable-with-pod-level-resources": {
			withPod(podOf(v1.ResourceRequirements{}), res("100m", "200m", "100Mi", "200Mi")), Resources{CPUShares: burstable, CPUQuota: 20000, Memory: 200 << 20},
		},
		"burstable-with-pod-and-container-level-resources": {
			withPod(podOf(res("10m", "50m", "50Mi", "100Mi")), res("100m", "200m", "100Mi", "200Mi")), Resources{CPUShares: burstable, CPUQuota: 20000, Memory: 200 << 20},
		},
		"burstable-with-partial-pod-level-resources-limits": {
			withPod(podOf(res("200m", "200m", "200Mi", "200Mi")), res("200m", "", "300Mi", "")), Resources{CPUShares: partial, CPUQuota: 20000, Memory: 200 << 20},
		},
		"guaranteed-with-pod-level-resources": {
			withPod(podOf(v1.ResourceRequirements{}), res("100m", "100m", "100Mi", "100Mi")), Resources{CPUShares: guaranteed, CPUQuota: 10000, Memory: 100 << 20},
		},
		"guaranteed-with-pod-and-container-level-resources": {
			withPod(podOf(res("10m", "50m", "50Mi", "100Mi")), res("100m", "100m", "100Mi", "100Mi")), Resources{CPUShares: guaranteed, CPUQuota: 10000, Memory: 100 << 20},
		},
	} {
		if got := PodResources(tc.pod); got != tc.want {
			t.Errorf("%s: %+v, want %+v", name, got, tc.want)
		}
	}
	// guaranteed-pod-level-resources-with-init-containers
	p := withPod(podOf(res("10m", "50m", "50Mi", "50Mi")), res("100m", "100m", "100Mi", "100Mi"))
	p.Spec.InitContainers = []v1.Container{{Name: "init", Resources: res("10m", "50m", "50Mi", "50Mi")}}
	if got, want := PodResources(p), (Resources{CPUShares: guaranteed, CPUQuota: 10000, Memory: 100 << 20}); got != want {
		t.Errorf("guaranteed-pod-level-resources-with-init-containers: %+v, want %+v", got, want)
	}
}

// Two containers without limits in a pod limited at pod level, as the
// kubelet has it once the API server completed the pod (model.Default):
// the pod's cgroup has the pod's limits (and the pid limit), its shares
// from the containers' requests (the pod-level request defaults to them),
// and each container's has the pod's limits too
// (kuberuntime_container_linux.go, getCPULimit and getMemoryLimit), its
// cpu shares from the pod-level cpu limit it inherits when it requests
// none.
func TestPodLevelLimitsOfTheCgroups(t *testing.T) {
	p := withPod(podOf(v1.ResourceRequirements{}, res("100m", "", "", "")), res("", "500m", "", "128Mi"))
	model.Default(p)
	if q := model.QOSClass(p.Pod); q != v1.PodQOSBurstable {
		t.Fatalf("QoS class %s, want Burstable", q)
	}
	if got, want := PodCgroupResources(p, 50), (cgroups.Resources{CPUShares: 102, CPUQuota: 50000, Memory: 128 << 20, Pids: 50}); got != want {
		t.Errorf("pod cgroup: %+v, want %+v", got, want)
	}
	if got, want := ContainerResources(p, &p.Spec.Containers[0]), (Resources{CPUShares: 512, CPUQuota: 50000, Memory: 128 << 20}); got != want {
		t.Errorf("a container without requests: %+v, want %+v", got, want)
	}
	if got, want := ContainerResources(p, &p.Spec.Containers[1]), (Resources{CPUShares: 102, CPUQuota: 50000, Memory: 128 << 20}); got != want {
		t.Errorf("a container requesting 100m: %+v, want %+v", got, want)
	}
	if got, want := SandboxResources(p), (Resources{CPUShares: 102, CPUQuota: 50000, Memory: 128 << 20}); got != want {
		t.Errorf("sandbox: %+v, want %+v", got, want)
	}
	// Without pod-level resources nothing of the pod is limited.
	p.Spec.Resources = nil
	if got, want := PodCgroupResources(p, 0), (cgroups.Resources{CPUShares: 102}); got != want {
		t.Errorf("without spec.resources: %+v, want %+v", got, want)
	}
}

// GetContainerOOMScoreAdjust (pkg/kubelet/qos/policy.go).
func TestOOMScoreAdj(t *testing.T) {
	const capacity = 1000 << 20
	g := podOf(res("1", "1", "100Mi", "100Mi"))
	if got := OOMScoreAdj(g, &g.Spec.Containers[0], capacity); got != -997 {
		t.Errorf("guaranteed: %d", got)
	}
	be := podOf(res("", "", "", ""))
	if got := OOMScoreAdj(be, &be.Spec.Containers[0], capacity); got != 1000 {
		t.Errorf("best effort: %d", got)
	}
	b := podOf(res("", "", "100Mi", ""), res("", "", "", "10Mi"))
	if got := OOMScoreAdj(b, &b.Spec.Containers[0], capacity); got != 900 {
		t.Errorf("burstable, a tenth of the node: %d", got)
	}
	if got := OOMScoreAdj(b, &b.Spec.Containers[1], capacity); got != 999 {
		t.Errorf("burstable without a request: %d", got)
	}
	// A pod-level memory request shares what its containers leave of it
	// among them (pkg/kubelet/qos/helpers.go,
	// remainingPodMemReqPerContainer): (300Mi - 100Mi) / 2 each.
	pl := withPod(podOf(res("", "", "100Mi", ""), res("", "", "", "")), res("", "", "300Mi", ""))
	if got := OOMScoreAdj(pl, &pl.Spec.Containers[0], capacity); got != 800 {
		t.Errorf("burstable with a pod-level request, 100Mi of its own: %d", got)
	}
	if got := OOMScoreAdj(pl, &pl.Spec.Containers[1], capacity); got != 900 {
		t.Errorf("burstable with a pod-level request, none of its own: %d", got)
	}
}
