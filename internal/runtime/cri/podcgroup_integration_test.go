package cri

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/cgroups"
	"github.com/podward/podward/internal/runtime/podspec"
)

// On the real CRI runtime and the host's cgroups, as the kubelet's pod
// container manager has it (pkg/kubelet/cm/pod_container_manager_linux.go):
// the pod's cgroup podward makes, with the pod-level memory limit and the
// pid limit, is where runc puts the containers' cgroups (the cgroupfs
// driver: <cgroup_parent>/<container ID>); a Runtime that adopts the pod
// after a restart sets its limits again; CleanupPod removes it from every
// hierarchy runc made it in.
func TestIntegrationPodCgroup(t *testing.T) {
	endpoint := criEndpoint(t)
	if os.Geteuid() != 0 {
		t.Skip("needs root: the pods' cgroups")
	}
	h, err := cgroups.Detect()
	if err != nil {
		t.Skipf("no usable cgroup hierarchy: %v", err)
	}
	root := "/podward-it-" + uuid.NewString()[:8]
	if err := h.Init(root); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		dirs, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", root))
		for _, d := range append(dirs, filepath.Join("/sys/fs/cgroup", root)) {
			if err := cgroups.RemoveTree(d); err != nil {
				t.Errorf("remove the test's cgroup root: %v", err)
			}
		}
	})
	cfg := Config{Endpoint: endpoint, Root: t.TempDir(), Logger: testLogger(), RelistPeriod: time.Second, CgroupParent: root, Cgroups: h, PodPidsLimit: 64}
	open := func() *Runtime {
		r, err := New(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		return r
	}
	r := open()
	pod := realPod(t, "cg", map[string]string{"main": "sleep 300", "late": "sleep 300"}, "main", "late")
	pod.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}}
	model.Default(pod)
	prepare(t, r, pod)
	main := startIn(t, r, pod, "main", 0)

	pc := h.Placement(podspec.PodCgroup(root, pod))
	memDir, pidsDir, memFile := pc.Unified, pc.Unified, "memory.max"
	if pc.Unified == "" {
		memDir = filepath.Join(pc.V1["memory"].Mount, pc.V1["memory"].Path)
		pidsDir = filepath.Join(pc.V1["pids"].Mount, pc.V1["pids"].Path)
		memFile = "memory.limit_in_bytes"
	}
	read := func(dir, file string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSpace(string(b))
	}
	if got := read(memDir, memFile); got != "67108864" {
		t.Errorf("the pod's memory limit = %s, want 64Mi", got)
	}
	if got := read(pidsDir, "pids.max"); got != "64" {
		t.Errorf("the pod's pids.max = %s, want 64", got)
	}
	if _, err := os.Stat(filepath.Join(memDir, main.ID)); err != nil {
		t.Errorf("the container's cgroup is not inside the pod's: %v", err)
	}

	// The agent goes and comes back: the pod's cgroup is adopted, its
	// limits set again.
	if err := os.WriteFile(filepath.Join(pidsDir, "pids.max"), []byte("max"), 0o644); err != nil {
		t.Fatal(err)
	}
	r.Close()
	r = open()
	t.Cleanup(func() { cleanUp(t, r, pod) })
	late := startIn(t, r, pod, "late", 0)
	if got := read(pidsDir, "pids.max"); got != "64" {
		t.Errorf("the pod's pids.max after a restart = %s, want 64 again", got)
	}
	if _, err := os.Stat(filepath.Join(memDir, late.ID)); err != nil {
		t.Errorf("the adopted pod's new container is not in its cgroup: %v", err)
	}

	cleanUp(t, r, pod)
	left, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", podspec.PodCgroup(root, pod)))
	if _, err := os.Stat(memDir); err == nil || len(left) > 0 {
		t.Errorf("the pod's cgroups are left after its cleanup: %v", append(left, memDir))
	}
}
