package process

import (
	"context"
	"errors"
	"path/filepath"
	"syscall"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/process/shim"
)

func TestStopLeftStopsThePodsInOrder(t *testing.T) {
	root := t.TempDir()
	h := newHarnessAt(t, root)
	always := v1.ContainerRestartPolicyAlways
	stopped := "trap 'echo stopped; exit 0' TERM; echo ready; while :; do sleep 1 & wait; done"
	side := shell("side", stopped)
	side.RestartPolicy = &always
	pod := newPod(t, shell("main", stopped))
	pod.Spec.InitContainers = []v1.Container{side}
	grace := int64(20)
	pod.Spec.TerminationGracePeriodSeconds = &grace
	h.prepare(pod)
	refs := []model.ContainerRef{{Name: "side", Role: model.RoleSidecar, Index: 0}, {Name: "main", Role: model.RoleMain, Index: 0}}
	var dirs []string
	for _, ref := range refs {
		c, err := h.r.StartContainer(context.Background(), pod, ref, 0)
		if err != nil {
			t.Fatal(err)
		}
		h.waitOutput(ref.Name, "ready")
		dirs = append(dirs, h.r.instanceDir(pod.UID, c.ID))
	}
	for i, want := range []shim.Order{
		{Role: shim.RoleSidecar, Index: 0},
		{Role: shim.RoleMain, Index: 1},
	} {
		st, err := shim.Load(dirs[i])
		if err != nil {
			t.Fatal(err)
		}
		want.GracePeriodSeconds, want.StopSignal = grace, syscall.SIGTERM
		want.PodDir = filepath.Join(root, "pods", string(pod.UID), "order")
		want.AgentLock = filepath.Join(root, agentLockFile)
		if got := st.Spec.Order; got == nil || *got != want {
			t.Errorf("%s: order %+v, want %+v", refs[i].Name, got, want)
		}
	}

	if _, err := StopLeft(context.Background(), root); !errors.Is(err, ErrRootInUse) {
		t.Fatalf("StopLeft while the runtime is open = %v, want ErrRootInUse", err)
	}
	if err := h.r.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := StopLeft(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if res.Pods != 1 || res.Containers != 2 || len(res.Left) != 0 {
		t.Errorf("StopLeft = %+v, want 2 containers of 1 pod stopped", res)
	}
	var exits []*shim.Exit
	for _, dir := range dirs {
		exit, err := shim.LoadExit(dir)
		if err != nil || exit == nil || exit.ExitCode != 0 {
			t.Fatalf("exit of %s: %+v, %v; want 0", dir, exit, err)
		}
		exits = append(exits, exit)
	}
	if !exits[1].FinishedAt.Before(exits[0].FinishedAt) {
		t.Errorf("the main finished at %v, not before its sidecar (%v)", exits[1].FinishedAt, exits[0].FinishedAt)
	}
	if res, err := StopLeft(context.Background(), root); err != nil || res.Containers != 0 {
		t.Errorf("StopLeft again = %+v, %v; want nothing to stop", res, err)
	}
}
