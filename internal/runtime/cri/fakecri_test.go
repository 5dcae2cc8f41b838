package cri

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/crilog"
)

// fakeCRI is an in-process CRI runtime and image service keeping its
// sandboxes, containers and images in maps. Its containers' "processes"
// are state a test flips (exit); it records every call.
type fakeCRI struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	endpoint string

	mu         sync.Mutex
	nextID     int
	sandboxes  map[string]*fakeSandbox
	containers map[string]*fakeContainer
	images     map[string]*runtimeapi.Image // by name and by ID
	calls      map[string]int
	stops      []fakeStop
	execs      []*runtimeapi.ExecSyncRequest
	pulls      []*runtimeapi.PullImageRequest
	streams    int // event streams being served
	changed    chan struct{}

	// Knobs, set by a test before use (under mu once the runtime runs).
	conditions []*runtimeapi.RuntimeCondition
	createErr  error
	startErr   error
	// startHook runs inside StartContainer, before the container runs,
	// with mu held; it may write the log.
	startHook func(c *fakeContainer)
	// stopExitCode is the exit code of a container stopped with a
	// timeout; 0 means 143 (SIGTERM).
	stopExitCode int32
	// holdStops, when set, makes StopContainer wait until it is closed.
	holdStops chan struct{}
	execFn    func(req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error)
	pullFn    func(req *runtimeapi.PullImageRequest) error
	// events, when set, serves GetContainerEvents from it.
	events chan *runtimeapi.ContainerEventResponse
	// reopenErr fails ReopenContainerLog.
	reopenErr error
}

type fakeSandbox struct {
	id      string
	config  *runtimeapi.PodSandboxConfig
	handler string
	state   runtimeapi.PodSandboxState
	created int64
}

type fakeContainer struct {
	id        string
	sandboxID string
	config    *runtimeapi.ContainerConfig
	sbConfig  *runtimeapi.PodSandboxConfig // the SandboxConfig it was created with
	logPath   string
	state     runtimeapi.ContainerState
	created   int64
	started   int64
	finished  int64
	exitCode  int32
	reason    string
	message   string
}

type fakeStop struct {
	id      string
	timeout int64
}

// newFakeCRI serves a fake CRI runtime on a unix socket until the test
// ends.
func newFakeCRI(t testing.TB) *fakeCRI {
	t.Helper()
	// Not under t.TempDir(): a unix socket's path is limited to 108 bytes.
	dir, err := os.MkdirTemp("", "fakecri")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeCRI{
		endpoint:   "unix://" + sock,
		sandboxes:  map[string]*fakeSandbox{},
		containers: map[string]*fakeContainer{},
		images:     map[string]*runtimeapi.Image{},
		calls:      map[string]int{},
		changed:    make(chan struct{}),
		conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		},
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, f)
	runtimeapi.RegisterImageServiceServer(srv, f)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
		os.RemoveAll(dir)
	})
	return f
}

// record counts a call and wakes the waiters; f.mu must be held.
func (f *fakeCRI) record(method string) {
	f.calls[method]++
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakeCRI) callCount(method string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[method]
}

// waitFor waits until cond (called with f.mu held) is true, or fails the
// test at the deadline.
func (f *fakeCRI) waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		f.mu.Lock()
		ok := cond()
		ch := f.changed
		f.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (f *fakeCRI) newID(prefix string) string {
	f.nextID++
	return fmt.Sprintf("%s%04d", prefix, f.nextID)
}

// exit makes a running container exit.
func (f *fakeCRI) exit(t testing.TB, id string, code int32, reason, message string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil || c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("exit %s: not a running container", id)
	}
	c.state = runtimeapi.ContainerState_CONTAINER_EXITED
	c.finished = time.Now().UnixNano()
	c.exitCode, c.reason, c.message = code, reason, message
	f.record("(exit)")
}

