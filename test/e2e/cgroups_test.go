package e2e

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupEnv is a cgroup root of the test's own on the host's hierarchy
// (v1: one per controller; v2: the unified one), for `--cgroup-root`.
type cgroupEnv struct {
	root string   // "/podward-e2e-..."
	dirs []string // its directory in each hierarchy the test looks at
}

// newCgroupEnv skips the test where podward cannot use cgroups (not root,
// no writable hierarchy) and removes the root when the test ends, after
// the agent's cleanup (registered before it): a leak is an error.
func newCgroupEnv(t *testing.T) *cgroupEnv {
	t.Helper()
	needRoot(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	e := &cgroupEnv{root: "/podward-e2e-" + hex.EncodeToString(b[:])}
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		e.dirs = []string{filepath.Join("/sys/fs/cgroup", e.root)}
	} else {
		for _, c := range []string{"memory", "cpu", "cpuacct", "pids"} {
			if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", c)); err != nil {
				t.Skipf("no cgroup v1 %s hierarchy: %v", c, err)
			}
			e.dirs = append(e.dirs, filepath.Join("/sys/fs/cgroup", c, e.root))
		}
	}
	t.Cleanup(func() {
		for _, d := range e.allDirs() {
			if left := e.podCgroups(d); len(left) > 0 {
				t.Errorf("pod cgroups left after the test: %v", left)
			}
			removeCgroupTree(t, d)
		}
	})
	return e
}

