package process

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podnet"
	"github.com/podward/podward/internal/runtime/podspec"
	"github.com/podward/podward/internal/runtime/process/launch"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// containerEnviron is a container's environment (containerEnv): its
// variables as "NAME=value", and those of its spec by name.
type containerEnviron struct {
	env  []string
	vars podspec.Vars
}

// prepare builds the launch spec of c for pod with the environment ev;
// argv, when not nil, replaces the container's command (for Exec).
// termFile, when not "", is the instance's termination-message file,
// mounted at c's terminationMessagePath. It also returns the created
// mountpoints the pod counts as a user of.
func (r *Runtime) prepare(pod *model.Pod, ref model.ContainerRef, c *v1.Container, ev containerEnviron, argv []string, termFile string) (launch.Spec, []shim.Mountpoint, error) {
	if err := hostfs.CheckUID(pod.UID); err != nil {
		return launch.Spec{}, nil, err
	}
	if err := r.checkContainer(pod, ref, c); err != nil {
		return launch.Spec{}, nil, err
	}
	env, vars := ev.env, ev.vars
	if argv == nil {
		argv = append(vars.ExpandAll(c.Command), vars.ExpandAll(c.Args)...)
	}
	dir := c.WorkingDir
	if dir == "" {
		dir = "/"
	}
	mounts, created, err := r.containerMounts(pod, c, vars, termFile)
	if err != nil {
		return launch.Spec{}, nil, err
	}
	sec, err := r.security(pod, c)
	if err != nil {
		return launch.Spec{}, nil, err
	}
	spec := launch.Spec{Argv: argv, Env: env, Dir: dir, Mounts: mounts, Helper: r.shimBinary, Security: sec}
	if r.uts && !pod.Spec.HostNetwork {
		// The pod's host name, as its sandbox's UTS namespace has it on a
		// CRI runtime; the host's on the host network, as there.
		if spec.Hostname, err = podnet.Hostname(pod, r.dns.ClusterDomain); err != nil {
			return launch.Spec{}, nil, err
		}
	}
	return spec, created, nil
}

// terminationFile is the termination-message file of an instance of c
// whose state directory is dir: "" when c has no terminationMessagePath,
// or when podward is not root and so cannot give the container the private
// mount namespace the file is mounted in (its message then comes only from
// the log, with FallbackToLogsOnError).
func (r *Runtime) terminationFile(c *v1.Container, dir string) string {
	if podspec.TerminationMessagePath(c) == "" || r.euid() != 0 {
		return ""
	}
	return filepath.Join(dir, shim.TerminationLogFile)
}

// StartContainer starts an instance of the container ref of pod under a
// shim of its own: its log is LogPath(pod.UID, ref.Name, attempt)
// (appended to if it exists). It returns once the process runs its
// command; from then on the instance lives on its own, whatever happens to
// ctx, to the Runtime or to the agent, and its exit is reported on Events.
// If ctx ends before that, nothing runs, nothing is left but possibly an
// empty log, and ctx.Err() is returned. PreparePod must have been called
// for the pod. The runtime keeps pod, which the caller must not change any
// more.
func (r *Runtime) StartContainer(ctx context.Context, pod *model.Pod, ref model.ContainerRef, attempt int) (runtime.Container, error) {
	if err := ctx.Err(); err != nil {
		return runtime.Container{}, err
	}
	if r.isClosed() {
		return runtime.Container{}, errClosed
	}
	c := pod.Container(ref)
	cont, err := r.start(ctx, pod, ref, c, attempt)
	if err != nil {
		return runtime.Container{}, fmt.Errorf("start container %q of pod %s: %w", ref.Name, pod.Key(), err)
	}
	return cont, nil
}

// ConcurrentStarts says yes: each start has its own instance directory
// and shim, and what a pod's starts share (its order and instances
// directories, its mountpoints) is made idempotently or under a lock.
func (r *Runtime) ConcurrentStarts() bool { return true }