// add puts a container there directly, as another user of the runtime
// (or an earlier podward) would have.
func (f *fakeCRI) add(name string, labels map[string]string, state runtimeapi.ContainerState) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := f.newID("x")
	f.containers[id] = &fakeContainer{
		id: id, state: state, created: time.Now().UnixNano(), started: time.Now().UnixNano(),
		config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Labels: labels},
	}
	f.record("(add)")
	return id
}

// container returns a copy of the container with this ID.
func (f *fakeCRI) container(id string) *fakeContainer {
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[id]
	if c == nil {
		return nil
	}
	cp := *c
	return &cp
}

func (f *fakeCRI) sandboxList() []*fakeSandbox {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fakeSandbox
	for _, s := range f.sandboxes {
		cp := *s
		out = append(out, &cp)
	}
	return out
}

func (f *fakeCRI) containerList() []*fakeContainer {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fakeContainer
	for _, c := range f.containers {
		cp := *c
		out = append(out, &cp)
	}
	return out
}

func matches(sel, labels map[string]string) bool {
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func (f *fakeCRI) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Version")
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fakecri", RuntimeVersion: "v0.0.1", RuntimeApiVersion: "v1"}, nil
}

func (f *fakeCRI) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("Status")
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: f.conditions}}, nil
}

func (f *fakeCRI) RunPodSandbox(_ context.Context, req *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RunPodSandbox")
	m := req.Config.GetMetadata()
	for _, s := range f.sandboxes {
		sm := s.config.Metadata
		if sm.Name == m.Name && sm.Namespace == m.Namespace && sm.Uid == m.Uid && sm.Attempt == m.Attempt {
			return nil, status.Errorf(codes.Unknown, "failed to reserve sandbox name %q", m.Name)
		}
	}
	id := f.newID("s")
	f.sandboxes[id] = &fakeSandbox{
		id: id, config: req.Config, handler: req.RuntimeHandler,
		state: runtimeapi.PodSandboxState_SANDBOX_READY, created: time.Now().UnixNano(),
	}
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: id}, nil
}

func (f *fakeCRI) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("StopPodSandbox")
	s := f.sandboxes[req.PodSandboxId]
	if s == nil {
		return nil, status.Errorf(codes.NotFound, "sandbox %s not found", req.PodSandboxId)
	}
	s.state = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	return &runtimeapi.StopPodSandboxResponse{}, nil
}

func (f *fakeCRI) RemovePodSandbox(_ context.Context, req *runtimeapi.RemovePodSandboxRequest) (*runtimeapi.RemovePodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemovePodSandbox")
	delete(f.sandboxes, req.PodSandboxId)
	return &runtimeapi.RemovePodSandboxResponse{}, nil
}

func (f *fakeCRI) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("PodSandboxStatus")
	s := f.sandboxes[req.PodSandboxId]
	if s == nil {
		return nil, status.Errorf(codes.NotFound, "sandbox %s not found", req.PodSandboxId)
	}
	// As containerd: a sandbox on the host's network has no IP of its
	// own reported; one on a pod network has an IPv4 and an IPv6.
	ns := s.config.GetLinux().GetSecurityContext().GetNamespaceOptions()
	network := &runtimeapi.PodSandboxNetworkStatus{}
	if ns.GetNetwork() != runtimeapi.NamespaceMode_NODE {
		network = &runtimeapi.PodSandboxNetworkStatus{Ip: "10.88.0.7", AdditionalIps: []*runtimeapi.PodIP{{Ip: "fd00::7"}}}
	}
	return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
		Id: s.id, Metadata: s.config.Metadata, State: s.state, CreatedAt: s.created,
		Network: network,
		Linux:   &runtimeapi.LinuxPodSandboxStatus{Namespaces: &runtimeapi.Namespace{Options: ns}},
		Labels:  s.config.Labels,
	}}, nil
}

