package cri

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/cgroups"
	"github.com/podward/podward/internal/runtime/hostfs"
	"github.com/podward/podward/internal/runtime/podnet"
	"github.com/podward/podward/internal/runtime/podspec"
)

// sandboxRef is a pod's ready sandbox, what CreateContainer needs to be
// told about it again (its config, built once: as it was run, or when
// ensureSandbox finds one an earlier Runtime ran), and the pod's addresses
// on the pod network (nil on the host's). restored marks one restoreIPs
// found at New: it gives the pod's IPs, but has no config yet, and
// ensureSandbox looks the sandbox up again (and sets its cgroup's limits)
// before using it.
type sandboxRef struct {
	id       string
	config   *runtimeapi.PodSandboxConfig
	ips      []string
	restored bool
}

// hostNetwork says whether the pod's sandbox shares the host's network:
// when the pod asks for it, or Config.PodNetwork is off.
func (r *Runtime) hostNetwork(pod *model.Pod) bool {
	return pod.Spec.HostNetwork || !r.podNetwork
}

// PodIPs are the addresses of a pod with a network of its own (see
// Config.PodNetwork), from its sandbox's network status: the primary one
// (PodSandboxNetworkStatus.Ip) first, then the additional ones; nil for
// a pod on the host's network, and until its sandbox runs. A pod's
// addresses are known again after a restart: New reads those of the
// ready sandboxes of the root. The caller must not modify the slice.
func (r *Runtime) PodIPs(uid types.UID) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sandboxes[uid].ips
}

// statusIPs are the pod's IPs as its status gives them: the node's for a
// pod on the host's network, its sandbox's (PodIPs) otherwise; nil until
// that runs.
func (r *Runtime) statusIPs(pod *model.Pod) []string {
	if r.hostNetwork(pod) {
		return []string{r.nodeIP}
	}
	return r.PodIPs(pod.UID)
}

// networkIPs are the addresses of a sandbox's network status, the primary
// first; nil when it has none (a host-network sandbox).
func networkIPs(st *runtimeapi.PodSandboxNetworkStatus) []string {
	if st.GetIp() == "" {
		return nil
	}
	ips := []string{st.GetIp()}
	for _, a := range st.GetAdditionalIps() {
		if a.GetIp() != "" && !slices.Contains(ips, a.GetIp()) {
			ips = append(ips, a.GetIp())
		}
	}
	return ips
}

// sandboxIPs asks the CRI runtime for the addresses of sandbox id: nil
// for a sandbox on the host's network, whose IP the runtime does not
// report (containerd leaves it empty).
func (r *Runtime) sandboxIPs(ctx context.Context, id string) ([]string, error) {
	cctx, cancel := r.call(ctx)
	defer cancel()
	resp, err := r.rt.PodSandboxStatus(cctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil {
		return nil, fmt.Errorf("pod sandbox status %s: %w", id, err)
	}
	st := resp.GetStatus()
	if st.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE {
		return nil, nil
	}
	return networkIPs(st.GetNetwork()), nil
}

// restoreIPs, at New, learns the addresses of the pods whose ready
// sandboxes (of this root, on a pod network) an earlier Runtime made, so
// that their status keeps their IPs across an agent's restart even when
// the pod worker, already set up, does not call PreparePod again.
func (r *Runtime) restoreIPs(ctx context.Context) error {
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ListPodSandbox(cctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{
			State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
			LabelSelector: r.selector(),
		},
	})
	cancel()
	if err != nil {
		return fmt.Errorf("list sandboxes: %w", err)
	}
	newest := map[types.UID]*runtimeapi.PodSandbox{}
	for _, s := range resp.Items {
		uid := types.UID(s.GetLabels()[LabelPodUID])
		if uid != "" && (newest[uid] == nil || s.CreatedAt > newest[uid].CreatedAt) {
			newest[uid] = s
		}
	}
	for uid, s := range newest {
		ips, err := r.sandboxIPs(ctx, s.Id)
		if err != nil {
			return err
		}
		r.mu.Lock()
		r.sandboxes[uid] = sandboxRef{id: s.Id, ips: ips, restored: true}
		r.mu.Unlock()
	}
	return nil
}

