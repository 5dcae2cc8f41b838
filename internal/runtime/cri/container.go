package cri

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podspec"
)

// execOutputLimit caps the output Exec returns, as the process runtime's
// and the kubelet's exec probes do.
const execOutputLimit = 10 * 1024

// StartContainer creates and starts an instance of the container ref of
// pod in the pod's sandbox, from its image, which must be present (the pod
// worker pulls it first). Its log is LogPath(pod.UID, ref.Name, attempt).
// It returns once the container runs; from then on it lives on its own,
// whatever happens to ctx, to the Runtime or to the agent, and its exit is
// reported on Events. With ctx done before the start, nothing runs and
// ctx.Err() is returned; a container created but not started is removed
// again. PreparePod must have been called for the pod (a sandbox that died
// since is replaced). The runtime keeps pod, which the caller must not
// change any more.
func (r *Runtime) StartContainer(ctx context.Context, pod *model.Pod, ref model.ContainerRef, attempt int) (runtime.Container, error) {
	if err := ctx.Err(); err != nil {
		return runtime.Container{}, err
	}
	if r.isClosed() {
		return runtime.Container{}, errClosed
	}
	cont, err := r.start(ctx, pod, ref, attempt)
	if err != nil {
		return runtime.Container{}, fmt.Errorf("start container %q of pod %s: %w", ref.Name, pod.Key(), err)
	}
	return cont, nil
}

func (r *Runtime) start(ctx context.Context, pod *model.Pod, ref model.ContainerRef, attempt int) (runtime.Container, error) {
	if err := hostfs.CheckUID(pod.UID); err != nil {
		return runtime.Container{}, err
	}
	c := pod.Container(ref)
	if err := r.checkContainer(pod, ref, c); err != nil {
		return runtime.Container{}, err
	}
	sb, err := r.ensureSandbox(ctx, pod)
	if err != nil {
		return runtime.Container{}, err
	}
	cfg, err := r.containerConfig(ctx, pod, ref, c, attempt)
	if err != nil {
		return runtime.Container{}, err
	}
	hosts, err := r.hostsMount(pod, c)
	if err != nil {
		return runtime.Container{}, err
	}
	if hosts != nil {
		cfg.Mounts = append(cfg.Mounts, hosts)
	}
	if err := r.shareTarget(ctx, pod, ref, cfg); err != nil {
		return runtime.Container{}, err
	}
	logPath := r.LogPath(pod.UID, c.Name, attempt)
	offset, err := hostfs.PrepareLog(logPath) // where Output begins
	if err != nil {
		return runtime.Container{}, err
	}
	if err := ctx.Err(); err != nil {
		return runtime.Container{}, err
	}
	id, err := r.create(ctx, pod, sb, cfg)
	if err != nil {
		return runtime.Container{}, err
	}
	in := &instance{
		id: id, podUID: pod.UID, container: c.Name, attempt: attempt, pod: pod, logPath: logPath,
		state: stateCreated,
	}
	r.mu.Lock()
	r.tracked[id] = in
	r.mu.Unlock()

	// Once asked, the start is seen through: a StartContainer cancelled
	// half-way leaves containerd's container stuck "starting", neither
	// running nor removable. A kill that comes meanwhile finds a running
	// instance, which the pod worker then stops.
	err = ctx.Err()
	ctx = context.WithoutCancel(ctx)
	if err == nil {
		cctx, cancel := r.call(ctx)
		_, err = r.rt.StartContainer(cctx, &runtimeapi.StartContainerRequest{ContainerId: id})
		cancel()
	}
	if err != nil {
		r.dropUnstarted(ctx, in)
		return runtime.Container{}, err
	}
	startedAt := r.startedAt(ctx, in)
	r.running(in, offset)
	r.pokeRelist()
	r.log.Debug("container started", "pod", pod.Key(), "podUID", pod.UID, "container", c.Name, "id", id, "attempt", attempt)
	r.goTracked(func() { r.removeOldInstances(pod, c.Name, attempt) })
	return runtime.Container{ID: id, StartedAt: startedAt, LogPath: logPath}, nil
}