// allDirs are the root's directories in every hierarchy it is in: the
// ones the test looks at, and on v1 those a CRI runtime's runc made it in
// besides (devices, freezer, blkio, the named systemd hierarchy...), as
// it makes a container's cgroup in each.
func (e *cgroupEnv) allDirs() []string {
	dirs := append([]string(nil), e.dirs...)
	others, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", e.root))
	for _, d := range others {
		if !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// args are the agent's flags for the environment.
func (e *cgroupEnv) args(extra ...string) []string {
	return append([]string{"--cgroups", "on", "--cgroup-root", e.root}, extra...)
}

// podCgroups lists the pod cgroups under dir, at every QoS level.
func (e *cgroupEnv) podCgroups(dir string) []string {
	var found []string
	for _, level := range []string{"", "burstable", "besteffort"} {
		m, _ := filepath.Glob(filepath.Join(dir, level, "pod*"))
		found = append(found, m...)
	}
	return found
}

// podCgroup is the cgroup of the pod uid in the hierarchy dir, "" when
// it has none.
func (e *cgroupEnv) podCgroup(dir, uid string) string {
	for _, p := range e.podCgroups(dir) {
		if filepath.Base(p) == "pod"+uid {
			return p
		}
	}
	return ""
}

// removeCgroupTree removes a cgroup directory and those below it,
// children first.
func removeCgroupTree(t *testing.T, dir string) {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	for _, e := range entries {
		if e.IsDir() {
			removeCgroupTree(t, filepath.Join(dir, e.Name()))
		}
	}
	if err := syscall.Rmdir(dir); err != nil && !errors.Is(err, syscall.ENOENT) {
		t.Errorf("remove cgroup %s: %v", dir, err)
	}
}

// expectPodCgroupsGone checks that the cgroups of the pod uid go once it
// was deleted. They go with its content, which the agent removes after
// the pod is gone from the API (as the kubelet's pod cleanup does), so
// each is waited for, up to lineTimeout: an inotify watch on its parent
// sees the rmdir (which the VFS notifies on any file system, cgroupfs
// included), then the path is looked at again.
func (e *cgroupEnv) expectPodCgroupsGone(t *testing.T, uid string) {
	t.Helper()
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		t.Fatalf("inotify: %v", err)
	}
	defer unix.Close(fd)
	var paths []string
	for _, d := range e.dirs {
		if p := e.podCgroup(d, uid); p != "" {
			paths = append(paths, p)
			// The watch comes before the next look: no removal is missed.
			_, _ = unix.InotifyAddWatch(fd, filepath.Dir(p), unix.IN_DELETE|unix.IN_DELETE_SELF)
		}
	}
	deadline := time.Now().Add(lineTimeout)
	buf := make([]byte, 4096)
	for {
		var left []string
		for _, p := range paths {
			if _, err := os.Stat(p); err == nil {
				left = append(left, p)
			}
		}
		wait := time.Until(deadline)
		if len(left) == 0 || wait <= 0 {
			for _, p := range left {
				t.Errorf("the pod's cgroup %s is left %v after its deletion", p, lineTimeout)
			}
			return
		}
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		if _, err := unix.Poll(pfd, int(wait/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			t.Fatalf("poll inotify: %v", err)
		}
		for {
			if n, _ := unix.Read(fd, buf); n <= 0 {
				break
			}
		}
	}
}

func (a *agent) podUID(name string) string {
	return strings.TrimSpace(a.mustCLI("get", "pod", name, "-o", "jsonpath={.metadata.uid}"))
}

// oomPod allocates past its memory limit (at most 128 MiB, should the
// limit not hold), and its restart policy restarts it.
const oomPod = `
apiVersion: v1
kind: Pod
metadata:
  name: hog
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 1
  containers:
  - name: hog
    image: busybox
    command: ["/bin/sh", "-c", "head -c 128m /dev/zero | tail"]
    resources:
      limits:
        memory: 16Mi
`

// A container that allocates past limits.memory is killed by the OOM
// killer in its cgroup and ends OOMKilled, exit code 137, as the kubelet
// reports it from its runtime; its restart policy (OnFailure) restarts it.
// Its pod's cgroups go with the pod.
func TestCgroupsOOMKilled(t *testing.T) {
	e := newCgroupEnv(t)
	a := startAgent(t, e.args()...)
	a.apply("hog", writeManifest(t, t.TempDir(), oomPod, nil))
	a.waitPod("hog", "jsonpath={.status.containerStatuses[0].lastState.terminated.reason}=OOMKilled", lineTimeout)
	c := a.getPod("hog").container(t, "hog")
	if c.LastState.Terminated.ExitCode != 137 || c.RestartCount < 1 {
		t.Errorf("hog = %s, want exit code 137 and a restart", c)
	}
	// A memory limit only: Burstable, under burstable/ as the kubelet has
	// it (pkg/kubelet/cm/qos_container_manager_linux.go).
	uid := a.podUID("hog")
	if q := a.getPod("hog").Status.QOSClass; q != "Burstable" || e.podCgroup(e.dirs[0], uid) != filepath.Join(e.dirs[0], "burstable", "pod"+uid) {
		t.Errorf("the %s pod's cgroup is not under burstable/: %v", q, e.podCgroups(e.dirs[0]))
	}
	a.mustCLI("delete", "pod", "hog", "--timeout", "20s")
	e.expectPodCgroupsGone(t, uid)
}

// bombPod forks sleeping children until it cannot (at most 300, should
// the limit not hold: then it says so and sleeps); the shell gives up at
// the first fork that fails ("Cannot fork") and the pod restarts it.
const bombPod = `
apiVersion: v1
kind: Pod
metadata:
  name: bomb
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: bomb
    image: busybox
    command: ["/bin/sh", "-c"]
    args: ["n=0; while [ $n -lt 300 ]; do sleep 600 & n=$((n+1)); done; echo forked $n; exec sleep 600"]
`

// --pod-max-pids (the kubelet's podPidsLimit) stops a fork bomb at the
// limit, in the pod's cgroup: the node stays responsive meanwhile, and the
// bomb's processes all go with the pod. On the CRI runtime the pod's
// cgroup is podward's as the kubelet's pod container manager makes it
// (pkg/kubelet/cm/pod_container_manager_linux.go, with pids.max from
// podPidsLimit): the sandbox's cgroup parent, which containerd's runc
// puts the containers' cgroups in.
func TestCgroupsPodPidsLimit(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		e := newCgroupEnv(t)
		a := startAgent(t, append(append([]string(nil), rt.Args...), e.args("--pod-max-pids", "50")...)...)
		a.apply("bomb", writeManifest(t, t.TempDir(), bombPod, nil))
		a.waitPod("bomb", "jsonpath={.status.phase}=Running", lineTimeout)
		uid := a.podUID("bomb")
		pids := e.dirs[len(e.dirs)-1] // v1: the pids hierarchy; v2: the only one
		podCg := e.podCgroup(pids, uid)
		if podCg == "" {
			t.Fatalf("no pod cgroup for %s", uid)
		}
		// The process runtime's pod limit has room for its shims' threads
		// on v2, where they are in the pod's pids cgroup.
		if max, _ := os.ReadFile(filepath.Join(podCg, "pids.max")); strings.TrimSpace(string(max)) != "50" && (len(e.dirs) > 1 || rt.IsCRI()) {
			t.Errorf("pids.max of the pod = %q, want 50", max)
		}
		deadline := time.Now().Add(lineTimeout)
		for {
			logs, _ := a.cli("logs", "bomb")
			if strings.Contains(logs, "forked 300") {
				t.Fatalf("the fork bomb was not stopped: %s", logs)
			}
			if strings.Contains(strings.ToLower(logs), "fork") {
				t.Logf("the bomb: %s", strings.TrimSpace(logs))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the bomb never hit the limit: %q", logs)
			}
			// The node answers while the bomb is at its limit.
			start := time.Now()
			a.mustCLI("get", "pods")
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("get pods took %v during the fork bomb", d)
			}
		}
		current, _ := os.ReadFile(filepath.Join(podCg, "pids.current"))
		t.Logf("pids.current %s", strings.TrimSpace(string(current)))
		a.mustCLI("delete", "pod", "bomb", "--timeout", "20s")
		e.expectPodCgroupsGone(t, uid)
	})
}