// PreparePod creates the pod's directories, its volumes (a directory per
// emptyDir, a tmpfs for medium Memory; for each hostPath the check or
// creation its type asks for) and its sandbox. It is idempotent: a ready
// sandbox of the pod (found by its labels, also one an earlier Runtime
// created) is used again; a sandbox that is not ready any more is replaced
// by a new one with the next attempt number, and removed by CleanupPod.
// It stops, with ctx.Err(), between steps once ctx is done.
func (r *Runtime) PreparePod(ctx context.Context, pod *model.Pod) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := r.preparePod(ctx, pod); err != nil {
		return fmt.Errorf("prepare pod %s: %w", pod.Key(), err)
	}
	return nil
}

func (r *Runtime) preparePod(ctx context.Context, pod *model.Pod) error {
	if err := hostfs.CheckUID(pod.UID); err != nil {
		return err
	}
	if r.isClosed() {
		return errClosed
	}
	if err := errors.Join(r.checkPod(pod)...); err != nil {
		return err
	}
	for _, dir := range []string{r.logDir(pod.UID), r.volumesDir(pod.UID)} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return err
		}
	}
	for i := range pod.Spec.Volumes {
		if err := ctx.Err(); err != nil {
			return err
		}
		vol := &pod.Spec.Volumes[i]
		if err := r.prepareVolume(ctx, pod, vol); err != nil {
			return fmt.Errorf("volume %q: %w", vol.Name, err)
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := r.ensureSandbox(ctx, pod)
	return err
}

// ensureSandbox returns the pod's ready sandbox, creating it when there is
// none, and the pod's cgroup (ensurePodCgroup) before it: one found in
// the CRI runtime (also an earlier Runtime's) gets its cgroup's limits set
// again. The pod worker calls it from the pod's goroutine only, so two
// calls for one pod never race.
func (r *Runtime) ensureSandbox(ctx context.Context, pod *model.Pod) (sandboxRef, error) {
	r.mu.Lock()
	sb, ok := r.sandboxes[pod.UID]
	r.mu.Unlock()
	if ok && !sb.restored {
		return sb, nil
	}
	if err := r.ensurePodCgroup(pod); err != nil {
		return sandboxRef{}, err
	}
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.ListPodSandbox(cctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: r.selector(LabelPodUID, string(pod.UID))},
	})
	cancel()
	if err != nil {
		return sandboxRef{}, fmt.Errorf("list sandboxes: %w", err)
	}
	var attempt uint32
	var ready *runtimeapi.PodSandbox
	for _, s := range resp.Items {
		attempt = max(attempt, s.GetMetadata().GetAttempt()+1)
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY && (ready == nil || s.CreatedAt > ready.CreatedAt) {
			ready = s
		}
	}
	if ready != nil {
		// Its DNS warnings were reported when it was run.
		cfg, _, err := r.sandboxConfig(pod, ready.GetMetadata().GetAttempt())
		if err != nil {
			return sandboxRef{}, err
		}
		sb = sandboxRef{id: ready.Id, config: cfg}
	} else if sb, err = r.runSandbox(ctx, pod, attempt); err != nil {
		return sandboxRef{}, err
	}
	if !r.hostNetwork(pod) {
		if sb.ips, err = r.sandboxIPs(ctx, sb.id); err != nil {
			return sandboxRef{}, err
		}
	}
	r.mu.Lock()
	r.sandboxes[pod.UID] = sb
	r.mu.Unlock()
	return sb, nil
}