func (f *fakeCRI) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListPodSandbox")
	resp := &runtimeapi.ListPodSandboxResponse{}
	flt := req.GetFilter()
	for _, s := range f.sandboxes {
		if flt.GetId() != "" && flt.Id != s.id ||
			flt.GetState() != nil && flt.State.State != s.state ||
			!matches(flt.GetLabelSelector(), s.config.Labels) {
			continue
		}
		resp.Items = append(resp.Items, &runtimeapi.PodSandbox{
			Id: s.id, Metadata: s.config.Metadata, State: s.state, CreatedAt: s.created,
			Labels: s.config.Labels, Annotations: s.config.Annotations, RuntimeHandler: s.handler,
		})
	}
	return resp, nil
}

func (f *fakeCRI) CreateContainer(_ context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("CreateContainer")
	if f.createErr != nil {
		return nil, f.createErr
	}
	s := f.sandboxes[req.PodSandboxId]
	if s == nil || s.state != runtimeapi.PodSandboxState_SANDBOX_READY {
		return nil, status.Errorf(codes.NotFound, "sandbox %s not ready", req.PodSandboxId)
	}
	m := req.Config.GetMetadata()
	for _, c := range f.containers {
		if c.sandboxID == req.PodSandboxId && c.config.Metadata.Name == m.Name && c.config.Metadata.Attempt == m.Attempt {
			return nil, status.Errorf(codes.Unknown, "failed to reserve container name %q", m.Name)
		}
	}
	id := f.newID("c")
	f.containers[id] = &fakeContainer{
		id: id, sandboxID: req.PodSandboxId, config: req.Config, sbConfig: req.GetSandboxConfig(),
		logPath: filepath.Join(req.GetSandboxConfig().GetLogDirectory(), req.Config.LogPath),
		state:   runtimeapi.ContainerState_CONTAINER_CREATED, created: time.Now().UnixNano(),
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

func (f *fakeCRI) StartContainer(_ context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("StartContainer")
	c := f.containers[req.ContainerId]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "container %s not found", req.ContainerId)
	}
	if f.startErr != nil {
		c.state = runtimeapi.ContainerState_CONTAINER_EXITED
		c.exitCode, c.reason = 128, "StartError"
		return nil, f.startErr
	}
	// Like containerd: the log file exists once the container started.
	if err := os.MkdirAll(filepath.Dir(c.logPath), 0o755); err != nil {
		return nil, err
	}
	lf, err := os.OpenFile(c.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		return nil, err
	}
	lf.Close()
	c.state = runtimeapi.ContainerState_CONTAINER_RUNNING
	c.started = time.Now().UnixNano()
	if f.startHook != nil {
		f.startHook(c)
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

func (f *fakeCRI) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	f.mu.Lock()
	f.record("StopContainer")
	f.stops = append(f.stops, fakeStop{id: req.ContainerId, timeout: req.Timeout})
	hold := f.holdStops
	f.mu.Unlock()
	if hold != nil && req.Timeout > 0 {
		select {
		case <-hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	c := f.containers[req.ContainerId]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "container %s not found", req.ContainerId)
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		c.state = runtimeapi.ContainerState_CONTAINER_EXITED
		c.finished = time.Now().UnixNano()
		c.exitCode, c.reason = 137, "Error"
		if req.Timeout > 0 {
			c.exitCode = 143
			if f.stopExitCode != 0 {
				c.exitCode = f.stopExitCode
			}
		}
		f.record("(stopped)")
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *fakeCRI) RemoveContainer(_ context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("RemoveContainer")
	delete(f.containers, req.ContainerId)
	return &runtimeapi.RemoveContainerResponse{}, nil
}

func (f *fakeCRI) UpdateContainerResources(_ context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("UpdateContainerResources")
	c := f.containers[req.ContainerId]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "container %q not found", req.ContainerId)
	}
	c.config.Linux.Resources = req.Linux
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

func (f *fakeCRI) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ListContainers")
	resp := &runtimeapi.ListContainersResponse{}
	flt := req.GetFilter()
	for _, c := range f.containers {
		if flt.GetId() != "" && flt.Id != c.id ||
			flt.GetState() != nil && flt.State.State != c.state ||
			flt.GetPodSandboxId() != "" && flt.PodSandboxId != c.sandboxID ||
			!matches(flt.GetLabelSelector(), c.config.Labels) {
			continue
		}
		resp.Containers = append(resp.Containers, &runtimeapi.Container{
			Id: c.id, PodSandboxId: c.sandboxID, Metadata: c.config.Metadata, Image: c.config.Image,
			State: c.state, CreatedAt: c.created, Labels: c.config.Labels, Annotations: c.config.Annotations,
		})
	}
	return resp, nil
}