// dropUnstarted removes an instance whose StartContainer failed: whether or
// not the runtime started it, nobody will wait for it. The relist leaves it
// alone meanwhile (stateRemoving); a failed removal is logged, not returned.
func (r *Runtime) dropUnstarted(ctx context.Context, in *instance) {
	r.mu.Lock()
	in.state = stateRemoving
	r.mu.Unlock()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.callTimeout)
	if err := r.removeContainer(rctx, in.id); err != nil {
		r.log.Warn("remove a container that did not start", "pod", in.pod.Key(), "podUID", in.podUID, "container", in.container, "id", in.id, "err", err)
	}
	cancel()
	r.mu.Lock()
	delete(r.tracked, in.id)
	r.mu.Unlock()
}

// startedAt is when the runtime says the instance started, or now when it
// does not say.
func (r *Runtime) startedAt(ctx context.Context, in *instance) time.Time {
	cctx, cancel := r.call(ctx)
	st, err := r.rt.ContainerStatus(cctx, &runtimeapi.ContainerStatusRequest{ContainerId: in.id})
	cancel()
	if err == nil && st.GetStatus().GetStartedAt() > 0 {
		return time.Unix(0, st.Status.StartedAt)
	}
	r.log.Warn("read the start time of a container", "pod", in.pod.Key(), "podUID", in.podUID, "container", in.container, "id", in.id, "err", err)
	return r.clock.Now()
}

// create creates the container. When the name is taken (containerd names
// a container after its pod and attempt), it is by a leftover of an
// earlier start of the same attempt that never ran or has exited: it is
// removed and the creation tried once more.
func (r *Runtime) create(ctx context.Context, pod *model.Pod, sb sandboxRef, cfg *runtimeapi.ContainerConfig) (string, error) {
	req := &runtimeapi.CreateContainerRequest{PodSandboxId: sb.id, Config: cfg, SandboxConfig: sb.config}
	for try := 0; ; try++ {
		cctx, cancel := r.call(ctx)
		resp, err := r.rt.CreateContainer(cctx, req)
		cancel()
		if err == nil {
			return resp.ContainerId, nil
		}
		if try > 0 || ctx.Err() != nil {
			r.forgetSandbox(pod.UID)
			return "", fmt.Errorf("create container: %w", err)
		}
		removed, lerr := r.removeLeftovers(ctx, cfg.Labels)
		if lerr != nil || removed == 0 {
			// Not a name conflict; the sandbox may have gone.
			r.forgetSandbox(pod.UID)
			return "", fmt.Errorf("create container: %w", err)
		}
	}
}

// removeLeftovers removes the instances with exactly these labels (the
// same pod, container and attempt) that do not run. It returns how many
// it removed.
func (r *Runtime) removeLeftovers(ctx context.Context, labels map[string]string) (int, error) {
	sel := r.selector(LabelPodUID, labels[LabelPodUID], LabelContainerName, labels[LabelContainerName], LabelAttempt, labels[LabelAttempt])
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{LabelSelector: sel}})
	cancel()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, c := range resp.Containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING || r.isTracked(c.Id) {
			continue
		}
		if err := r.removeContainer(ctx, c.Id); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// removeOldInstances removes the exited instances of a container older
// than the one before attempt: the pod worker needs the last exit (for
// lastState and restarts), the runtime need not keep a crash loop's
// history. Their logs stay.
func (r *Runtime) removeOldInstances(pod *model.Pod, container string, attempt int) {
	if attempt < 2 {
		return
	}
	ctx := r.ctx
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED},
		LabelSelector: r.selector(LabelPodUID, string(pod.UID), LabelContainerName, container),
	}})
	cancel()
	if err != nil {
		r.log.Debug("list old instances", "pod", pod.Key(), "podUID", pod.UID, "container", container, "err", err)
		return
	}
	// The message files go first: their exits were read long ago, and a
	// file removed after its container would be the last thing this does,
	// which nothing (a test waiting on the runtime's calls) could see.
	if err := r.removeOldMessageFiles(pod.UID, container, attempt-1); err != nil {
		r.log.Debug("remove old termination message files", "pod", pod.Key(), "podUID", pod.UID, "container", container, "err", err)
	}
	for _, c := range resp.Containers {
		if identify(c.Labels, c.Metadata).attempt >= attempt-1 || r.isTracked(c.Id) {
			continue
		}
		if err := r.removeContainer(ctx, c.Id); err != nil {
			r.log.Debug("remove an old instance", "pod", pod.Key(), "podUID", pod.UID, "container", container, "id", c.Id, "err", err)
		}
	}
}