// runSandbox runs a new sandbox for the pod, with the given attempt
// number, and reports its DNS warnings.
func (r *Runtime) runSandbox(ctx context.Context, pod *model.Pod, attempt uint32) (sandboxRef, error) {
	if attempt > 0 {
		r.log.Warn("the pod's sandbox is not ready any more; creating a new one", "pod", pod.Key(), "podUID", pod.UID, "attempt", attempt)
	}
	cfg, warnings, err := r.sandboxConfig(pod, attempt)
	if err != nil {
		return sandboxRef{}, err
	}
	for _, w := range warnings {
		r.warn(w)
	}
	cctx, cancel := r.call(ctx)
	resp, err := r.rt.RunPodSandbox(cctx, &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: ptr.Deref(pod.Spec.RuntimeClassName, "")})
	cancel()
	if err != nil {
		return sandboxRef{}, fmt.Errorf("run pod sandbox: %w", err)
	}
	r.log.Debug("pod sandbox created", "pod", pod.Key(), "podUID", pod.UID, "sandbox", resp.PodSandboxId)
	return sandboxRef{id: resp.PodSandboxId, config: cfg}, nil
}

// forgetSandbox drops the cached sandbox of the pod, so that the next use
// looks it up again.
func (r *Runtime) forgetSandbox(uid types.UID) {
	r.mu.Lock()
	delete(r.sandboxes, uid)
	r.mu.Unlock()
}

// sandboxConfig is the pod's sandbox: identified by its labels, logging to
// Root/pods/<uid>/logs, in the pod's own cgroup parent, sharing the host's
// network unless hostNetwork says otherwise (see Config.PodNetwork), with
// the pod's host name and DNS configuration (podnet). The same config goes
// with each CreateContainer (containerd takes the log directory from it):
// it is built once per sandbox and kept on its sandboxRef, so that the
// host's resolv.conf is not read again for each container. The warnings are the kubelet's events about the DNS configuration, for
// the caller to report once per sandbox.
func (r *Runtime) sandboxConfig(pod *model.Pod, attempt uint32) (*runtimeapi.PodSandboxConfig, []runtime.Warning, error) {
	spec := &pod.Spec
	ns := r.namespaces(pod)
	// The sandbox's own pid namespace option is the pod's: shared (POD)
	// or the host's; per container otherwise.
	sc := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: ns}
	for _, ref := range pod.Containers() {
		if c := pod.Container(ref); c.SecurityContext != nil && c.SecurityContext.Privileged != nil && *c.SecurityContext.Privileged {
			// containerd refuses privileged containers in an
			// unprivileged sandbox.
			sc.Privileged = true
		}
	}
	var sysctls map[string]string
	if psc := spec.SecurityContext; psc != nil {
		if psc.RunAsUser != nil {
			sc.RunAsUser = &runtimeapi.Int64Value{Value: *psc.RunAsUser}
		}
		if psc.RunAsGroup != nil {
			sc.RunAsGroup = &runtimeapi.Int64Value{Value: *psc.RunAsGroup}
		}
		sc.SupplementalGroups = podspec.SupplementalGroups(psc)
		sc.Seccomp = seccompProfile(psc.SeccompProfile)
		// The pod's, as the kubelet gives them to the sandbox
		// (kuberuntime_sandbox.go, generatePodSandboxLinuxConfig).
		sc.SelinuxOptions = seLinuxOptions(psc.SELinuxOptions)
		if len(psc.Sysctls) > 0 {
			// With dots as separators, as the kubelet passes them
			// (kuberuntime_manager.go, SyncPod).
			sysctls = make(map[string]string, len(psc.Sysctls))
			for _, s := range psc.Sysctls {
				sysctls[model.NormalizeSysctlName(s.Name)] = s.Value
			}
		}
	}
	cfg := &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: pod.Name, Namespace: pod.Namespace, Uid: string(pod.UID), Attempt: attempt,
		},
		LogDirectory: r.logDir(pod.UID),
		Labels:       r.podLabels(pod),
		Annotations:  graceAnnotations(pod),
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent:    podspec.PodCgroup(r.cgroupParent, pod),
			Resources:       linuxResources(podspec.SandboxResources(pod)),
			SecurityContext: sc,
			Sysctls:         sysctls,
		},
	}
	if !r.hostNetwork(pod) {
		// A host-network sandbox must not set a hostname: containerd
		// fails with "unable to set hostname without a private UTS
		// namespace".
		h, err := podnet.Hostname(pod, r.dns.ClusterDomain)
		if err != nil {
			return nil, nil, err
		}
		cfg.Hostname = h
		cfg.PortMappings = portMappings(pod)
	}
	dns, _, warnings, err := podspec.PodDNS(pod, r.dns)
	if err != nil {
		return nil, nil, err
	}
	cfg.DnsConfig = &runtimeapi.DNSConfig{Servers: dns.Servers, Searches: dns.Searches, Options: dns.Options}
	return cfg, warnings, nil
}

