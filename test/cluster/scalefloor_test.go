package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/test/internal/bintest"
)

// floorResult is the floor of a scale run: the same pods (a sandbox on the
// pod network, one busybox container that sleeps) started at once
// straight through the CRI runtime, with no agent, API server, scheduler
// or controller: RunPodSandbox, CreateContainer, StartContainer, each pod
// timed from its first call to StartContainer's answer.
type floorResult struct {
	AllStartedS float64   `json:"all_started_s"`
	Startup     latencyMS `json:"startup"`
}

// criFloor starts n such pods at once, then stops and removes them.
func criFloor(t *testing.T, n int, within time.Duration) floorResult {
	t.Helper()
	conn, err := grpc.NewClient(os.Getenv(bintest.CRIEndpointEnv), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	rt := runtimeapi.NewRuntimeServiceClient(conn)
	ctx, cancel := context.WithTimeout(t.Context(), within)
	defer cancel()
	if err := ensureImage(ctx, runtimeapi.NewImageServiceClient(conn), scaleImage); err != nil {
		t.Fatal(err)
	}
	run, logs := randomSuffix(t), t.TempDir()
	sandboxes := make([]string, n)
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	t0 := time.Now()
	for i := range n {
		wg.Go(func() {
			start := time.Now()
			id, err := floorPod(ctx, rt, fmt.Sprintf("floor-%d", i), run, logs)
			sandboxes[i] = id
			if err != nil {
				t.Errorf("floor pod %d: %v", i, err)
				return
			}
			lat[i] = time.Since(start)
		})
	}
	wg.Wait()
	res := floorResult{AllStartedS: time.Since(t0).Seconds(), Startup: latencies(lat)}
	stopFloor(t, rt, sandboxes)
	return res
}

// floorPod runs one pod of the floor and returns its sandbox's id (set
// also when a later call failed, for the clean-up).
func floorPod(ctx context.Context, rt runtimeapi.RuntimeServiceClient, name, run, logs string) (string, error) {
	sc := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "podward-scale-floor", Uid: run + "-" + name},
		LogDirectory: filepath.Join(logs, name),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	if err := os.MkdirAll(sc.LogDirectory, 0o755); err != nil {
		return "", err
	}
	sb, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: sc})
	if err != nil {
		return "", fmt.Errorf("RunPodSandbox: %w", err)
	}
	c, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sb.PodSandboxId, SandboxConfig: sc, Config: &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "sleep"},
		Image:    &runtimeapi.ImageSpec{Image: scaleImage},
		Command:  []string{"sh", "-c", "trap 'exit 0' TERM; sleep inf & wait"},
		LogPath:  "sleep.log",
	}})
	if err != nil {
		return sb.PodSandboxId, fmt.Errorf("CreateContainer: %w", err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		return sb.PodSandboxId, fmt.Errorf("StartContainer: %w", err)
	}
	return sb.PodSandboxId, nil
}

// ensureImage pulls image unless the runtime has it: CreateContainer does
// not pull, and neither the floor nor the Deployment after it should time
// a pull (the SLO leaves pulls out).
func ensureImage(ctx context.Context, img runtimeapi.ImageServiceClient, image string) error {
	spec := &runtimeapi.ImageSpec{Image: image}
	st, err := img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil {
		return fmt.Errorf("image status of %s: %w", image, err)
	}
	if st.GetImage() != nil {
		return nil
	}
	if _, err := img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec}); err != nil {
		return fmt.Errorf("pull %s: %w", image, err)
	}
	return nil
}

// stopFloor stops and removes the floor's sandboxes (and so their
// containers and addresses) before the run goes on.
func stopFloor(t *testing.T, rt runtimeapi.RuntimeServiceClient, sandboxes []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	for _, id := range sandboxes {
		if id == "" {
			continue
		}
		wg.Go(func() {
			if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
				t.Errorf("floor: stop sandbox %s: %v", id, err)
				return
			}
			if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
				t.Errorf("floor: remove sandbox %s: %v", id, err)
			}
		})
	}
	wg.Wait()
}