func (r *Runtime) isTracked(id string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.tracked[id]
	return ok
}

// containerConfig is the CRI config of an instance of c.
func (r *Runtime) containerConfig(ctx context.Context, pod *model.Pod, ref model.ContainerRef, c *v1.Container, attempt int) (*runtimeapi.ContainerConfig, error) {
	image, err := NormalizeImage(c.Image)
	if err != nil {
		return nil, err
	}
	envs, vars, err := r.containerEnv(ctx, pod, c, ref.SpecPath())
	if err != nil {
		return nil, err
	}
	mounts, err := r.containerMounts(pod, c, vars)
	if err != nil {
		return nil, err
	}
	sc, err := r.securityContext(ctx, pod, c, image)
	if err != nil {
		return nil, err
	}
	annotations := graceAnnotations(pod)
	annotations[AnnotationRestartCount] = strconv.Itoa(attempt)
	msgMount, msgAnnotations, err := r.terminationMount(pod, c, attempt)
	if err != nil {
		return nil, fmt.Errorf("termination message file: %w", err)
	}
	if msgMount != nil {
		mounts = append(mounts, msgMount)
		maps.Copy(annotations, msgAnnotations)
	}
	return &runtimeapi.ContainerConfig{
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Name, Attempt: uint32(attempt)},
		Image:       &runtimeapi.ImageSpec{Image: image, UserSpecifiedImage: c.Image},
		Command:     vars.ExpandAll(c.Command),
		Args:        vars.ExpandAll(c.Args),
		WorkingDir:  c.WorkingDir,
		Envs:        envs,
		Mounts:      mounts,
		Labels:      r.containerLabels(pod, ref, attempt),
		Annotations: annotations,
		// Relative to the sandbox's log directory.
		LogPath:   filepath.Join(c.Name, strconv.Itoa(attempt)+".log"),
		Stdin:     c.Stdin,
		StdinOnce: c.StdinOnce,
		Tty:       c.TTY,
		Linux: &runtimeapi.LinuxContainerConfig{
			Resources:       r.resources(pod, c),
			SecurityContext: sc,
		},
		StopSignal: stopSignal(c),
	}, nil
}

// securityContext maps the pod's and the container's security settings
// (the container's win) to CRI's, and enforces runAsNonRoot as the kubelet
// does, against the image's user when no runAsUser is set.
func (r *Runtime) securityContext(ctx context.Context, pod *model.Pod, c *v1.Container, image string) (*runtimeapi.LinuxContainerSecurityContext, error) {
	s := podspec.EffectiveSecurity(&pod.Spec, c)
	sc := &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions:   r.namespaces(pod),
		SupplementalGroups: s.SupplementalGroups,
		Privileged:         s.Privileged,
		ReadonlyRootfs:     s.ReadOnlyRootFilesystem,
		NoNewPrivs:         s.NoNewPrivs,
		Seccomp:            seccompProfile(s.Seccomp),
		SelinuxOptions:     seLinuxOptions(s.SELinux),
	}
	if s.RunAsUser != nil {
		sc.RunAsUser = &runtimeapi.Int64Value{Value: *s.RunAsUser}
	}
	if s.RunAsGroup != nil {
		sc.RunAsGroup = &runtimeapi.Int64Value{Value: *s.RunAsGroup}
	}
	if err := r.verifyNonRoot(ctx, pod, c, s, image); err != nil {
		return nil, err
	}
	if !s.Privileged {
		// As the kubelet sends them for procMount Default (Check refuses
		// the others): containerd masks what the request lists, nothing
		// when it lists nothing.
		sc.MaskedPaths, sc.ReadonlyPaths = podspec.MaskedPaths, podspec.ReadonlyPaths
	}
	if caps := s.Capabilities; caps != nil {
		sc.Capabilities = &runtimeapi.Capability{}
		for _, c := range caps.Add {
			sc.Capabilities.AddCapabilities = append(sc.Capabilities.AddCapabilities, string(c))
		}
		for _, c := range caps.Drop {
			sc.Capabilities.DropCapabilities = append(sc.Capabilities.DropCapabilities, string(c))
		}
	}
	return sc, nil
}

