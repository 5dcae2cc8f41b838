package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// floor does what podward does for a start pod, directly, with nothing
// in between: the figure podward is compared with.
type floor interface {
	// start starts the pod's three containers in the order the pod
	// needs: the sidecar, then the two regular containers.
	start(ctx context.Context, name string) (floorPod, error)
	// stop stops them in the order podward does — the regular
	// containers, then the sidecar — and returns once they are gone.
	stop(ctx context.Context, p floorPod) error
	close()
}

// floorPod is what a floor started, for its stop.
type floorPod any

// processFloor forks and execs the containers' processes itself, each in
// a process group of its own, as the process runtime runs them.
type processFloor struct{ env podEnv }

type processFloorPod []*exec.Cmd // in startContainers' order

func (f processFloor) start(_ context.Context, name string) (floorPod, error) {
	var p processFloorPod
	for _, c := range startContainers {
		argv := f.env.stampScript(stampFile(name, c))
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = []string{f.env.marker(), "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmd.Start(); err != nil {
			_ = f.stop(context.Background(), p)
			return nil, fmt.Errorf("floor: start %s: %w", c, err)
		}
		p = append(p, cmd)
	}
	return p, nil
}

func (processFloor) stop(_ context.Context, fp floorPod) error {
	p := fp.(processFloorPod)
	var errs []error
	end := func(cmds ...*exec.Cmd) {
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGTERM)
		}
		for _, c := range cmds {
			// What is left of the group dies with its main process, as
			// under a shim: the shell's sleep, which it may have forked
			// after the group's SIGTERM, and so outlive the shell.
			if err := waitExited(c.Process.Pid); err != nil {
				errs = append(errs, err)
			}
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			// A SIGTERM exit is what is expected.
			var ee *exec.ExitError
			if err := c.Wait(); err != nil && !errors.As(err, &ee) {
				errs = append(errs, err)
			}
		}
	}
	if len(p) > 1 {
		end(p[1:]...)
	}
	if len(p) > 0 {
		end(p[0])
	}
	return errors.Join(errs...)
}

func (processFloor) close() {}

// waitExited waits until the child pid exited without reaping it: until
// it is reaped, its process group's ID cannot be given to another process.
func waitExited(pid int) error {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			return os.NewSyscallError("waitid", err)
		}
	}
}

// criCallTimeout bounds each CRI call of the floor.
const criCallTimeout = 2 * time.Minute

// criFloor makes the CRI calls podward makes for a start pod, directly
// over gRPC: RunPodSandbox; CreateContainer + StartContainer of the
// sidecar; then of the two regular containers, at the same time (they
// have no order among themselves). The sandbox is on the host's network,
// as podward's are by default.
type criFloor struct {
	env    podEnv
	runID  string
	logDir string
	image  string
	// busybox is the image of the pods' other containers (defer,
	// scale, churn), pulled with image so that no measured pod pulls.
	busybox string
	conn    *grpc.ClientConn
	rt      runtimeapi.RuntimeServiceClient
	img     runtimeapi.ImageServiceClient
}

type criFloorPod struct {
	sandbox    string
	containers []string // in startContainers' order
}

func newCRIFloor(ctx context.Context, endpoint string, env podEnv, runID, logDir string) (*criFloor, error) {
	if strings.HasPrefix(endpoint, "/") {
		endpoint = "unix://" + endpoint
	}
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("floor: connect to %s: %w", endpoint, err)
	}
	f := &criFloor{
		env: env, runID: runID, logDir: logDir,
		image:   "docker.io/library/" + env.image + ":latest",
		busybox: "docker.io/library/" + env.busybox + ":latest",
		conn:    conn, rt: runtimeapi.NewRuntimeServiceClient(conn), img: runtimeapi.NewImageServiceClient(conn),
	}
	if err := f.ensureImages(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return f, nil
}

// close removes what is left of the run's sandboxes (a run that failed
// midway), found by the run's label, and ends the connection.
func (f *criFloor) close() {
	defer f.conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), criCallTimeout)
	defer cancel()
	l, err := f.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{runLabel: f.runID},
	}})
	if err != nil {
		return
	}
	for _, sb := range l.Items {
		_, _ = f.rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sb.Id})
		_, _ = f.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sb.Id})
	}
}

// runLabel labels the floor's sandboxes with the run's ID.
const runLabel = "podward-bench-run"

// ensureImages pulls the run's images unless the runtime has them.
func (f *criFloor) ensureImages(ctx context.Context) error {
	for _, image := range []string{f.image, f.busybox} {
		if err := f.ensureImage(ctx, image); err != nil {
			return err
		}
	}
	return nil
}

