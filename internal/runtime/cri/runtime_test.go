package cri

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/runtime/hostfs"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testLogger logs to stderr with PODWARD_TEST_LOG=1, else nowhere.
func testLogger() *slog.Logger {
	if os.Getenv("PODWARD_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

type harness struct {
	t       testing.TB
	f       *fakeCRI
	r       *Runtime
	clk     *clocktesting.FakeClock
	cfg     Config
	waiting chan time.Duration // the relist loop waits, for so long
	cgroups string
}

// newHarness starts a fake CRI runtime and a Runtime on it, with a fake
// clock; mod may change the config first.
func newHarness(t testing.TB, mod func(*Config)) *harness {
	t.Helper()
	h := &harness{
		t:       t,
		f:       newFakeCRI(t),
		clk:     clocktesting.NewFakeClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)),
		waiting: make(chan time.Duration, 1000),
		cgroups: t.TempDir(),
	}
	h.cfg = Config{
		Endpoint:     h.f.endpoint,
		Root:         t.TempDir(),
		Clock:        h.clk,
		Logger:       testLogger(),
		RelistPeriod: time.Second,
		loopWaiting: func(d time.Duration) {
			select {
			case h.waiting <- d:
			default:
			}
		},
	}
	if mod != nil {
		mod(&h.cfg)
	}
	// Before the root's removal: the subPaths' bind mounts of pods no
	// test cleaned up.
	t.Cleanup(func() { h.removeSubPaths(h.cfg.Root) })
	h.r = h.open()
	return h
}

// removeSubPaths unmounts the subPaths of every pod under root.
func (h *harness) removeSubPaths(root string) {
	pods, _ := os.ReadDir(filepath.Join(root, "pods"))
	for _, p := range pods {
		if err := hostfs.RemoveSubPaths(filepath.Join(root, "pods", p.Name(), "volume-subpaths")); err != nil {
			h.t.Errorf("remove the subPaths of pod %s: %v", p.Name(), err)
		}
	}
}

// open starts a Runtime on the harness's config, closed when the test ends.
func (h *harness) open() *Runtime {
	h.t.Helper()
	r, err := New(context.Background(), h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	r.cgroupRoot = h.cgroups
	h.t.Cleanup(func() { r.Close() })
	return r
}

// reopen closes the Runtime and starts a new one on the same root.
func (h *harness) reopen() {
	h.t.Helper()
	h.r.Close()
	h.r = h.open()
}

func (h *harness) relist() {
	h.t.Helper()
	if err := h.r.relist(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// event waits for the next exit event.
func (h *harness) event() runtime.Event {
	h.t.Helper()
	select {
	case ev := <-h.r.Events():
		return ev
	case <-time.After(10 * time.Second):
		h.t.Fatal("timed out waiting for an exit event")
		return runtime.Event{}
	}
}

// closeAndDrain closes the Runtime, which waits for every delivery, and
// returns the events it had sent.
func (h *harness) closeAndDrain() []runtime.Event {
	h.r.Close()
	var evs []runtime.Event
	for {
		select {
		case ev := <-h.r.Events():
			evs = append(evs, ev)
		default:
			return evs
		}
	}
}

func (h *harness) prepare(pod *model.Pod) {
	h.t.Helper()
	if err := h.r.PreparePod(context.Background(), pod); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) start(pod *model.Pod, name string, attempt int) runtime.Container {
	h.t.Helper()
	c, err := h.r.StartContainer(context.Background(), pod, ref(pod, name), attempt)
	if err != nil {
		h.t.Fatal(err)
	}
	return c
}

func ref(pod *model.Pod, name string) model.ContainerRef {
	for _, r := range pod.Containers() {
		if r.Name == name {
			return r
		}
	}
	panic("no container " + name)
}

// testPod is a pod with an init container and a main container sharing an
// emptyDir.
func testPod(uid string) *model.Pod {
	p := &model.Pod{Pod: &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID(uid), Labels: map[string]string{"app": "web"}},
		Spec: v1.PodSpec{
			// Default: ClusterFirst without a cluster DNS would warn of
			// the fallback (MissingClusterDNS) in every test.
			DNSPolicy:                     v1.DNSDefault,
			TerminationGracePeriodSeconds: ptr.To[int64](7),
			InitContainers: []v1.Container{{
				Name: "setup", Image: "busybox",
				Command:      []string{"sh", "-c", "echo hi > /data/greeting"},
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Containers: []v1.Container{{
				Name: "app", Image: "localhost/busybox:local",
				Command:    []string{"sh", "-c"},
				Args:       []string{"echo $(GREETING) $(POD) $$(KEPT) $(UNKNOWN)"},
				WorkingDir: "/data",
				Env: []v1.EnvVar{
					{Name: "POD", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "GREETING", Value: "hello-$(POD)"},
					{Name: "APP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['app']"}}},
				},
				VolumeMounts: []v1.VolumeMount{
					{Name: "data", MountPath: "/data"},
				},
				Lifecycle: &v1.Lifecycle{StopSignal: ptr.To(v1.SIGUSR1)},
			}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}}},
		},
	}}
	// A subPath is bind-mounted on the host, which needs root, as the
	// kubelet does: without root the tests that do not look at mounts
	// still run.
	if os.Geteuid() == 0 {
		app := &p.Spec.Containers[0]
		app.VolumeMounts = append(app.VolumeMounts, v1.VolumeMount{Name: "data", MountPath: "/sub", SubPath: "nested/dir", ReadOnly: true})
	}
	model.Default(p)
	return p
}

func TestNewChecksTheRuntime(t *testing.T) {
	_, err := New(context.Background(), Config{Endpoint: "unix:///nonexistent/cri.sock", Root: t.TempDir(), CallTimeout: time.Second})
	if err == nil {
		t.Fatal("New with no runtime behind the endpoint succeeded")
	}
	h := newHarness(t, nil)
	name, version, err := h.r.Version(context.Background())
	if err != nil || name != "fakecri" || version != "v0.0.1" {
		t.Fatalf("Version = %q, %q, %v", name, version, err)
	}
	// One Runtime per root.
	_, err = New(context.Background(), h.cfg)
	if !errors.Is(err, ErrRootInUse) {
		t.Fatalf("second New on the root: %v, want ErrRootInUse", err)
	}
}