// namespaces are the pod's namespace options, for its sandbox and its
// containers: network and IPC shared by the pod (or the host's), PID per
// container unless shareProcessNamespace (or hostPID) says otherwise.
func (r *Runtime) namespaces(pod *model.Pod) *runtimeapi.NamespaceOption {
	ns := &runtimeapi.NamespaceOption{
		Network: runtimeapi.NamespaceMode_POD,
		Pid:     runtimeapi.NamespaceMode_CONTAINER,
		Ipc:     runtimeapi.NamespaceMode_POD,
	}
	if r.hostNetwork(pod) {
		ns.Network = runtimeapi.NamespaceMode_NODE
	}
	switch {
	case pod.Spec.HostPID:
		ns.Pid = runtimeapi.NamespaceMode_NODE
	case pod.Spec.ShareProcessNamespace != nil && *pod.Spec.ShareProcessNamespace:
		ns.Pid = runtimeapi.NamespaceMode_POD
	}
	if pod.Spec.HostIPC {
		ns.Ipc = runtimeapi.NamespaceMode_NODE
	}
	return ns
}

func portMappings(pod *model.Pod) []*runtimeapi.PortMapping {
	var pms []*runtimeapi.PortMapping
	for _, ref := range pod.Containers() {
		for _, p := range pod.Container(ref).Ports {
			if p.HostPort == 0 {
				continue
			}
			proto := runtimeapi.Protocol_TCP
			switch p.Protocol {
			case v1.ProtocolUDP:
				proto = runtimeapi.Protocol_UDP
			case v1.ProtocolSCTP:
				proto = runtimeapi.Protocol_SCTP
			}
			pms = append(pms, &runtimeapi.PortMapping{
				Protocol: proto, ContainerPort: p.ContainerPort, HostPort: p.HostPort, HostIp: p.HostIP,
			})
		}
	}
	return pms
}

// CleanupPod removes what the pod left in the CRI runtime and on disk:
// its containers, its sandboxes (stopped first, which tears its network
// down), its emptyDirs (hostPaths are left alone) and its cgroup (the
// sandbox's cgroup parent), which the CRI runtime never removes. It keeps
// the logs. It is idempotent, and works for a pod the runtime knows only
// from ListPods: only pod.UID is needed then. It must only be called when no container of
// the pod runs; it fails without removing anything when one does.
func (r *Runtime) CleanupPod(ctx context.Context, pod *model.Pod) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := hostfs.CheckUID(pod.UID); err != nil {
		return fmt.Errorf("clean up pod %s: %w", pod.Key(), err)
	}
	if err := r.cleanupPod(ctx, pod.UID); err != nil {
		return fmt.Errorf("clean up pod %s: %w", pod.Key(), err)
	}
	return nil
}