// seLinuxOptions maps SELinux options to CRI's, as the kubelet passes them
// (kuberuntime/security_context.go, convertToRuntimeSELinuxOption); nil
// leaves the runtime's default label. The runtime applies them where
// SELinux is enabled (containerd with enable_selinux), and ignores them
// elsewhere.
func seLinuxOptions(o *v1.SELinuxOptions) *runtimeapi.SELinuxOption {
	if o == nil {
		return nil
	}
	return &runtimeapi.SELinuxOption{User: o.User, Role: o.Role, Type: o.Type, Level: o.Level}
}

// verifyNonRoot refuses to run c as root when runAsNonRoot asks it not
// to, as the kubelet does (podspec.VerifyNonRoot): with runAsUser 0, or
// without runAsUser when the image's user is root (or cannot be told).
func (r *Runtime) verifyNonRoot(ctx context.Context, pod *model.Pod, c *v1.Container, s podspec.Security, image string) error {
	if !s.RunAsNonRoot || s.RunAsUser != nil {
		return podspec.VerifyNonRoot(pod, c, s, nil, "")
	}
	cctx, cancel := r.call(ctx)
	resp, err := r.img.ImageStatus(cctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: image}})
	cancel()
	if err != nil {
		return fmt.Errorf("image status of %s (to verify runAsNonRoot): %w", image, err)
	}
	img := resp.GetImage()
	if img == nil {
		return fmt.Errorf("image %s is not present (to verify runAsNonRoot)", image)
	}
	var uid *int64
	if img.Uid != nil {
		uid = &img.Uid.Value
	}
	return podspec.VerifyNonRoot(pod, c, s, uid, img.Username)
}

// seccompProfile maps a seccomp profile; nil (unset) leaves the runtime's
// default, unconfined, as the kubelet does without SeccompDefault. Check
// rejects Localhost.
func seccompProfile(p *v1.SeccompProfile) *runtimeapi.SecurityProfile {
	if p == nil {
		return nil
	}
	switch p.Type {
	case v1.SeccompProfileTypeRuntimeDefault:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault}
	case v1.SeccompProfileTypeUnconfined:
		return &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
	}
	return nil
}

// resources are the container's cgroup settings as the kubelet passes
// them (pkg/kubelet/kuberuntime/kuberuntime_container_linux.go,
// generateLinuxContainerResources): shares from the cpu request (at
// least 2), a CFS quota from the cpu limit over a 100 ms period, the
// memory limit (a pod-level limit for a container without its own), and
// the QoS policy's oom_score_adj; on cgroup v2 the
// OOM killer kills the whole container (memory.oom.group, the kubelet's
// default there).
func (r *Runtime) resources(pod *model.Pod, c *v1.Container) *runtimeapi.LinuxContainerResources {
	res := linuxResources(podspec.ContainerResources(pod, c))
	res.OomScoreAdj = int64(podspec.OOMScoreAdj(pod, c, r.memoryCapacity))
	if r.cgroupV2 {
		res.Unified = map[string]string{"memory.oom.group": "1"}
	}
	return res
}

