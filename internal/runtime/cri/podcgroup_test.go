package cri

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/cgroups"
)

// withCgroups gives the harness's next Runtime a cgroup v1 hierarchy of
// plain directories under h.cgroups (where CleanupPod removes pod
// cgroups too) and a pid limit, and opens it.
func (h *harness) withCgroups(pids int64) {
	h.t.Helper()
	mounts := map[string]string{}
	for _, c := range []string{"memory", "cpu", "cpuacct", "pids"} {
		mounts[c] = filepath.Join(h.cgroups, c)
	}
	h.cfg.Cgroups, h.cfg.PodPidsLimit = cgroups.V1At(mounts), pids
	if err := h.cfg.Cgroups.Init(DefaultCgroupParent); err != nil {
		h.t.Fatal(err)
	}
	h.reopen()
}

// cgroupFile is the content of a control file of the pod cgroup p in the
// v1 hierarchy of controller.
func (h *harness) cgroupFile(controller, p, file string) string {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(h.cgroups, controller, p, file))
	if err != nil {
		h.t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// As the kubelet's pod container manager does
// (pkg/kubelet/cm/pod_container_manager_linux.go, EnsureExists, before
// RunPodSandbox): the pod's cgroup is made with the pod's limits and pid
// limit and is the sandbox's cgroup parent; two containers without limits
// in a pod with a pod-level memory limit share it (the limit of each is
// the pod's too, kuberuntime_container_linux.go, getMemoryLimit). A
// resize sets the pod's limits again, and CleanupPod removes the cgroup.
func TestPodCgroup(t *testing.T) {
	h := newHarness(t, nil)
	h.withCgroups(50)
	pod := testPod("uid-1")
	pod.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("128Mi")}}
	model.Default(pod)
	if errs := model.Validate(pod); len(errs) > 0 {
		t.Fatal(errs)
	}
	const cg = "/podward/burstable/poduid-1"
	h.prepare(pod)
	if sbs := h.f.sandboxList(); len(sbs) != 1 || sbs[0].config.Linux.CgroupParent != cg {
		t.Fatalf("sandboxes %v, want one in %s", sbs, cg)
	}
	if got := h.cgroupFile("memory", cg, "memory.limit_in_bytes"); got != "134217728" {
		t.Errorf("the pod's memory limit = %s, want the pod-level 128Mi", got)
	}
	if got := h.cgroupFile("pids", cg, "pids.max"); got != "50" {
		t.Errorf("the pod's pids.max = %s, want 50", got)
	}
	if got := h.cgroupFile("cpu", cg, "cpu.shares"); got != "2" {
		t.Errorf("the pod's cpu.shares = %s, want 2 (no cpu request)", got)
	}
	c := h.start(pod, "app", 0)
	if res := h.f.container(c.ID).config.Linux.Resources; res.MemoryLimitInBytes != 128<<20 {
		t.Errorf("the container's resources = %v, want the pod's memory limit", res)
	}

	// An agent restart: the next Runtime sets the limits of the pod it
	// finds again.
	if err := os.WriteFile(filepath.Join(h.cgroups, "pids", cg, "pids.max"), []byte("max"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.reopen()
	setup := h.start(pod, "setup", 1)
	if got := h.cgroupFile("pids", cg, "pids.max"); got != "50" {
		t.Errorf("pids.max after a restart = %s, want 50 again", got)
	}
	if n := len(h.f.sandboxList()); n != 1 {
		t.Errorf("%d sandboxes after the restart, want the one adopted", n)
	}

	// A resize: the container's limits and the pod's.
	pod.Spec.Resources = nil
	pod.Spec.Containers[0].Resources = v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   v1.ResourceList{v1.ResourceMemory: resource.MustParse("96Mi")},
	}
	pod.Spec.InitContainers[0].Resources = pod.Spec.Containers[0].Resources
	if err := h.r.UpdateContainerResources(context.Background(), pod, ref(pod, "app"), c.ID); err != nil {
		t.Fatal(err)
	}
	if got := h.cgroupFile("memory", cg, "memory.limit_in_bytes"); got != "100663296" {
		t.Errorf("the pod's memory limit after the resize = %s, want 96Mi", got)
	}

	h.f.exit(t, c.ID, 0, "Completed", "")
	h.f.exit(t, setup.ID, 0, "Completed", "")
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	for _, ctl := range []string{"memory", "cpu", "cpuacct", "pids"} {
		if _, err := os.Stat(filepath.Join(h.cgroups, ctl, cg)); !os.IsNotExist(err) {
			t.Errorf("the pod's %s cgroup is left: %v", ctl, err)
		}
	}
}

// The pod's cgroup is made before its sandbox: when it cannot be, no
// sandbox runs. A pod whose cgroup is all that is left of it is listed,
// for its cleanup to be done again (as is the one whose setup failed:
// its volumes are there).
func TestPodCgroupBeforeTheSandbox(t *testing.T) {
	h := newHarness(t, nil)
	h.withCgroups(0)
	pod := testPod("uid-1")
	// A file where the BestEffort level's directory goes.
	if err := os.WriteFile(filepath.Join(h.cgroups, "memory", "podward", "besteffort"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := h.r.PreparePod(context.Background(), pod); err == nil || !strings.Contains(err.Error(), "the pod's cgroup") {
		t.Fatalf("PreparePod = %v, want the cgroup's error", err)
	}
	if n := len(h.f.sandboxList()); n != 0 {
		t.Errorf("%d sandboxes run without the pod's cgroup", n)
	}

	left := testPod("uid-2")
	for _, ctl := range []string{"memory", "cpu", "cpuacct", "pids"} {
		if err := os.MkdirAll(filepath.Join(h.cgroups, ctl, "podward", "burstable", "poduid-2"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(h.r.root, "pods", "uid-2", "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if uids, err := h.r.ListPods(); err != nil || !slices.Equal(uids, []types.UID{pod.UID, left.UID}) {
		t.Errorf("ListPods = %v, %v; want %s and %s, whose cgroup is left", uids, err, pod.UID, left.UID)
	}
}