func TestPreparePodSandbox(t *testing.T) {
	for _, tc := range []struct {
		name        string
		podNetwork  bool
		hostNetwork bool
		share       bool
		wantNet     runtimeapi.NamespaceMode
		wantPid     runtimeapi.NamespaceMode
		wantHost    string
	}{
		{name: "host network by default", wantNet: runtimeapi.NamespaceMode_NODE, wantPid: runtimeapi.NamespaceMode_CONTAINER},
		{name: "pod network when asked and enabled", podNetwork: true, wantNet: runtimeapi.NamespaceMode_POD, wantPid: runtimeapi.NamespaceMode_CONTAINER, wantHost: "web"},
		{name: "hostNetwork wins over PodNetwork", podNetwork: true, hostNetwork: true, wantNet: runtimeapi.NamespaceMode_NODE, wantPid: runtimeapi.NamespaceMode_CONTAINER},
		{name: "shared process namespace", share: true, wantNet: runtimeapi.NamespaceMode_NODE, wantPid: runtimeapi.NamespaceMode_POD},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) { c.PodNetwork = tc.podNetwork })
			pod := testPod("uid-1")
			pod.Spec.HostNetwork = tc.hostNetwork
			if tc.share {
				pod.Spec.ShareProcessNamespace = ptr.To(true)
			}
			h.prepare(pod)
			sbs := h.f.sandboxList()
			if len(sbs) != 1 {
				t.Fatalf("%d sandboxes, want 1", len(sbs))
			}
			cfg := sbs[0].config
			if cfg.Hostname != tc.wantHost {
				t.Errorf("hostname = %q, want %q", cfg.Hostname, tc.wantHost)
			}
			ns := cfg.Linux.SecurityContext.NamespaceOptions
			if ns.Network != tc.wantNet || ns.Pid != tc.wantPid || ns.Ipc != runtimeapi.NamespaceMode_POD {
				t.Errorf("namespaces = %v", ns)
			}
			if want := filepath.Join(h.r.root, "pods", "uid-1", "logs"); cfg.LogDirectory != want {
				t.Errorf("log directory = %q, want %q", cfg.LogDirectory, want)
			}
			// The kubelet's cgroupfs layout: <root>/<qos>/pod<UID>
			// (pkg/kubelet/cm/pod_container_manager_linux.go).
			if cfg.Linux.CgroupParent != "/podward/besteffort/poduid-1" {
				t.Errorf("cgroup parent = %q", cfg.Linux.CgroupParent)
			}
			if res := cfg.Linux.Resources; res == nil || res.CpuShares != 2 || res.CpuPeriod != 100000 || res.CpuQuota != 0 || res.MemoryLimitInBytes != 0 {
				t.Errorf("sandbox resources = %v, want the best-effort pod's", res)
			}
			m := cfg.Metadata
			if m.Name != "web" || m.Namespace != "default" || m.Uid != "uid-1" || m.Attempt != 0 {
				t.Errorf("metadata = %v", m)
			}
			wantLabels := map[string]string{
				LabelPodName: "web", LabelPodNamespace: "default", LabelPodUID: "uid-1",
				LabelManaged: "true", LabelRoot: h.r.rootLabel,
			}
			if !mapsEqual(cfg.Labels, wantLabels) {
				t.Errorf("labels = %v, want %v", cfg.Labels, wantLabels)
			}
			if cfg.Annotations[AnnotationPodGracePeriod] != "7" || cfg.Annotations[AnnotationGracePeriod] != "7" {
				t.Errorf("annotations = %v", cfg.Annotations)
			}
			if fi, err := os.Stat(filepath.Join(h.r.root, "pods", "uid-1", "volumes", "data")); err != nil || fi.Mode().Perm() != 0o777 {
				t.Errorf("emptyDir: %v, %v", fi, err)
			}
		})
	}
}

// The pod's sysctls go to its sandbox with dots as separators, as the
// kubelet passes them (it normalizes the names first); which ones a pod may
// set is the agent's admission.
func TestPreparePodSandboxSysctls(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PodNetwork = true })
	pod := testPod("uid-1")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{
		{Name: "kernel.shm_rmid_forced", Value: "1"},
		{Name: "net/ipv4/ip_local_port_range", Value: "1024 65000"},
		{Name: "net/ipv4/conf/eth0.100/rp_filter", Value: "0"},
	}}
	h.prepare(pod)
	sbs := h.f.sandboxList()
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes, want 1", len(sbs))
	}
	want := map[string]string{
		"kernel.shm_rmid_forced":           "1",
		"net.ipv4.ip_local_port_range":     "1024 65000",
		"net.ipv4.conf.eth0/100.rp_filter": "0",
	}
	if got := sbs[0].config.Linux.Sysctls; !mapsEqual(got, want) {
		t.Fatalf("sysctls = %v, want %v", got, want)
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if bv, ok := b[k]; !ok || bv != v {
			return false
		}
	}
	return true
}

func TestPreparePodIsIdempotent(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	h.prepare(pod)
	// A new Runtime finds the sandbox by its labels.
	h.reopen()
	h.prepare(pod)
	if n := h.f.callCount("RunPodSandbox"); n != 1 {
		t.Fatalf("RunPodSandbox called %d times, want 1", n)
	}
	// A sandbox that is not ready any more is replaced, with the next
	// attempt.
	for _, s := range h.f.sandboxList() {
		if _, err := h.f.StopPodSandbox(context.Background(), &runtimeapi.StopPodSandboxRequest{PodSandboxId: s.id}); err != nil {
			t.Fatal(err)
		}
	}
	h.reopen()
	h.prepare(pod)
	sbs := h.f.sandboxList()
	slices.SortFunc(sbs, func(a, b *fakeSandbox) int { return int(a.config.Metadata.Attempt) - int(b.config.Metadata.Attempt) })
	if len(sbs) != 2 || sbs[1].config.Metadata.Attempt != 1 || sbs[1].state != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("sandboxes after the first stopped: %d, want a ready one with attempt 1", len(sbs))
	}
}