// linuxResources is res in the CRI's terms.
func linuxResources(res podspec.Resources) *runtimeapi.LinuxContainerResources {
	return &runtimeapi.LinuxContainerResources{
		CpuShares:          res.CPUShares,
		CpuPeriod:          podspec.CPUPeriod,
		CpuQuota:           res.CPUQuota,
		MemoryLimitInBytes: res.Memory,
	}
}

// stopSignal is the container's lifecycle.stopSignal in CRI's terms, set at
// creation: a runtime that knows the field stops the container with it
// (containerd 1.6 does not: it uses the image's STOPSIGNAL, else SIGTERM).
// No stopSignal is the runtime's default.
func stopSignal(c *v1.Container) runtimeapi.Signal {
	if c.Lifecycle == nil || c.Lifecycle.StopSignal == nil {
		return runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT
	}
	return criSignal(*c.Lifecycle.StopSignal)
}

// criSignalName turns a Kubernetes signal name into its CRI enum name:
// "SIGRTMIN+1" is SIGNAL_SIGRTMINPLUS1, "SIGRTMAX-2" SIGNAL_SIGRTMAXMINUS2.
var criSignalName = strings.NewReplacer("+", "PLUS", "-", "MINUS")

// criSignal is the CRI's enum value of a stop signal name Validate
// accepted (model.LinuxSignals, all of which the CRI lists, as the
// kubelet's buildContainerConfigLifecycle maps them); Validate refuses any
// other name, which would be the runtime's default.
func criSignal(name v1.Signal) runtimeapi.Signal {
	return runtimeapi.Signal(runtimeapi.Signal_value["SIGNAL_"+criSignalName.Replace(string(name))])
}

// Signal sends SIGKILL to a container instance: the CRI runtime stops it
// at once (StopContainer with timeout 0) and the call returns once it is
// dead. The CRI has no way to send any other signal: those are
// runtime.ErrUnsupported (the pod worker stops containers gracefully with
// StopContainer). An instance that already exited is not an error; an ID
// the runtime does not have, or that is not this podward's, is
// runtime.ErrNotFound.
func (r *Runtime) Signal(ctx context.Context, id string, sig syscall.Signal) error {
	if sig != syscall.SIGKILL {
		return fmt.Errorf("signal container %s with %v: %w: the CRI can only stop a container (its stop signal, then SIGKILL) or kill it", id, sig, runtime.ErrUnsupported)
	}
	exited, err := r.own(ctx, id)
	if err != nil || exited {
		return err
	}
	cctx, cancel := r.call(ctx)
	_, err = r.rt.StopContainer(cctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 0})
	cancel()
	r.pokeRelist()
	if err != nil {
		return fmt.Errorf("kill container %s: %w", id, notFound(err))
	}
	return nil
}

// StopContainer stops a container instance gracefully: the CRI runtime
// sends its stop signal (the one set at creation from lifecycle.stopSignal,
// where the runtime knows that field; else the image's STOPSIGNAL, else
// SIGTERM) and SIGKILL once timeout (rounded up to whole seconds) has
// passed. sig only matters as SIGKILL, which stops it at once. It returns
// once the request is issued; the exit comes on Events. The request lives
// on its own, bounded by the timeout, until Close (see there). An instance
// that already exited is not an error; an unknown ID is
// runtime.ErrNotFound.
func (r *Runtime) StopContainer(ctx context.Context, id string, sig syscall.Signal, timeout time.Duration) error {
	exited, err := r.own(ctx, id)
	if err != nil || exited {
		return err
	}
	secs := timeoutSeconds(timeout)
	if sig == syscall.SIGKILL {
		secs = 0
	}
	issued := r.goTracked(func() {
		cctx, cancel := context.WithTimeout(r.ctx, time.Duration(secs)*time.Second+r.callTimeout)
		_, err := r.rt.StopContainer(cctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: secs})
		cancel()
		if err != nil && r.ctx.Err() == nil && !isNotFound(err) {
			r.log.Error("stop container", "id", id, "timeout", secs, "err", err)
		}
		r.pokeRelist()
	})
	if !issued {
		return errClosed
	}
	return nil
}