func (f *fakeCRI) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ContainerStatus")
	c := f.containers[req.ContainerId]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "an error occurred when try to find container %q: not found", req.ContainerId)
	}
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{
		Id: c.id, Metadata: c.config.Metadata, State: c.state,
		CreatedAt: c.created, StartedAt: c.started, FinishedAt: c.finished,
		ExitCode: c.exitCode, Reason: c.reason, Message: c.message,
		Labels: c.config.Labels, Annotations: c.config.Annotations, LogPath: c.logPath,
		Mounts: c.config.Mounts,
	}}, nil
}

// ReopenContainerLog makes a new, empty log file at the container's log
// path, as containerd does; the "process" has no output to move over.
func (f *fakeCRI) ReopenContainerLog(_ context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ReopenContainerLog")
	c := f.containers[req.ContainerId]
	if c == nil {
		return nil, status.Errorf(codes.NotFound, "container %s not found", req.ContainerId)
	}
	if c.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return nil, status.Errorf(codes.FailedPrecondition, "container %s is not running", req.ContainerId)
	}
	if f.reopenErr != nil {
		return nil, f.reopenErr
	}
	lf, err := os.OpenFile(c.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "reopen %s: %v", c.logPath, err)
	}
	lf.Close()
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

func (f *fakeCRI) ExecSync(_ context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	f.mu.Lock()
	f.record("ExecSync")
	f.execs = append(f.execs, req)
	fn := f.execFn
	f.mu.Unlock()
	if fn == nil {
		return &runtimeapi.ExecSyncResponse{}, nil
	}
	return fn(req)
}

func (f *fakeCRI) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	f.mu.Lock()
	f.record("GetContainerEvents")
	events := f.events
	f.mu.Unlock()
	if events == nil {
		return status.Error(codes.Unimplemented, "method GetContainerEvents not implemented")
	}
	f.mu.Lock()
	f.streams++
	f.record("(stream)")
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.streams--
		f.mu.Unlock()
	}()
	for {
		select {
		case ev := <-events:
			if err := stream.Send(ev); err != nil {
				return err
			}
		case <-stream.Context().Done():
			return stream.Context().Err()
		}
	}
}

func (f *fakeCRI) ImageStatus(_ context.Context, req *runtimeapi.ImageStatusRequest) (*runtimeapi.ImageStatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record("ImageStatus")
	return &runtimeapi.ImageStatusResponse{Image: f.images[req.GetImage().GetImage()]}, nil
}

func (f *fakeCRI) PullImage(_ context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	f.mu.Lock()
	f.record("PullImage")
	f.pulls = append(f.pulls, req)
	fn := f.pullFn
	f.mu.Unlock()
	if fn != nil {
		if err := fn(req); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	name := req.Image.Image
	img := &runtimeapi.Image{Id: "sha256:" + fmt.Sprintf("%064x", len(name)), RepoTags: []string{name}, Size: 4242}
	f.images[name] = img
	f.images[img.Id] = img
	return &runtimeapi.PullImageResponse{ImageRef: img.Id}, nil
}

// writeLog appends CRI log records for lines to a container's log, as the
// runtime would.
func writeLog(t testing.TB, path string, stream string, lines ...string) {
	t.Helper()
	lf, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	var b []byte
	for _, l := range lines {
		b = crilog.AppendRecord(b, crilog.Record{Time: time.Now(), Stream: stream, Content: []byte(l)})
	}
	if _, err := lf.Write(b); err != nil {
		t.Fatal(err)
	}
}