func TestStartContainerConfig(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000), SupplementalGroups: []int64{3000}}
	app := &pod.Spec.Containers[0]
	app.SecurityContext = &v1.SecurityContext{
		RunAsGroup:               ptr.To[int64](1001),
		ReadOnlyRootFilesystem:   ptr.To(true),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN"}, Drop: []v1.Capability{"ALL"}},
		SeccompProfile:           &v1.SeccompProfile{Type: v1.SeccompProfileTypeRuntimeDefault},
	}
	app.Resources = v1.ResourceRequirements{
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("500m"), v1.ResourceMemory: resource.MustParse("64Mi")},
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("250m")},
	}
	h.prepare(pod)
	c := h.start(pod, "app", 3)

	if want := filepath.Join(h.r.root, "pods", "uid-1", "logs", "app", "3.log"); c.LogPath != want || h.r.LogPath("uid-1", "app", 3) != want {
		t.Errorf("log path = %q, want %q", c.LogPath, want)
	}
	if c.StartedAt.IsZero() {
		t.Error("StartedAt is zero")
	}
	fc := h.f.container(c.ID)
	if fc == nil || fc.state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container %s not running in the runtime", c.ID)
	}
	if fc.logPath != c.LogPath {
		t.Errorf("the runtime logs to %q, LogPath says %q", fc.logPath, c.LogPath)
	}
	cfg := fc.config
	if cfg.Metadata.Name != "app" || cfg.Metadata.Attempt != 3 {
		t.Errorf("metadata = %v", cfg.Metadata)
	}
	if cfg.Image.Image != "localhost/busybox:local" {
		t.Errorf("image = %q", cfg.Image.Image)
	}
	if !slices.Equal(cfg.Command, []string{"sh", "-c"}) ||
		!slices.Equal(cfg.Args, []string{"echo hello-web web $(KEPT) $(UNKNOWN)"}) {
		t.Errorf("command %q args %q", cfg.Command, cfg.Args)
	}
	if cfg.WorkingDir != "/data" {
		t.Errorf("working dir = %q", cfg.WorkingDir)
	}
	var env []string
	for _, kv := range cfg.Envs {
		env = append(env, kv.Key+"="+string(kv.Value))
	}
	if want := []string{"POD=web", "GREETING=hello-web", "APP=web"}; !slices.Equal(env, want) {
		t.Errorf("env = %q, want %q", env, want)
	}
	vol := filepath.Join(h.r.root, "pods", "uid-1", "volumes", "data")
	// The termination-message file last, as the kubelet's makeMounts
	// (kuberuntime_container.go): a file of the instance's under the pod's
	// directory, containers/<name>/<attempt>-<random>.
	msgFile := regexp.MustCompile(`^` + regexp.QuoteMeta(filepath.Join(h.r.root, "pods", "uid-1", "containers", "app")) + `/3-[0-9a-f]{8}$`)
	// The subPath as the kubelet's doBindSubPath hands it to the CRI
	// runtime (pkg/volume/util/subpath/subpath_linux.go): bind-mounted,
	// once checked, on <pod>/volume-subpaths/<volume>/<container>/<index>.
	subTarget := filepath.Join(h.r.root, "pods", "uid-1", "volume-subpaths", "data", "app", "1")
	// Then the pod's hosts file, as makeMounts adds it last.
	if len(cfg.Mounts) != 4 ||
		cfg.Mounts[0].ContainerPath != "/data" || cfg.Mounts[0].HostPath != vol || cfg.Mounts[0].Readonly ||
		cfg.Mounts[1].ContainerPath != "/sub" || cfg.Mounts[1].HostPath != subTarget || !cfg.Mounts[1].Readonly ||
		cfg.Mounts[2].ContainerPath != "/dev/termination-log" || !msgFile.MatchString(cfg.Mounts[2].HostPath) || cfg.Mounts[2].Readonly ||
		cfg.Mounts[3].ContainerPath != "/etc/hosts" || cfg.Mounts[3].HostPath != filepath.Join(h.r.root, "pods", "uid-1", "etc-hosts") {
		t.Errorf("mounts = %v", cfg.Mounts)
	}
	subDir, err := os.Stat(filepath.Join(vol, "nested", "dir"))
	if err != nil || !subDir.IsDir() {
		t.Errorf("subPath directory not created: %v", err)
	} else if mounted, err := os.Stat(subTarget); err != nil || !os.SameFile(subDir, mounted) {
		t.Errorf("%s is not a mount of the subPath (%v)", subTarget, err)
	}
	if len(cfg.Mounts) == 3 {
		if fi, err := os.Stat(cfg.Mounts[2].HostPath); err != nil || fi.Size() != 0 || fi.Mode().Perm() != 0o666 {
			t.Errorf("termination message file: %v, %v; want an empty file, mode 0666", fi, err)
		}
	}
	if cfg.LogPath != "app/3.log" {
		t.Errorf("CRI log path = %q", cfg.LogPath)
	}
	if cfg.Stdin || cfg.Tty {
		t.Error("stdin or tty set")
	}
	wantLabels := map[string]string{
		LabelPodName: "web", LabelPodNamespace: "default", LabelPodUID: "uid-1", LabelContainerName: "app",
		LabelManaged: "true", LabelRoot: h.r.rootLabel, LabelRole: "main", LabelIndex: "1", LabelAttempt: "3",
	}
	if !mapsEqual(cfg.Labels, wantLabels) {
		t.Errorf("labels = %v, want %v", cfg.Labels, wantLabels)
	}
	wantAnn := map[string]string{
		AnnotationRestartCount: "3", AnnotationPodGracePeriod: "7", AnnotationGracePeriod: "7",
		AnnotationTerminationMessagePath: "/dev/termination-log", AnnotationTerminationMessagePolicy: "File",
		AnnotationTerminationMessageLimit: "6144", // 12 KiB for the pod's two containers
	}
	if !mapsEqual(cfg.Annotations, wantAnn) {
		t.Errorf("annotations = %v, want %v", cfg.Annotations, wantAnn)
	}
	if cfg.StopSignal != runtimeapi.Signal_SIGNAL_SIGUSR1 {
		t.Errorf("stop signal = %v", cfg.StopSignal)
	}
	sc := cfg.Linux.SecurityContext
	if sc.NamespaceOptions.Pid != runtimeapi.NamespaceMode_CONTAINER || sc.NamespaceOptions.Network != runtimeapi.NamespaceMode_NODE {
		t.Errorf("namespaces = %v", sc.NamespaceOptions)
	}
	if sc.RunAsUser.GetValue() != 1000 || sc.RunAsGroup.GetValue() != 1001 || !slices.Equal(sc.SupplementalGroups, []int64{3000, 2000}) {
		t.Errorf("identity: user %v group %v groups %v", sc.RunAsUser, sc.RunAsGroup, sc.SupplementalGroups)
	}
	if !sc.ReadonlyRootfs || !sc.NoNewPrivs || sc.Privileged {
		t.Errorf("readonly %v noNewPrivs %v privileged %v", sc.ReadonlyRootfs, sc.NoNewPrivs, sc.Privileged)
	}
	if !slices.Equal(sc.Capabilities.AddCapabilities, []string{"NET_ADMIN"}) || !slices.Equal(sc.Capabilities.DropCapabilities, []string{"ALL"}) {
		t.Errorf("capabilities = %v", sc.Capabilities)
	}
	if sc.Seccomp == nil || sc.Seccomp.ProfileType != runtimeapi.SecurityProfile_RuntimeDefault {
		t.Errorf("seccomp = %v", sc.Seccomp)
	}
	// As the kubelet computes them (kuberuntime_container_linux.go): a
	// Burstable container without a memory request gets oom_score_adj 999.
	res := cfg.Linux.Resources
	if res.CpuPeriod != 100000 || res.CpuQuota != 50000 || res.CpuShares != 256 || res.MemoryLimitInBytes != 64<<20 || res.OomScoreAdj != 999 {
		t.Errorf("resources = %v", res)
	}
	// The init container's image is normalized; it gets no stop signal.
	ic := h.start(pod, "setup", 0)
	icfg := h.f.container(ic.ID).config
	if icfg.Image.Image != "docker.io/library/busybox:latest" || icfg.Image.UserSpecifiedImage != "busybox" {
		t.Errorf("init image = %v", icfg.Image)
	}
	// Without requests nor limits: the minimum shares, no quota, the
	// kubelet's period all the same.
	if ir := icfg.Linux.Resources; ir.CpuShares != 2 || ir.CpuPeriod != 100000 || ir.CpuQuota != 0 || ir.MemoryLimitInBytes != 0 {
		t.Errorf("init resources = %v", ir)
	}
	if icfg.StopSignal != runtimeapi.Signal_SIGNAL_RUNTIME_DEFAULT || icfg.Labels[LabelRole] != "init" || icfg.Labels[LabelIndex] != "0" {
		t.Errorf("init: stop signal %v labels %v", icfg.StopSignal, icfg.Labels)
	}
	if icfg.Args != nil {
		t.Errorf("init args = %q, want none (the image's)", icfg.Args)
	}
}

// SELinux options go to the runtime as the kubelet passes them: the pod's
// to the sandbox (kuberuntime_sandbox.go); to each container its own,
// which replace the pod's whole, else the pod's
// (securitycontext.DetermineEffectiveSecurityContext,
// kuberuntime/security_context.go).
func TestSELinuxOptions(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{SELinuxOptions: &v1.SELinuxOptions{User: "system_u", Role: "system_r", Type: "container_t", Level: "s0:c1,c2"}}
	pod.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0:c5,c6"}}
	if err := h.r.Check(pod); err != nil {
		t.Fatalf("Check = %v", err)
	}
	h.prepare(pod)
	podLevel := &runtimeapi.SELinuxOption{User: "system_u", Role: "system_r", Type: "container_t", Level: "s0:c1,c2"}
	sbs := h.f.sandboxList()
	if len(sbs) != 1 || !sameSELinux(sbs[0].config.Linux.SecurityContext.SelinuxOptions, podLevel) {
		t.Fatalf("sandbox SELinux options %v, want the pod's %v", sbs[0].config.Linux.SecurityContext.SelinuxOptions, podLevel)
	}
	setup := h.f.container(h.start(pod, "setup", 0).ID).config.Linux.SecurityContext.SelinuxOptions
	if !sameSELinux(setup, podLevel) {
		t.Errorf("setup's SELinux options %v, want the pod's %v", setup, podLevel)
	}
	app := h.f.container(h.start(pod, "app", 0).ID).config.Linux.SecurityContext.SelinuxOptions
	if want := (&runtimeapi.SELinuxOption{Level: "s0:c5,c6"}); !sameSELinux(app, want) {
		t.Errorf("app's SELinux options %v, want its own, whole: %v", app, want)
	}
	none := testPod("uid-2")
	h.prepare(none)
	if o := h.f.container(h.start(none, "app", 0).ID).config.Linux.SecurityContext.SelinuxOptions; o != nil {
		t.Errorf("SELinux options %v without any in the pod, want none (the runtime's default)", o)
	}
}

func sameSELinux(a, b *runtimeapi.SELinuxOption) bool {
	return a != nil && b != nil && a.User == b.User && a.Role == b.Role && a.Type == b.Type && a.Level == b.Level
}