// execDeadlineSlack is how close to its deadline an exec's failure counts
// as the deadline's.
const execDeadlineSlack = 100 * time.Millisecond

// timeoutSeconds is a stop timeout in CRI's whole seconds, rounded up: a
// container never gets less than it was promised.
func timeoutSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}

// own checks that id is a container of this Runtime, and says whether it
// already exited.
func (r *Runtime) own(ctx context.Context, id string) (exited bool, err error) {
	if r.isTracked(id) {
		return false, nil
	}
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ContainerStatus(cctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	cancel()
	if err != nil {
		return false, fmt.Errorf("container %s: %w", id, notFound(err))
	}
	st := resp.GetStatus()
	if st.GetLabels()[LabelManaged] != "true" || st.GetLabels()[LabelRoot] != r.rootLabel {
		return false, fmt.Errorf("container %s is not this podward's: %w", id, runtime.ErrNotFound)
	}
	return st.GetState() == runtimeapi.ContainerState_CONTAINER_EXITED, nil
}

// Exec runs cmd in the running instance of container ref of pod (the one
// with the highest attempt, found by its labels) with ExecSync, as written,
// without $(VAR) expansion. It returns the stdout then the stderr (the
// first 10 KiB) and the exit code. ctx bounds it: its deadline becomes
// ExecSync's timeout (whole seconds, rounded up), and when ctx ends first
// the runtime kills the command and the error wraps ctx.Err(). So does the
// agent's death, which ends the call: containerd kills an exec whose call
// ended. No running instance is an error.
func (r *Runtime) Exec(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string) ([]byte, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	if len(cmd) == 0 {
		return nil, 0, fmt.Errorf("exec in container %q of pod %s: empty command", ref.Name, pod.Key())
	}
	out, code, err := r.exec(ctx, pod, ref, cmd)
	if err != nil {
		return out, code, fmt.Errorf("exec %q in container %q of pod %s: %w", cmd[0], ref.Name, pod.Key(), err)
	}
	return out, code, nil
}

func (r *Runtime) exec(ctx context.Context, pod *model.Pod, ref model.ContainerRef, cmd []string) ([]byte, int, error) {
	id, err := r.runningInstance(ctx, pod, ref)
	if err != nil {
		return nil, 0, err
	}
	var timeout int64
	if dl, ok := ctx.Deadline(); ok {
		timeout = max(timeoutSeconds(time.Until(dl)), 1)
	}
	res, err := r.rt.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: timeout})
	if err != nil {
		if ctx.Err() != nil {
			return nil, 0, fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		// The runtime's copy of the deadline (gRPC passes it on) can run
		// out a moment before ours: its "context deadline exceeded"
		// comes back as an Unknown error while ctx still looks alive.
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < execDeadlineSlack {
			return nil, 0, fmt.Errorf("%w (%v)", context.DeadlineExceeded, err)
		}
		return nil, 0, err
	}
	out := make([]byte, 0, min(len(res.Stdout)+len(res.Stderr), execOutputLimit))
	out = append(out, res.Stdout[:min(len(res.Stdout), execOutputLimit)]...)
	out = append(out, res.Stderr[:min(len(res.Stderr), execOutputLimit-len(out))]...)
	return out, int(res.ExitCode), nil
}

// runningInstance is the ID of the running instance of container ref of pod
// (the one with the highest attempt, found by its labels); an error
// wrapping runtime.ErrNotFound when none runs.
func (r *Runtime) runningInstance(ctx context.Context, pod *model.Pod, ref model.ContainerRef) (string, error) {
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: r.selector(LabelPodUID, string(pod.UID), LabelContainerName, ref.Name),
	}})
	cancel()
	if err != nil {
		return "", fmt.Errorf("find the running instance: %w", err)
	}
	id, best := "", -1
	for _, c := range resp.Containers {
		if a := identify(c.Labels, c.Metadata).attempt; a > best {
			id, best = c.Id, a
		}
	}
	if id == "" {
		return "", fmt.Errorf("the container is not running: %w", runtime.ErrNotFound)
	}
	return id, nil
}