func (r *Runtime) cleanupPod(ctx context.Context, uid types.UID) error {
	// Exits the relist has not seen yet are reported before their
	// containers go: removed, they would look lost.
	if err := r.relist(ctx); err != nil {
		return err
	}
	cctx, cancel := r.call(ctx)
	ctrs, err := r.rt.ListContainers(cctx, &runtimeapi.ListContainersRequest{
		Filter: &runtimeapi.ContainerFilter{LabelSelector: r.selector(LabelPodUID, string(uid))},
	})
	cancel()
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	var running []string
	for _, c := range ctrs.Containers {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			running = append(running, c.GetMetadata().GetName())
		}
	}
	if len(running) > 0 {
		slices.Sort(running)
		return fmt.Errorf("containers %s still run", strings.Join(slices.Compact(running), ", "))
	}
	var errs []error
	for _, c := range ctrs.Containers {
		if err := r.removeContainer(ctx, c.Id); err != nil {
			errs = append(errs, err)
		}
	}
	r.forgetSandbox(uid)

	cctx, cancel = r.call(ctx)
	sbs, err := r.rt.ListPodSandbox(cctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: r.selector(LabelPodUID, string(uid))},
	})
	cancel()
	if err != nil {
		errs = append(errs, fmt.Errorf("list sandboxes: %w", err))
	}
	for _, sb := range sbs.GetItems() {
		if err := r.removeSandbox(ctx, sb.Id); err != nil {
			errs = append(errs, err)
		}
	}
	// Each subPath's mount is unmounted before its target goes: behind it
	// is a volume's data, and a hostPath's is the host's.
	if err := hostfs.RemoveSubPaths(r.subPathsDir(uid)); err != nil {
		errs = append(errs, err)
	}
	if err := hostfs.RemoveVolumes(r.volumesDir(uid)); err != nil {
		errs = append(errs, err)
	}
	for _, p := range []string{r.messagesDir(uid), r.hostsFile(uid)} {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, err)
		}
	}
	// The cgroups go last: they are empty only once the sandbox is gone.
	if err := r.removePodCgroups(uid); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// removeContainer removes a container; one that is gone already is fine.
func (r *Runtime) removeContainer(ctx context.Context, id string) error {
	cctx, cancel := r.call(ctx)
	defer cancel()
	if _, err := r.rt.RemoveContainer(cctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil && !isNotFound(err) {
		return fmt.Errorf("remove container %s: %w", id, err)
	}
	return nil
}

func (r *Runtime) removeSandbox(ctx context.Context, id string) error {
	cctx, cancel := r.call(ctx)
	defer cancel()
	if _, err := r.rt.StopPodSandbox(cctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil && !isNotFound(err) {
		return fmt.Errorf("stop pod sandbox %s: %w", id, err)
	}
	if _, err := r.rt.RemovePodSandbox(cctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil && !isNotFound(err) {
		return fmt.Errorf("remove pod sandbox %s: %w", id, err)
	}
	return nil
}

// removePodCgroups removes the pod's cgroup parent in every hierarchy
// (cgroup v1: one per controller; v2: the unified one), deepest first,
// wherever its QoS class put it (and where an older podward put it,
// <parent>/<uid>). The CRI runtime removes its containers' cgroups but not
// the parent it was given. cgroups.RemoveTree kills what a runtime left in
// them first, as the process runtime's removal does.
func (r *Runtime) removePodCgroups(uid types.UID) error {
	entries, err := os.ReadDir(r.cgroupRoot)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cgroups: %w", err)
	}
	var candidates []string
	for _, p := range append(cgroups.PodPaths(r.cgroupParent, string(uid)), path.Join("/", r.cgroupParent, string(uid))) {
		rel := strings.TrimPrefix(p, "/")
		candidates = append(candidates, filepath.Join(r.cgroupRoot, rel))
		for _, e := range entries {
			// cgroup v1 hierarchies are directories, some reached
			// through symlinks (cpu -> cpu,cpuacct): each is tried, a
			// missing one is skipped.
			candidates = append(candidates, filepath.Join(r.cgroupRoot, e.Name(), rel))
		}
	}
	var errs []error
	for _, dir := range candidates {
		if err := cgroups.RemoveTree(dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