func TestStartContainerWithCtxDoneStartsNothing(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := h.r.StartContainer(ctx, pod, ref(pod, "app"), 0)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if n := h.f.callCount("CreateContainer"); n != 0 {
		t.Fatalf("CreateContainer called %d times", n)
	}
}

func TestStartFailureRemovesTheContainer(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	h.f.mu.Lock()
	h.f.startErr = errors.New("exec: \"nope\": executable file not found")
	h.f.mu.Unlock()
	if _, err := h.r.StartContainer(context.Background(), pod, ref(pod, "app"), 0); err == nil || !strings.Contains(err.Error(), "executable file not found") {
		t.Fatalf("err = %v", err)
	}
	if n := len(h.f.containerList()); n != 0 {
		t.Fatalf("%d containers left after a failed start", n)
	}
	if n := h.f.callCount("RemoveContainer"); n != 1 {
		t.Fatalf("RemoveContainer called %d times", n)
	}
	// The next start of the same attempt works.
	h.f.mu.Lock()
	h.f.startErr = nil
	h.f.mu.Unlock()
	h.start(pod, "app", 0)
	h.relist()
	if evs := h.closeAndDrain(); len(evs) != 0 {
		t.Fatalf("events after a failed start: %v", evs)
	}
}

func TestStartReplacesALeftoverOfTheSameAttempt(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	// A created, never started container of attempt 0 (a start whose
	// answer was lost).
	sb := h.f.sandboxList()[0]
	labels := h.r.containerLabels(pod, ref(pod, "app"), 0)
	if _, err := h.f.CreateContainer(context.Background(), &runtimeapi.CreateContainerRequest{
		PodSandboxId: sb.id, SandboxConfig: sb.config,
		Config: &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Labels: labels, LogPath: "app/0.log"},
	}); err != nil {
		t.Fatal(err)
	}
	list, err := h.r.ListContainers(context.Background(), "uid-1")
	if err != nil || len(list) != 1 || list[0].Exit == nil || list[0].Exit.ExitCode != 128 || list[0].Exit.Reason != runtime.ReasonStartError {
		t.Fatalf("ListContainers with a created container = %+v, %v", list, err)
	}
	c := h.start(pod, "app", 0)
	if got := h.f.containerList(); len(got) != 1 || got[0].id != c.ID {
		t.Fatalf("containers = %d, want only the new one", len(got))
	}
}

func TestExitEvent(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	c := h.start(pod, "app", 0)
	other := h.start(pod, "setup", 0)
	h.relist()
	h.f.exit(t, c.ID, 3, "Error", "boom")
	statusCalls := h.f.callCount("ContainerStatus")
	h.relist()
	if n := h.f.callCount("ContainerStatus") - statusCalls; n != 1 {
		t.Errorf("%d ContainerStatus calls for one exit, want 1", n)
	}
	ev := h.event()
	if ev.PodUID != "uid-1" || ev.Container != "app" || ev.ID != c.ID ||
		ev.Exit.ExitCode != 3 || ev.Exit.Reason != "Error" || ev.Exit.Message != "boom" || ev.Exit.FinishedAt.IsZero() {
		t.Fatalf("event = %+v", ev)
	}
	// Seen once: later relists are quiet, and cost no status call.
	statusCalls = h.f.callCount("ContainerStatus")
	h.relist()
	h.relist()
	if n := h.f.callCount("ContainerStatus") - statusCalls; n != 0 {
		t.Errorf("%d ContainerStatus calls in steady state", n)
	}
	// A clean exit without a reason is Completed.
	h.f.exit(t, other.ID, 0, "", "")
	h.relist()
	if ev := h.event(); ev.ID != other.ID || ev.Exit.Reason != runtime.ReasonCompleted {
		t.Fatalf("event = %+v", ev)
	}
	if evs := h.closeAndDrain(); len(evs) != 0 {
		t.Fatalf("duplicate events: %+v", evs)
	}
}

func TestRelistLoop(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	if d := h.waitLoop(); d != time.Second { // the loop's first wait
		t.Fatalf("first wait %v, want the period", d)
	}
	// A start pokes a relist at once, without the clock.
	c := h.start(pod, "app", 0)
	if d := h.waitLoop(); d != firstFastRelist { // after that relist
		t.Fatalf("wait after the poke %v, want %v", d, firstFastRelist)
	}
	h.f.exit(t, c.ID, 1, "Error", "")
	select {
	case ev := <-h.r.Events():
		t.Fatalf("event before the relist: %+v", ev)
	default:
	}
	h.clk.Step(firstFastRelist)
	if ev := h.event(); ev.ID != c.ID || ev.Exit.ExitCode != 1 {
		t.Fatalf("event = %+v", ev)
	}
	// The quick relists double up to the period, then the period goes on.
	var delays []time.Duration
	for range 8 {
		d := h.waitLoop()
		delays = append(delays, d)
		h.clk.Step(d)
	}
	want := []time.Duration{50, 100, 200, 400, 800, 1000, 1000, 1000}
	for i := range want {
		want[i] *= time.Millisecond
	}
	if !slices.Equal(delays, want) {
		t.Fatalf("relist delays = %v, want %v", delays, want)
	}
}

// waitLoop waits until the relist loop waits for its timer (or a poke).
func (h *harness) waitLoop() time.Duration {
	h.t.Helper()
	select {
	case d := <-h.waiting:
		return d
	case <-time.After(10 * time.Second):
		h.t.Fatal("timed out waiting for the relist loop to wait")
		return 0
	}
}

func TestEventStreamPokesTheRelist(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.RelistPeriod = time.Hour })
	// A new stream (the fake serves it once events is set).
	h.f.mu.Lock()
	h.f.events = make(chan *runtimeapi.ContainerEventResponse, 10)
	h.f.mu.Unlock()
	h.reopen()
	pod := testPod("uid-1")
	h.prepare(pod)
	c := h.start(pod, "app", 0)
	h.f.waitFor(t, "the event stream", func() bool { return h.f.streams > 0 })
	h.f.exit(t, c.ID, 2, "Error", "")
	h.f.events <- &runtimeapi.ContainerEventResponse{ContainerId: c.ID, ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT}
	// No clock step: the stream's stop event pokes the relist.
	if ev := h.event(); ev.ID != c.ID || ev.Exit.ExitCode != 2 {
		t.Fatalf("event = %+v", ev)
	}
	// The exit may have been found by the relist that follows a start,
	// before the stream's event was read: wait for the stream's reader,
	// which sets the flag as soon as it has the event (a matter of
	// scheduling, so the wait yields rather than sleeps).
	deadline := time.Now().Add(10 * time.Second)
	for !h.r.streaming.Load() && time.Now().Before(deadline) {
		goruntime.Gosched()
	}
	if !h.r.streaming.Load() || h.r.period() != 10*time.Hour {
		t.Errorf("streaming %v, period %v", h.r.streaming.Load(), h.r.period())
	}
}

func TestVanishedContainer(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	c := h.start(pod, "app", 0)
	if _, err := h.f.RemoveContainer(context.Background(), &runtimeapi.RemoveContainerRequest{ContainerId: c.ID}); err != nil {
		t.Fatal(err)
	}
	h.relist()
	if ev := h.event(); ev.ID != c.ID || ev.Exit.ExitCode != 137 || ev.Exit.Reason != runtime.ReasonStatusUnknown {
		t.Fatalf("event = %+v", ev)
	}
}