// sharedPod's two containers have no limits of their own, but the pod
// has a pod-level memory limit (spec.resources, KEP-2837): each alone
// fits in it (110 MiB of 128), both together do not. a holds its 110 MiB
// (tail keeps a line without newlines) before b starts on its own. Which
// of the two the OOM killer picks is the kernel's choice (each
// container's oom_score_adj is the same; b's tail, growing its buffer,
// may briefly hold more than a's). A killed tail ends its shell with 137,
// the pipe's writer at its next byte.
const sharedPod = `
apiVersion: v1
kind: Pod
metadata:
  name: shared
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  resources:
    limits:
      memory: 128Mi
  volumes:
  - name: sync
    emptyDir: {}
  containers:
  - name: a
    image: busybox
    command: ["/bin/sh", "-c", "(head -c 110m /dev/zero; touch /sync/a; while :; do sleep 1; printf x; done) | tail >/dev/null"]
    volumeMounts:
    - {name: sync, mountPath: /sync}
  - name: b
    image: busybox
    command: ["/bin/sh", "-c", "while [ ! -e /sync/a ]; do sleep 1; done; (head -c 110m /dev/zero; while :; do sleep 1; printf x; done) | tail >/dev/null"]
    volumeMounts:
    - {name: sync, mountPath: /sync}
`

// Pod-level resources are enforced on the pod's cgroup as the kubelet
// computes them (pkg/kubelet/cm/helpers_linux.go, ResourceConfigForPod: a
// pod-level limit makes a Burstable pod limited though its containers are
// not): two containers without limits that together allocate past
// spec.resources.limits.memory are OOM-killed in the pod's cgroup, and the
// one killed (either) ends OOMKilled, exit code 137. The pod's cgroup has the limit
// (the process runtime's has room for its shims besides, 32 MiB a
// container), and goes with the pod.
func TestCgroupsPodLevelMemoryLimit(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		e := newCgroupEnv(t)
		a := startAgent(t, append(append([]string(nil), rt.Args...), e.args()...)...)
		a.apply("shared", writeManifest(t, t.TempDir(), sharedPod, nil))
		a.waitPod("shared", `jsonpath={.status.containerStatuses[?(@.state.terminated.reason=="OOMKilled")].state.terminated.reason}=OOMKilled`, exitTimeout)
		p := a.getPod("shared")
		for _, c := range p.Status.ContainerStatuses {
			if term := c.State.Terminated; term != nil && (term.Reason != "OOMKilled" || term.ExitCode != 137) {
				t.Errorf("%s = %s, want OOMKilled with exit code 137 (only an OOM kill ends a container of this pod)", c.Name, c)
			}
		}
		if p.Status.QOSClass != "Burstable" {
			t.Errorf("QoS class %s, want Burstable (a pod-level memory limit only)", p.Status.QOSClass)
		}
		uid := a.podUID("shared")
		mem := e.podCgroup(e.dirs[0], uid)
		limit, err := os.ReadFile(filepath.Join(mem, "memory.limit_in_bytes"))
		if os.IsNotExist(err) {
			limit, err = os.ReadFile(filepath.Join(mem, "memory.max"))
		}
		want := int64(128 << 20)
		if !rt.IsCRI() {
			want += 2 * 32 << 20
		}
		if got := strings.TrimSpace(string(limit)); err != nil || got != strconv.FormatInt(want, 10) {
			t.Errorf("the pod's memory limit = %q (%v), want %d", got, err, want)
		}
		a.mustCLI("delete", "pod", "shared", "--timeout", "20s")
		e.expectPodCgroupsGone(t, uid)
	})
}