func (f *criFloor) ensureImage(ctx context.Context, image string) error {
	ctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	defer cancel()
	spec := &runtimeapi.ImageSpec{Image: image}
	st, err := f.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: spec})
	if err != nil {
		return fmt.Errorf("floor: image status of %s: %w", image, err)
	}
	if st.GetImage() != nil {
		return nil
	}
	if _, err := f.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: spec}); err != nil {
		return fmt.Errorf("floor: pull %s: %w", image, err)
	}
	return nil
}

func (f *criFloor) namespaces() *runtimeapi.NamespaceOption {
	return &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_NODE,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
}

func (f *criFloor) sandboxConfig(name string) *runtimeapi.PodSandboxConfig {
	return &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "podward-bench-floor", Uid: f.runID + "-" + name},
		LogDirectory: filepath.Join(f.logDir, name),
		Labels:       map[string]string{runLabel: f.runID},
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: f.namespaces()},
		},
	}
}

func (f *criFloor) start(ctx context.Context, name string) (floorPod, error) {
	sc := f.sandboxConfig(name)
	if err := os.MkdirAll(sc.LogDirectory, 0o755); err != nil {
		return nil, err
	}
	cctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	sb, err := f.rt.RunPodSandbox(cctx, &runtimeapi.RunPodSandboxRequest{Config: sc})
	cancel()
	if err != nil {
		return nil, fmt.Errorf("floor: RunPodSandbox %s: %w", name, err)
	}
	p := &criFloorPod{sandbox: sb.PodSandboxId, containers: make([]string, len(startContainers))}
	run := func(i int) error {
		id, err := f.createStart(ctx, p.sandbox, sc, name, startContainers[i])
		p.containers[i] = id
		return err
	}
	err = run(0)
	if err == nil {
		errs := make([]error, len(startContainers))
		var wg sync.WaitGroup
		for i := 1; i < len(startContainers); i++ {
			wg.Go(func() { errs[i] = run(i) })
		}
		wg.Wait()
		err = errors.Join(errs...)
	}
	if err != nil {
		_ = f.stop(ctx, p)
		return nil, err
	}
	return p, nil
}

func (f *criFloor) createStart(ctx context.Context, sandbox string, sc *runtimeapi.PodSandboxConfig, pod, name string) (string, error) {
	cfg := &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
		Image:    &runtimeapi.ImageSpec{Image: f.image},
		Command:  f.env.stampScript(stampFile(pod, name)),
		Envs:     []*runtimeapi.KeyValue{{Key: f.env.markerName, Value: []byte(f.env.markerValue)}},
		Mounts:   []*runtimeapi.Mount{{ContainerPath: stampMount, HostPath: f.env.stampDir}},
		LogPath:  name + ".log",
		Linux: &runtimeapi.LinuxContainerConfig{
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: f.namespaces()},
		},
	}
	cctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	defer cancel()
	c, err := f.rt.CreateContainer(cctx, &runtimeapi.CreateContainerRequest{PodSandboxId: sandbox, Config: cfg, SandboxConfig: sc})
	if err != nil {
		return "", fmt.Errorf("floor: CreateContainer %s of %s: %w", name, pod, err)
	}
	if _, err := f.rt.StartContainer(cctx, &runtimeapi.StartContainerRequest{ContainerId: c.ContainerId}); err != nil {
		return c.ContainerId, fmt.Errorf("floor: StartContainer %s of %s: %w", name, pod, err)
	}
	return c.ContainerId, nil
}

func (f *criFloor) stop(ctx context.Context, fp floorPod) error {
	p := fp.(*criFloorPod)
	stop := func(id string) error {
		if id == "" {
			return nil
		}
		cctx, cancel := context.WithTimeout(ctx, criCallTimeout)
		defer cancel()
		_, err := f.rt.StopContainer(cctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 30})
		return err
	}
	errs := make([]error, len(p.containers)+2)
	var wg sync.WaitGroup
	for i := 1; i < len(p.containers); i++ {
		wg.Go(func() { errs[i] = stop(p.containers[i]) })
	}
	wg.Wait()
	errs[0] = stop(p.containers[0])
	cctx, cancel := context.WithTimeout(ctx, criCallTimeout)
	defer cancel()
	if _, err := f.rt.StopPodSandbox(cctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.sandbox}); err != nil {
		errs[len(p.containers)] = fmt.Errorf("floor: StopPodSandbox: %w", err)
	}
	if _, err := f.rt.RemovePodSandbox(cctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.sandbox}); err != nil {
		errs[len(p.containers)+1] = fmt.Errorf("floor: RemovePodSandbox: %w", err)
	}
	return errors.Join(errs...)
}

var (
	_ floor = processFloor{}
	_ floor = (*criFloor)(nil)
)