func TestAttachAfterRestart(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	h := newHarness(t, func(c *Config) {
		c.Output = func(pod *model.Pod, container, stream string, line []byte) {
			mu.Lock()
			lines = append(lines, pod.Name+"/"+container+" "+stream+": "+string(line))
			mu.Unlock()
		}
	})
	pod := testPod("uid-1")
	h.prepare(pod)
	early := h.start(pod, "setup", 0)
	late := h.start(pod, "app", 0)
	h.relist()
	h.r.Close()
	// While no Runtime watches, one exits, the other writes.
	h.f.exit(t, early.ID, 0, "Completed", "")
	writeLog(t, late.LogPath, "stdout", "while nobody watched")
	h.r = h.open()
	h.relist()
	// Its exit is in ListContainers, not on Events; the other one runs.
	list, err := h.r.ListContainers(context.Background(), "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].Container != "app" || list[0].Exit != nil || list[1].Container != "setup" ||
		list[1].Exit == nil || list[1].Exit.Reason != "Completed" || list[1].LogPath != h.r.LogPath("uid-1", "setup", 0) {
		t.Fatalf("ListContainers = %+v", list)
	}
	// The running one is watched: its output from now on, then its exit.
	writeLog(t, late.LogPath, "stderr", "after the restart")
	h.f.exit(t, late.ID, 9, "Error", "")
	h.relist()
	if ev := h.event(); ev.ID != late.ID || ev.Container != "app" || ev.PodUID != "uid-1" || ev.Exit.ExitCode != 9 {
		t.Fatalf("event = %+v", ev)
	}
	mu.Lock()
	got := slices.Clone(lines)
	mu.Unlock()
	if want := []string{"web/app stderr: after the restart"}; !slices.Equal(got, want) {
		t.Errorf("output = %q, want %q", got, want)
	}
	if evs := h.closeAndDrain(); len(evs) != 0 {
		t.Fatalf("events for exits before New: %+v", evs)
	}
}

func TestOutputBeforeExitEvent(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	gotLine := make(chan struct{}, 100)
	h := newHarness(t, func(c *Config) {
		c.Output = func(pod *model.Pod, container, stream string, line []byte) {
			mu.Lock()
			lines = append(lines, container+" "+stream+": "+string(line))
			mu.Unlock()
			gotLine <- struct{}{}
		}
	})
	h.f.startHook = func(c *fakeContainer) { writeLog(t, c.logPath, "stdout", "first") }
	pod := testPod("uid-1")
	h.prepare(pod)
	// An earlier start of the attempt left a line: not this instance's.
	logPath := h.r.LogPath("uid-1", "app", 0)
	if err := os.MkdirAll(filepath.Dir(logPath), 0o750); err != nil {
		t.Fatal(err)
	}
	writeLog(t, logPath, "stdout", "old")
	c := h.start(pod, "app", 0)
	<-gotLine
	writeLog(t, c.LogPath, "stderr", "second", "third")
	h.f.exit(t, c.ID, 0, "Completed", "")
	h.relist()
	h.event()
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"app stdout: first", "app stderr: second", "app stderr: third"}; !slices.Equal(lines, want) {
		t.Fatalf("output before the exit event = %q, want %q", lines, want)
	}
}

func TestListsIgnoreForeignContainers(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	c := h.start(pod, "app", 0)
	// A kubelet's container, and another podward's (another root).
	h.f.add("kube", map[string]string{LabelPodUID: "uid-1", LabelContainerName: "kube"}, runtimeapi.ContainerState_CONTAINER_RUNNING)
	otherRoot := h.f.add("other", map[string]string{LabelManaged: "true", LabelRoot: "0123456789abcdef", LabelPodUID: "uid-2", LabelContainerName: "other"}, runtimeapi.ContainerState_CONTAINER_RUNNING)
	h.relist()
	list, err := h.r.ListContainers(context.Background(), "uid-1")
	if err != nil || len(list) != 1 || list[0].ID != c.ID || list[0].Attempt != 0 || list[0].Exit != nil || list[0].StartedAt.IsZero() {
		t.Fatalf("ListContainers = %+v, %v", list, err)
	}
	uids, err := h.r.ListPods()
	if err != nil || !slices.Equal(uids, []types.UID{"uid-1"}) {
		t.Fatalf("ListPods = %v, %v", uids, err)
	}
	if h.r.isTracked(otherRoot) {
		t.Fatal("the relist watches another podward's container")
	}
	if err := h.r.Signal(context.Background(), otherRoot, syscall.SIGKILL); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("Signal of a foreign container: %v, want ErrNotFound", err)
	}
	if h.f.container(otherRoot).state != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatal("a foreign container was stopped")
	}
}

func TestSignal(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	c := h.start(pod, "app", 0)
	ctx := context.Background()
	if err := h.r.Signal(ctx, c.ID, syscall.SIGTERM); !errors.Is(err, runtime.ErrUnsupported) {
		t.Fatalf("SIGTERM: %v, want ErrUnsupported", err)
	}
	if err := h.r.Signal(ctx, c.ID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.f.mu.Lock()
	stops := slices.Clone(h.f.stops)
	h.f.mu.Unlock()
	if len(stops) != 1 || stops[0] != (fakeStop{id: c.ID, timeout: 0}) {
		t.Fatalf("stops = %+v, want one with timeout 0", stops)
	}
	if ev := h.event(); ev.ID != c.ID || ev.Exit.ExitCode != 137 {
		t.Fatalf("event = %+v", ev)
	}
	// Exited: nothing to do. Gone: not found.
	if err := h.r.Signal(ctx, c.ID, syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL of an exited container: %v", err)
	}
	if n := h.f.callCount("StopContainer"); n != 1 {
		t.Fatalf("StopContainer called %d times", n)
	}
	if err := h.r.Signal(ctx, "nonexistent", syscall.SIGKILL); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("SIGKILL of an unknown ID: %v, want ErrNotFound", err)
	}
}

func TestStopContainer(t *testing.T) {
	for _, tc := range []struct {
		timeout time.Duration
		sig     syscall.Signal
		want    int64
	}{
		{timeout: 0, sig: syscall.SIGTERM, want: 0},
		{timeout: -time.Second, sig: syscall.SIGTERM, want: 0},
		{timeout: time.Nanosecond, sig: syscall.SIGTERM, want: 1},
		{timeout: time.Second, sig: syscall.SIGTERM, want: 1},
		{timeout: 1500 * time.Millisecond, sig: syscall.SIGTERM, want: 2},
		{timeout: 30 * time.Second, sig: syscall.SIGUSR1, want: 30},
		{timeout: 30 * time.Second, sig: syscall.SIGKILL, want: 0},
	} {
		t.Run(tc.timeout.String()+"/"+tc.sig.String(), func(t *testing.T) {
			h := newHarness(t, nil)
			pod := testPod("uid-1")
			h.prepare(pod)
			c := h.start(pod, "app", 0)
			if err := h.r.StopContainer(context.Background(), c.ID, tc.sig, tc.timeout); err != nil {
				t.Fatal(err)
			}
			ev := h.event()
			h.f.mu.Lock()
			stops := slices.Clone(h.f.stops)
			h.f.mu.Unlock()
			if len(stops) != 1 || stops[0].timeout != tc.want {
				t.Fatalf("stops = %+v, want one with timeout %d", stops, tc.want)
			}
			if want := map[bool]int32{true: 137, false: 143}[tc.want == 0]; ev.Exit.ExitCode != want {
				t.Fatalf("exit code %d, want %d", ev.Exit.ExitCode, want)
			}
		})
	}
}