// cgroupPod runs until deleted.
const cgroupPod = `
apiVersion: v1
kind: Pod
metadata:
  name: steady
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "trap 'exit 0' TERM; while :; do sleep 0.2; done"]
    resources:
      requests:
        cpu: 100m
`

// An agent killed with SIGKILL leaves its pods' cgroups; the next one on
// the same state adopts them: the running container is still in its
// instance's cgroup, no second pod cgroup appears, and the pod's deletion
// removes them all.
func TestCgroupsAdoptedAfterAgentKill(t *testing.T) {
	e := newCgroupEnv(t)
	dir := t.TempDir()
	a := startAgentIn(t, dir, e.args()...)
	a.apply("steady", writeManifest(t, t.TempDir(), cgroupPod, nil))
	a.waitPod("steady", "condition=Ready", lineTimeout)
	uid := a.podUID("steady")
	mem := e.dirs[0]
	before := e.podCgroup(mem, uid)
	if before != filepath.Join(mem, "burstable", "pod"+uid) {
		t.Fatalf("the Burstable pod's cgroup: %q in %v", before, e.podCgroups(mem))
	}
	_ = a.cmd.Process.Kill()
	<-a.done

	b := startAgentIn(t, dir, e.args()...)
	b.pods = append(b.pods, "steady")
	b.waitPod("steady", "condition=Ready", lineTimeout)
	if got := e.podCgroups(mem); len(got) != 1 || got[0] != before {
		t.Errorf("pod cgroups after the restart: %v, want only %s", got, before)
	}
	instances, _ := filepath.Glob(filepath.Join(before, "*", "cgroup.procs"))
	var busy int
	for _, f := range instances {
		if procs, _ := os.ReadFile(f); len(strings.TrimSpace(string(procs))) > 0 && filepath.Base(filepath.Dir(f)) != "shims" {
			busy++
		}
	}
	if busy != 1 {
		t.Errorf("%d instance cgroups with processes after the restart, want the running container's: %v", busy, instances)
	}
	b.mustCLI("delete", "pod", "steady", "--timeout", "20s")
	e.expectPodCgroupsGone(t, uid)
}

// An exec runs in its container's cgroup, as a CRI runtime's does: its
// usage is the container's and its limits hold (the kubelet's exec goes
// through the runtime, runc exec joins the container's cgroups). Both a
// plain exec and one with a terminal.
func TestCgroupsExecJoinsTheContainer(t *testing.T) {
	e := newCgroupEnv(t)
	a := startAgent(t, e.args()...)
	a.apply("steady", writeManifest(t, t.TempDir(), cgroupPod, nil))
	a.waitPod("steady", "condition=Ready", lineTimeout)
	uid := a.podUID("steady")
	pod := filepath.Join(e.dirs[0], "burstable", "pod"+uid)
	instances, _ := filepath.Glob(filepath.Join(pod, "*", "cgroup.procs"))
	var want string
	for _, f := range instances {
		if procs, _ := os.ReadFile(f); len(strings.TrimSpace(string(procs))) > 0 && filepath.Base(filepath.Dir(f)) != "shims" {
			want = e.root + strings.TrimPrefix(filepath.Dir(f), e.dirs[0])
		}
	}
	if want == "" {
		t.Fatalf("no busy instance cgroup under %s: %v", pod, instances)
	}
	// The line of /proc/self/cgroup of the hierarchy e.dirs[0] is in: v1
	// "N:memory:/path" (a hybrid host has a "0::/" line too), v2 "0::/path".
	out := a.mustCLI("exec", "steady", "--", "cat", "/proc/self/cgroup")
	v2 := !strings.HasPrefix(e.dirs[0], "/sys/fs/cgroup/memory/")
	var got string
	for _, line := range strings.Split(out, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && ((!v2 && parts[1] == "memory") || (v2 && parts[0] == "0" && parts[1] == "")) {
			got = parts[2]
		}
	}
	if got != want {
		t.Errorf("the exec's memory cgroup is %q, want its container's %q (/proc/self/cgroup:\n%s)", got, want, out)
	}
}