func (r *Runtime) start(ctx context.Context, pod *model.Pod, ref model.ContainerRef, c *v1.Container, attempt int) (runtime.Container, error) {
	id, err := newID()
	if err != nil {
		return runtime.Container{}, err
	}
	dir := r.instanceDir(pod.UID, id)
	join, err := r.targetOf(pod, ref)
	if err != nil {
		return runtime.Container{}, err
	}
	proc, created, term, err := r.instanceLaunch(ctx, pod, ref, c, dir, join != nil)
	if err != nil {
		return runtime.Container{}, err
	}
	logPath := r.LogPath(pod.UID, c.Name, attempt)
	offset, err := hostfs.PrepareLog(logPath) // where Output begins
	if err != nil {
		return runtime.Container{}, err
	}
	if err := os.MkdirAll(r.instancesDir(pod.UID), 0o750); err != nil {
		return runtime.Container{}, err
	}
	order, err := r.stopOrder(pod, ref, c)
	if err != nil {
		return runtime.Container{}, err
	}
	spec := &shim.Spec{
		ID:           id,
		PodUID:       string(pod.UID),
		PodName:      pod.Name,
		PodNamespace: pod.Namespace,
		Container:    c.Name,
		Attempt:      attempt,
		Process:      proc,
		LogPath:      logPath,
		LogRotation:  r.logRotation,
		Mountpoints:  created,
		Join:         join,

		TerminationMessage: term,
		Order:              order,
		Stdin:              c.Stdin,
		StdinOnce:          c.StdinOnce,
		TTY:                c.TTY,
	}
	if r.tethered {
		spec.Tether = os.Getpid()
	}
	if r.cgroups != nil {
		if err := r.cgroups.prepareInstance(pod, c, id, spec); err != nil {
			return runtime.Container{}, err
		}
	}
	// Whatever fails from here on, the instance never was.
	gone := func() { r.unstarted(dir, spec) }
	if err := shim.Create(dir, spec); err != nil {
		gone()
		return runtime.Container{}, fmt.Errorf("instance directory: %w", err)
	}
	if term.File != "" {
		if err := hostfs.CreateMessageFile(term.File); err != nil {
			gone()
			return runtime.Container{}, fmt.Errorf("termination message file: %w", err)
		}
	}
	shimProc, started, err := r.startShim(ctx, dir)
	if err != nil {
		// Nothing of the instance runs: it never was.
		gone()
		return runtime.Container{}, err
	}
	in := newInstance(spec, dir, pod, started)
	r.log.Debug("container started", "pod", pod.Key(), "podUID", pod.UID, "container", c.Name, "id", id,
		"pid", started.Process.Pid, "shimPid", shimProc.Ident().Pid, "attempt", attempt)
	r.track(in, shimProc, offset)
	return runtime.Container{ID: id, StartedAt: started.StartedAt, LogPath: logPath}, nil
}

// instanceLaunch is the launch spec of an instance of c whose state
// directory is dir (prepare, with the environment it starts with, which
// its shim keeps for the execs in it), its created mountpoints and its
// termination message. A container that joins another's namespaces
// (joins) gets no termination-message file: mounted in the target's
// namespace, it would be the target's, so its message comes from its log
// alone. A missing ConfigMap or Secret is a runtime.ContainerConfigError.
func (r *Runtime) instanceLaunch(ctx context.Context, pod *model.Pod, ref model.ContainerRef, c *v1.Container, dir string, joins bool) (launch.Spec, []shim.Mountpoint, podspec.TerminationMessage, error) {
	termFile := ""
	if !joins {
		termFile = r.terminationFile(c, dir)
	}
	term := podspec.NewTerminationMessage(pod, c, termFile)
	env, vars, err := r.containerEnv(ctx, pod, c, ref.SpecPath())
	if err != nil {
		return launch.Spec{}, nil, term, err
	}
	proc, created, err := r.prepare(pod, ref, c, containerEnviron{env, vars}, nil, term.File)
	return proc, created, term, err
}

// unstarted removes what there is of the instance of spec in dir that did
// not start: its directory and its cgroup.
func (r *Runtime) unstarted(dir string, spec *shim.Spec) {
	if err := os.RemoveAll(dir); err != nil {
		r.log.Warn("remove the directory of an instance that did not start", "dir", dir, "err", err)
	}
	if cg := spec.Process.Cgroup; cg != nil {
		if err := errors.Join(cg.Kill(), cg.Remove()); err != nil {
			r.log.Warn("remove the cgroup of an instance that did not start", "dir", dir, "err", err)
		}
	}
}

// shimRoles are the model's roles as the shims know them.
var shimRoles = map[model.Role]shim.Role{
	model.RoleInit: shim.RoleInit, model.RoleSidecar: shim.RoleSidecar,
	model.RoleMain: shim.RoleMain, model.RoleDefer: shim.RoleDefer,
	// An ephemeral container stops with the regular containers.
	model.RoleEphemeral: shim.RoleMain,
}

// stopOrder is the place of c (ref) in its pod's stop order, for its shim
// to keep when it is told to stop while no agent runs (shim.Order). It
// makes the pod's order directory and, since an agent now starts one of
// the pod's containers, forgets the pod's last such stop.
func (r *Runtime) stopOrder(pod *model.Pod, ref model.ContainerRef, c *v1.Container) (*shim.Order, error) {
	dir := r.orderDir(pod.UID)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return nil, fmt.Errorf("stop order directory: %w", err)
	}
	if err := shim.ResetStop(dir); err != nil {
		return nil, fmt.Errorf("stop order directory: %w", err)
	}
	index := -1
	for i, other := range pod.Containers() {
		if other == ref {
			index = i
			break
		}
	}
	sig, _ := model.StopSignal(c) // validated; else SIGTERM, as the pod worker sends
	return &shim.Order{
		Role:               shimRoles[ref.Role],
		Index:              index,
		GracePeriodSeconds: pod.GracePeriodSeconds(),
		StopSignal:         sig,
		PodDir:             dir,
		AgentLock:          filepath.Join(r.root, agentLockFile),
	}, nil
}