func TestStopContainerReturnsOnceIssued(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	c := h.start(pod, "app", 0)
	hold := make(chan struct{})
	h.f.mu.Lock()
	h.f.holdStops = hold
	h.f.mu.Unlock()
	// The runtime's StopContainer blocks for the grace period; ours
	// returns at once.
	if err := h.r.StopContainer(context.Background(), c.ID, syscall.SIGTERM, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	h.f.waitFor(t, "the stop request", func() bool { return len(h.f.stops) == 1 })
	close(hold)
	if ev := h.event(); ev.ID != c.ID || ev.Exit.ExitCode != 143 {
		t.Fatalf("event = %+v", ev)
	}
	if err := h.r.StopContainer(context.Background(), "nonexistent", syscall.SIGTERM, time.Second); !errors.Is(err, runtime.ErrNotFound) {
		t.Fatalf("stop of an unknown ID: %v", err)
	}
}

func TestExec(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	app := ref(pod, "app")
	if _, _, err := h.r.Exec(context.Background(), pod, app, []string{"true"}); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("exec without a running instance: %v", err)
	}
	old := h.start(pod, "app", 0)
	h.f.exit(t, old.ID, 1, "Error", "")
	c := h.start(pod, "app", 1)
	h.f.mu.Lock()
	h.f.execFn = func(req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
		return &runtimeapi.ExecSyncResponse{Stdout: []byte("out\n"), Stderr: []byte("err\n"), ExitCode: 3}, nil
	}
	h.f.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 4500*time.Millisecond)
	defer cancel()
	out, code, err := h.r.Exec(ctx, pod, app, []string{"cat", "/etc/hostname"})
	if err != nil || code != 3 || string(out) != "out\nerr\n" {
		t.Fatalf("Exec = %q, %d, %v", out, code, err)
	}
	h.f.mu.Lock()
	req := h.f.execs[0]
	h.f.mu.Unlock()
	if req.ContainerId != c.ID || !slices.Equal(req.Cmd, []string{"cat", "/etc/hostname"}) || req.Timeout != 5 {
		t.Fatalf("ExecSync request = %v", req)
	}
	// The output is capped.
	h.f.mu.Lock()
	h.f.execFn = func(*runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
		return &runtimeapi.ExecSyncResponse{Stdout: make([]byte, 8000), Stderr: make([]byte, 8000)}, nil
	}
	h.f.mu.Unlock()
	if out, _, err := h.r.Exec(context.Background(), pod, app, []string{"yes"}); err != nil || len(out) != execOutputLimit {
		t.Fatalf("Exec output of %d bytes, %v", len(out), err)
	}
}

func TestCleanupPod(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	host := t.TempDir()
	pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: "host", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: host}}})
	kept := filepath.Join(host, "logs", "kept")
	if os.Geteuid() == 0 {
		// A hostPath's subPath: its bind mount goes, the host's data stays.
		if err := os.MkdirAll(filepath.Dir(kept), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(kept, []byte("kept"), 0o644); err != nil {
			t.Fatal(err)
		}
		app := &pod.Spec.Containers[0]
		app.VolumeMounts = append(app.VolumeMounts, v1.VolumeMount{Name: "host", MountPath: "/logs", SubPath: "logs"})
	}
	h.prepare(pod)
	c := h.start(pod, "app", 0)
	// The pod's cgroup parent, as runc leaves it, in two hierarchies (and
	// where an older podward put it).
	for _, d := range []string{"cpu/podward/besteffort/poduid-1/" + c.ID, "memory/podward/besteffort/poduid-1", "memory/podward/uid-1", "memory/podward/besteffort/poduid-2"} {
		if err := os.MkdirAll(filepath.Join(h.cgroups, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	if err := h.r.CleanupPod(ctx, pod); err == nil || !strings.Contains(err.Error(), "app still run") {
		t.Fatalf("CleanupPod with a running container: %v", err)
	}
	// An exit the relist has not seen yet is reported, as it is, before
	// the container goes.
	h.f.exit(t, c.ID, 0, "Completed", "")
	// Only the UID is needed.
	bare := &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}}
	for range 2 {
		if err := h.r.CleanupPod(ctx, bare); err != nil {
			t.Fatal(err)
		}
	}
	if ev := h.event(); ev.ID != c.ID || ev.Exit.ExitCode != 0 || ev.Exit.Reason != "Completed" {
		t.Errorf("event = %+v", ev)
	}
	if n := len(h.f.containerList()); n != 0 {
		t.Errorf("%d containers left", n)
	}
	if n := len(h.f.sandboxList()); n != 0 {
		t.Errorf("%d sandboxes left", n)
	}
	if h.f.callCount("StopPodSandbox") < 1 {
		t.Error("the sandbox was not stopped before its removal")
	}
	if _, err := os.Stat(filepath.Join(h.r.root, "pods", "uid-1", "volumes")); !os.IsNotExist(err) {
		t.Errorf("volumes left: %v", err)
	}
	if _, err := os.Stat(filepath.Join(h.r.root, "pods", "uid-1", "volume-subpaths")); !os.IsNotExist(err) {
		t.Errorf("subPath mounts left: %v", err)
	}
	if b, err := os.ReadFile(kept); os.Geteuid() == 0 && (err != nil || string(b) != "kept") {
		t.Errorf("the hostPath's data behind a subPath = %q, %v", b, err)
	}
	if _, err := os.Stat(c.LogPath); err != nil {
		t.Errorf("the log is gone: %v", err)
	}
	for _, d := range []string{"cpu/podward/besteffort/poduid-1", "memory/podward/besteffort/poduid-1", "memory/podward/uid-1"} {
		if _, err := os.Stat(filepath.Join(h.cgroups, d)); !os.IsNotExist(err) {
			t.Errorf("cgroup %s left: %v", d, err)
		}
	}
	if _, err := os.Stat(filepath.Join(h.cgroups, "memory/podward/besteffort/poduid-2")); err != nil {
		t.Errorf("another pod's cgroup removed: %v", err)
	}
	if uids, err := h.r.ListPods(); err != nil || len(uids) != 0 {
		t.Errorf("ListPods after cleanup = %v, %v", uids, err)
	}
}

func TestRemovesOldInstances(t *testing.T) {
	h := newHarness(t, nil)
	pod := testPod("uid-1")
	h.prepare(pod)
	var ids []string
	for attempt := range 4 {
		c := h.start(pod, "app", attempt)
		ids = append(ids, c.ID)
		h.f.exit(t, c.ID, 1, "Error", "")
		h.relist()
		h.event()
	}
	h.f.waitFor(t, "the removal of attempts 0 and 1", func() bool {
		return h.f.containers[ids[0]] == nil && h.f.containers[ids[1]] == nil
	})
	list, err := h.r.ListContainers(context.Background(), "uid-1")
	if err != nil || len(list) != 2 || list[0].Attempt != 2 || list[1].Attempt != 3 {
		t.Fatalf("ListContainers = %+v, %v", list, err)
	}
}

func TestStatus(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PodNetwork = true })
	ctx := context.Background()
	if err := h.r.Status(ctx); err != nil {
		t.Fatal(err)
	}
	h.f.mu.Lock()
	h.f.conditions = []*runtimeapi.RuntimeCondition{
		{Type: runtimeapi.RuntimeReady, Status: false, Reason: "ShimsDown", Message: "no shim"},
		{Type: runtimeapi.NetworkReady, Status: false, Reason: "NetworkPluginNotReady", Message: "cni config uninitialized"},
	}
	h.f.mu.Unlock()
	err := h.r.Status(ctx)
	if err == nil || !strings.Contains(err.Error(), "RuntimeReady is false: ShimsDown: no shim") || !strings.Contains(err.Error(), "NetworkReady") {
		t.Fatalf("Status = %v", err)
	}
	// Without PodNetwork, the network does not matter.
	h.f.mu.Lock()
	h.f.conditions[0].Status = true
	h.f.mu.Unlock()
	h.r.podNetwork = false
	if err := h.r.Status(ctx); err != nil {
		t.Fatalf("Status with only NetworkReady false and no pod network: %v", err)
	}
	h.r.Close()
	if err := h.r.Status(ctx); err == nil {
		t.Fatal("Status after Close is nil")
	}
}

func TestCheck(t *testing.T) {
	h := newHarness(t, nil)
	for _, tc := range []struct {
		name string
		mod  func(p *model.Pod)
		want string // "" for none
	}{
		{"ok", func(*model.Pod) {}, ""},
		// Passed to the runtime as the kubelet passes them (see
		// TestSELinuxOptions).
		{"seLinuxOptions", func(p *model.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0"}}
		}, ""},
		{"pod seLinuxOptions", func(p *model.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{SELinuxOptions: &v1.SELinuxOptions{Level: "s0"}}
		}, ""},
		{"configMap volume", func(p *model.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "cm", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{}}})
		}, ""},
		{"clusterTrustBundle", func(p *model.Pod) {
			p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "ctb", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: []v1.VolumeProjection{{ClusterTrustBundle: &v1.ClusterTrustBundleProjection{Path: "ca"}}},
			}}})
		}, "spec.volumes[1].projected.sources[0].clusterTrustBundle"},
		// What the env reads is read at the start (a missing object makes
		// the container wait), never refused.
		{"envFrom", func(p *model.Pod) {
			p.Spec.InitContainers[0].EnvFrom = []v1.EnvFromSource{{ConfigMapRef: &v1.ConfigMapEnvSource{}}}
		}, ""},
		{"secretKeyRef", func(p *model.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{}}}}
		}, ""},
		{"fileKeyRef", func(p *model.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "X", ValueFrom: &v1.EnvVarSource{FileKeyRef: &v1.FileKeySelector{}}}}
		}, "spec.containers[0].env[0].valueFrom.fileKeyRef"},
		// Pod-level cpu and memory hold in the pod's cgroup; nothing else
		// is limited, as for a container.
		{"pod-level cpu and memory", func(p *model.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceCPU: resource.MustParse("1"), v1.ResourceMemory: resource.MustParse("1Gi")}}
		}, ""},
		{"pod-level hugepages", func(p *model.Pod) {
			p.Spec.Resources = &v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("1Gi"), "hugepages-2Mi": resource.MustParse("2Mi")}}
		}, "spec.resources.limits[hugepages-2Mi]"},
		{"ephemeral storage limit", func(p *model.Pod) {
			p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: resource.MustParse("1Gi")}
		}, "spec.containers[0].resources.limits[ephemeral-storage]"},
		{"localhost seccomp", func(p *model.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}}
		}, "spec.containers[0].securityContext.seccompProfile.type"},
		{"apparmor", func(p *model.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{AppArmorProfile: &v1.AppArmorProfile{Type: v1.AppArmorProfileTypeRuntimeDefault}}
		}, "spec.securityContext.appArmorProfile.type"},
		{"group without user", func(p *model.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{RunAsGroup: ptr.To[int64](5)}
		}, "spec.containers[0].securityContext.runAsGroup"},
		{"user namespaces", func(p *model.Pod) { p.Spec.HostUsers = ptr.To(false) }, "spec.hostUsers"},
		// runc would skip it, silently.
		{"unknown capability", func(p *model.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Capabilities: &v1.Capabilities{Drop: []v1.Capability{"NOT_A_CAP"}}}
		}, "spec.containers[0].securityContext.capabilities.drop[0]"},
		{"known capabilities", func(p *model.Pod) {
			p.Spec.Containers[0].SecurityContext = &v1.SecurityContext{Capabilities: &v1.Capabilities{Add: []v1.Capability{"NET_ADMIN", "CAP_SYS_TIME"}, Drop: []v1.Capability{"ALL"}}}
		}, ""},
		{"sysctls on the host network", func(p *model.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: "net.ipv4.ip_forward", Value: "1"}}}
		}, "spec.securityContext.sysctls"},
		{"recursive read-only", func(p *model.Pod) {
			p.Spec.Containers[0].VolumeMounts[0].RecursiveReadOnly = ptr.To(v1.RecursiveReadOnlyEnabled)
		}, "spec.containers[0].volumeMounts[0].recursiveReadOnly"},
		{"defer container", func(p *model.Pod) {
			p.Defer = []v1.Container{{Name: "d", Image: "busybox", SecurityContext: &v1.SecurityContext{SeccompProfile: &v1.SeccompProfile{Type: v1.SeccompProfileTypeLocalhost}}}}
		}, "metadata.annotations[pod.alpha.kubernetes.io/defer-containers][0].securityContext.seccompProfile.type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod("uid-1")
			tc.mod(pod)
			err := h.r.Check(pod)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Check = %v", err)
				}
				return
			}
			if !errors.Is(err, runtime.ErrUnsupported) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Check = %v, want ErrUnsupported naming %q", err, tc.want)
			}
			// PreparePod refuses the pod-level ones.
			podLevel := strings.HasPrefix(tc.want, "spec.") && !strings.Contains(tc.want, "ontainers[")
			if err := h.r.PreparePod(context.Background(), pod); podLevel && !errors.Is(err, runtime.ErrUnsupported) {
				t.Fatalf("PreparePod = %v, want ErrUnsupported", err)
			}
		})
	}
}

// TestPodIPs: a pod on the pod network has the addresses of its
// sandbox's network status, the primary first and then the additional
// ones, also after a restart (a new Runtime on the root, which the pod
// worker, already set up, does not ask to prepare the pod again); they
// are gone once the pod is cleaned up. A pod on the host's network has
// none of its own.
func TestPodIPs(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PodNetwork = true })
	pod := testPod("uid-1")
	if ips := h.r.PodIPs(pod.UID); ips != nil {
		t.Fatalf("PodIPs before the sandbox = %v, want nil", ips)
	}
	h.prepare(pod)
	want := []string{"10.88.0.7", "fd00::7"}
	if ips := h.r.PodIPs(pod.UID); !slices.Equal(ips, want) {
		t.Fatalf("PodIPs = %v, want %v", ips, want)
	}
	hostNet := testPod("uid-2")
	hostNet.Spec.HostNetwork = true
	h.prepare(hostNet)
	h.reopen()
	if ips := h.r.PodIPs(pod.UID); !slices.Equal(ips, want) {
		t.Fatalf("PodIPs after a restart = %v, want %v", ips, want)
	}
	if ips := h.r.PodIPs(hostNet.UID); ips != nil {
		t.Fatalf("PodIPs of a hostNetwork pod after a restart = %v, want nil", ips)
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if ips := h.r.PodIPs(pod.UID); ips != nil {
		t.Fatalf("PodIPs after CleanupPod = %v, want nil", ips)
	}
}

// TestHostPorts: with a pod network, the containers' hostPorts go to the
// sandbox as PortMappings for the CNI portmap plugin (protocol,
// containerPort, hostPort, hostIP), with the pod's own network namespace;
// on the host's network (no pod network) a hostPort other than the
// containerPort cannot be honoured and is refused, naming the field.
func TestHostPorts(t *testing.T) {
	ports := []v1.ContainerPort{
		{ContainerPort: 80, HostPort: 8080, Protocol: v1.ProtocolTCP},
		{ContainerPort: 53, HostPort: 5353, HostIP: "127.0.0.1", Protocol: v1.ProtocolUDP},
		{ContainerPort: 9000, Protocol: v1.ProtocolTCP}, // no hostPort: not mapped
	}
	t.Run("pod network", func(t *testing.T) {
		h := newHarness(t, func(c *Config) { c.PodNetwork = true })
		pod := testPod("uid-1")
		pod.Spec.Containers[0].Ports = ports
		if err := h.r.Check(pod); err != nil {
			t.Fatalf("Check = %v", err)
		}
		h.prepare(pod)
		cfg := h.f.sandboxList()[0].config
		if ns := cfg.Linux.SecurityContext.NamespaceOptions.Network; ns != runtimeapi.NamespaceMode_POD {
			t.Errorf("network namespace = %v, want POD", ns)
		}
		want := []*runtimeapi.PortMapping{
			{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 80, HostPort: 8080},
			{Protocol: runtimeapi.Protocol_UDP, ContainerPort: 53, HostPort: 5353, HostIp: "127.0.0.1"},
		}
		if len(cfg.PortMappings) != len(want) {
			t.Fatalf("port mappings = %v, want %v", cfg.PortMappings, want)
		}
		for i, pm := range cfg.PortMappings {
			w := want[i]
			if pm.Protocol != w.Protocol || pm.ContainerPort != w.ContainerPort || pm.HostPort != w.HostPort || pm.HostIp != w.HostIp {
				t.Errorf("port mapping %d = %v, want %v", i, pm, want[i])
			}
		}
	})
	t.Run("host network", func(t *testing.T) {
		h := newHarness(t, nil)
		pod := testPod("uid-1")
		pod.Spec.Containers[0].Ports = ports
		err := h.r.Check(pod)
		if want := "spec.containers[0].ports[0].hostPort: Unsupported value: 8080"; !errors.Is(err, runtime.ErrUnsupported) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Check = %v, want ErrUnsupported naming %q", err, want)
		}
		// hostPort = containerPort is the host's port itself.
		pod.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: 80, HostPort: 80, Protocol: v1.ProtocolTCP}}
		if err := h.r.Check(pod); err != nil {
			t.Fatalf("Check of hostPort = containerPort = %v", err)
		}
	})
}

func TestRunAsNonRoot(t *testing.T) {
	h := newHarness(t, nil)
	h.f.mu.Lock()
	h.f.images["docker.io/library/busybox:latest"] = &runtimeapi.Image{Id: "sha256:1", Uid: &runtimeapi.Int64Value{Value: 0}}
	h.f.images["localhost/busybox:local"] = &runtimeapi.Image{Id: "sha256:2", Uid: &runtimeapi.Int64Value{Value: 65534}}
	h.f.mu.Unlock()
	pod := testPod("uid-1")
	pod.Spec.SecurityContext = &v1.PodSecurityContext{RunAsNonRoot: ptr.To(true)}
	h.prepare(pod)
	if _, err := h.r.StartContainer(context.Background(), pod, ref(pod, "setup"), 0); err == nil || !strings.Contains(err.Error(), "will run as root") || !errors.Is(err, runtime.ErrContainerConfig) {
		t.Fatalf("start as root with runAsNonRoot: %v", err)
	}
	h.start(pod, "app", 0) // its image's user is 65534
	pod.Spec.InitContainers[0].SecurityContext = &v1.SecurityContext{RunAsUser: ptr.To[int64](0)}
	if _, err := h.r.StartContainer(context.Background(), pod, ref(pod, "setup"), 0); err == nil || !strings.Contains(err.Error(), "non-root") {
		t.Fatalf("start with runAsUser 0 and runAsNonRoot: %v", err)
	}
	if n := h.f.callCount("CreateContainer"); n != 1 {
		t.Fatalf("CreateContainer called %d times, want 1", n)
	}
}

func TestHostPathVolumes(t *testing.T) {
	h := newHarness(t, nil)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		typ  v1.HostPathType
		path string
		ok   bool
	}{
		{v1.HostPathUnset, filepath.Join(dir, "missing"), true},
		{v1.HostPathDirectory, dir, true},
		{v1.HostPathDirectory, file, false},
		{v1.HostPathDirectoryOrCreate, filepath.Join(dir, "new", "dir"), true},
		{v1.HostPathFile, file, true},
		{v1.HostPathFile, dir, false},
		{v1.HostPathFileOrCreate, filepath.Join(dir, "newfile"), true},
		{v1.HostPathFileOrCreate, dir, false},
		{v1.HostPathSocket, file, false},
	} {
		t.Run(string(tc.typ)+filepath.Base(tc.path), func(t *testing.T) {
			pod := testPod("uid-hp")
			pod.Spec.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: tc.path, Type: ptr.To(tc.typ)}}}}
			err := h.r.PreparePod(context.Background(), pod)
			if (err == nil) != tc.ok {
				t.Fatalf("PreparePod = %v, want ok %v", err, tc.ok)
			}
			if !tc.ok {
				return
			}
			c := h.start(pod, "setup", 0)
			if m := h.f.container(c.ID).config.Mounts; len(m) != 3 || m[0].HostPath != tc.path || m[0].ContainerPath != "/data" ||
				m[1].ContainerPath != "/dev/termination-log" || m[2].ContainerPath != "/etc/hosts" {
				t.Fatalf("mounts = %v", m)
			}
			if err := h.r.Signal(context.Background(), c.ID, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			h.event()
			if err := h.r.CleanupPod(context.Background(), pod); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// FileOrCreate refuses an existing file the agent cannot open, which the
// kubelet and the process runtime accept.
func TestFileOrCreateNeedsAReadableFile(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root opens any file")
	}
	file := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(file, nil, 0o000); err != nil {
		t.Fatal(err)
	}
	err := prepareHostPath(&v1.HostPathVolumeSource{Path: file, Type: ptr.To(v1.HostPathFileOrCreate)})
	if err == nil || !strings.Contains(err.Error(), "permission denied") {
		t.Fatalf("prepareHostPath = %v, want permission denied", err)
	}
	if err := prepareHostPath(&v1.HostPathVolumeSource{Path: file, Type: ptr.To(v1.HostPathFile)}); err != nil {
		t.Fatalf("type File: %v", err)
	}
}

// TestRotatesLogsAsTheKubelet follows the kubelet's container log manager
// (pkg/kubelet/logs/container_log_manager.go, rotateLog): a running
// container's log that reached MaxSize is renamed to <log>.<YYYYMMDD-hhmmss>
// and the CRI runtime asked to reopen it (ReopenContainerLog); before that
// the rotated files are tidied, at most MaxFiles-2 kept, all compressed; a
// reopen that fails renames the log back.
func TestRotatesLogsAsTheKubelet(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.LogRotation = crilog.Rotation{MaxSize: 100, MaxFiles: 3} })
	pod := testPod("uid-1")
	h.prepare(pod)
	c := h.start(pod, "app", 0)
	dir := filepath.Dir(c.LogPath)
	files := func() []string {
		t.Helper()
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		return names
	}
	stamp := func(d time.Duration) string { return h.clk.Now().Add(d).UTC().Format("20060102-150405") }

	h.r.rotateLogs()
	if got := files(); !slices.Equal(got, []string{"0.log"}) || h.f.callCount("ReopenContainerLog") != 0 {
		t.Fatalf("a small log was rotated: %q", got)
	}
	writeLog(t, c.LogPath, "stdout", "one", "two", "three")
	first := stamp(0)
	h.r.rotateLogs()
	if got, want := files(), []string{"0.log", "0.log." + first}; !slices.Equal(got, want) || h.f.callCount("ReopenContainerLog") != 1 {
		t.Fatalf("files %q, want %q, and one reopen", got, want)
	}

	// The next second, two more rotations' worth: the oldest kept one is
	// compressed, and the one before it removed.
	for i := range 2 {
		h.clk.Step(time.Second)
		writeLog(t, c.LogPath, "stdout", "four", "five", fmt.Sprint("six ", i))
		h.r.rotateLogs()
	}
	want := []string{"0.log", "0.log." + stamp(-time.Second) + ".gz", "0.log." + stamp(0)}
	if got := files(); !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}

	// The runtime cannot reopen: the log is put back.
	h.clk.Step(time.Second)
	writeLog(t, c.LogPath, "stdout", "seven", "eight", "nine")
	h.f.mu.Lock()
	h.f.reopenErr = status.Error(codes.Unavailable, "busy")
	h.f.mu.Unlock()
	h.r.rotateLogs()
	if got := files(); !slices.Contains(got, "0.log") || slices.Contains(got, "0.log."+stamp(0)) {
		t.Fatalf("files %q: the log was not put back", got)
	}
	if data, err := os.ReadFile(c.LogPath); err != nil || strings.Count(string(data), "\n") != 3 {
		t.Fatalf("the log put back has %q (%v), want the 3 lines written since the last rotation", data, err)
	}
}
