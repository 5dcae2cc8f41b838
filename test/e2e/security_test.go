package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/podward/podward/test/internal/bintest"
)

// What a container's securityContext gives it, seen from inside the
// container and asserted alike on both runtimes: each pod prints what its
// field changed (its /proc/self/status, `id`, what it may write, which
// processes it sees) and the test compares with what the kubelet on
// containerd gives. docs/security.md records the values.

// secPod is one pod of one container, app, that runs Script. PodSC and SC
// are the pod's and the container's securityContext in YAML flow style;
// empty: none at all. TESTPID is the test's own PID, a process of the
// host. Its emptyDir volume is mounted at Data, a path of this pod alone:
// on the process runtime a mountpoint that podward makes on the host is
// removed when the last pod of that podward that uses it ends, which
// detaches it from the pods of any other podward that mounted something
// there (see docs/security.md).
const secPod = `
apiVersion: v1
kind: Pod
metadata:
  name: {{.Name}}
spec:
  restartPolicy: Never
  hostPID: {{.HostPID}}
{{- with .PodSC}}
  securityContext: {{.}}
{{- end}}
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", {{.Script}}]
    env:
    - {name: TESTPID, value: "{{.TestPID}}"}
{{- with .SC}}
    securityContext: {{.}}
{{- end}}
    volumeMounts:
    - {name: data, mountPath: "{{.Data}}"}
`

// Scripts the pods run. statusScript prints the lines of the container's
// /proc/self/status that capabilities, no_new_privs and seccomp set.
const (
	statusScript = `grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status`
	idScript     = `echo uid=$(id -u) gid=$(id -g) groups=$(id -G | tr ' ' '\n' | sort -n | xargs)`
	viewScript   = `m() { awk -v p=$1 '$2==p{split($4,a,",");r=a[1]}END{print r}' /proc/self/mounts; }; ` +
		`echo keys=$([ -c /proc/keys ] && echo masked || echo visible) sys-firmware-entries=$(ls -A /sys/firmware | wc -l) proc-sys=$(m /proc/sys); echo sys=$(m /sys)`
	pidScript = `echo procs=$(ls /proc | grep -c '^[0-9][0-9]*$'); echo pid1=$(tr '\0' '\n' </proc/1/cmdline | head -n 1); if [ -e /proc/$TESTPID ]; then echo host-pid-visible; else echo host-pid-hidden; fi`
)

// secCase is one pod of TestSecurityContext: the fields it sets and the
// lines its container must print (a string: the whole text of a line; a
// *regexp.Regexp: a line's text matches it).
type secCase struct {
	podSC, sc string
	hostPID   bool
	script    string
	want      []any
	// criSkip, when set, is why the case is skipped on the CRI runtime: a
	// known divergence from the kubelet, recorded in docs/security.md.
	criSkip string
}

// Capabilities as /proc/PID/status prints them: containerd's (and the
// kubelet's docs') default set for a container that is not privileged,
// none, and only NET_BIND_SERVICE (bit 10).
const (
	capsDefault        = "00000000a80425fb"
	capsNone           = "0000000000000000"
	capsNetBindService = "0000000000000400"
)

// secCases are the pods of TestSecurityContext on rt. The read-only-root
// pod tries to write readOnlyProbe and its volume (dataPath); a privileged
// container's capabilities are hostCaps.
func secCases(rt runtimeEnv, readOnlyProbe, hostCaps string) map[string]secCase {
	pid1 := "podward-init"
	if rt.IsCRI() {
		pid1 = rt.Bash
	}
	return map[string]secCase{
		"default": {script: statusScript, want: []any{"CapEff:\t" + capsDefault, "NoNewPrivs:\t0", "Seccomp:\t0"}},
		"drop-all": {sc: `{capabilities: {drop: [ALL]}}`, script: statusScript,
			want: []any{"CapEff:\t" + capsNone}},
		"drop-all-add-net-bind-service": {sc: `{capabilities: {drop: [ALL], add: [NET_BIND_SERVICE]}}`, script: statusScript,
			want: []any{"CapEff:\t" + capsNetBindService}},
		"privileged": {sc: `{privileged: true}`, script: statusScript,
			want: []any{"CapEff:\t" + hostCaps}},
		"no-privilege-escalation": {sc: `{allowPrivilegeEscalation: false}`, script: statusScript,
			want: []any{"NoNewPrivs:\t1"}},
		"seccomp-runtime-default": {sc: `{seccompProfile: {type: RuntimeDefault}}`, script: statusScript,
			want: []any{"Seccomp:\t2"}},
		"seccomp-unconfined": {podSC: `{seccompProfile: {type: Unconfined}}`, script: statusScript,
			want: []any{"Seccomp:\t0"}},
		"user-and-groups": {podSC: `{runAsUser: 1000, runAsGroup: 3000, supplementalGroups: [4000], fsGroup: 2000}`, script: idScript,
			want: []any{"uid=1000 gid=3000 groups=2000 3000 4000"}},
		"read-only-root": {sc: `{readOnlyRootFilesystem: true}`,
			script: fmt.Sprintf("touch %s 2>&1 || echo root-not-writable; touch %s/x && echo data-writable", readOnlyProbe, dataPath("read-only-root")),
			want:   []any{re(`Read-only file system$`), "root-not-writable", "data-writable"}},
		"own-pid-namespace": {script: pidScript, want: []any{re(`^procs=[1-9]$`), "pid1=" + pid1, "host-pid-hidden"}},
		"host-pid":          {hostPID: true, script: pidScript, want: []any{"host-pid-visible"}},
		"sys-read-only":     {script: viewScript, want: []any{"sys=ro"}},
		"privileged-sys":    {sc: `{privileged: true}`, script: viewScript, want: []any{"sys=rw"}},
		"masked-proc-paths": {script: viewScript, want: []any{"keys=masked sys-firmware-entries=0 proc-sys=ro"}},
	}
}

// TestSecurityContext: each field of a securityContext shows, from inside
// the container, what containerd gives a kubelet's container: the
// capabilities (default, drop ALL, add, privileged), no_new_privs, the
// seccomp mode, the user and groups, a read-only root with writable
// volumes, a PID namespace of its own unless hostPID, /sys read-only unless
// privileged, and the masked and read-only /proc paths.
func TestSecurityContext(t *testing.T) {
	needRoot(t)
	hostCaps := hostCapBnd(t)
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		probe := "/podward-e2e-read-only-" + strconv.Itoa(os.Getpid())
		if !rt.IsCRI() {
			// Should the root be writable after all, leave no file on the host.
			t.Cleanup(func() { os.Remove(probe) })
		}
		for name, c := range secCases(rt, probe, hostCaps) {
			t.Run(name, func(t *testing.T) {
				if rt.IsCRI() && c.criSkip != "" {
					t.Skip(c.criSkip)
				}
				t.Parallel()
				r := rt.run(t, "-f", rt.manifest(t, t.TempDir(), secPod, map[string]string{
					"Name": "sec-" + name, "PodSC": c.podSC, "SC": c.sc, "HostPID": strconv.FormatBool(c.hostPID),
					"Script": strconv.Quote(c.script), "TestPID": strconv.Itoa(os.Getpid()), "Data": dataPath(name),
				}))
				r.assertCode(t, 0)
				for _, w := range c.want {
					r.mustFind(t, appLine(t, w))
				}
			})
		}
	})
}

// dataPath is where pod "sec-"+name mounts its volume: a path of its own
// (see secPod).
func dataPath(name string) string {
	return fmt.Sprintf("/podward-e2e-%d-%s", os.Getpid(), name)
}

// appLine matches the output line of container app whose text is w (a
// string) or matches w (a *regexp.Regexp).
func appLine(t *testing.T, w any) matcher {
	t.Helper()
	switch w := w.(type) {
	case string:
		return output("app", w)
	case matcher:
		expr, anchored := strings.CutPrefix(w.String(), "^")
		if !anchored {
			expr = ".*" + expr
		}
		return re(`^app *\| ` + expr)
	}
	t.Fatalf("appLine: want a string or a *regexp.Regexp, got %T", w)
	return nil
}

// hostCapBnd is the host's bounding set, as the test's own /proc/self/status
// prints it: what a privileged container gets, on both runtimes.
func hostCapBnd(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "CapBnd:"); ok {
			return strings.TrimSpace(v)
		}
	}
	t.Fatal("no CapBnd in /proc/self/status")
	return ""
}

// nonRootPod asks for a non-root user and runs as root.
const nonRootPod = `
apiVersion: v1
kind: Pod
metadata:
  name: non-root
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo started"]
    securityContext: {runAsNonRoot: true, runAsUser: 0}
`

// TestSecurityRunAsNonRoot: runAsNonRoot with runAsUser 0 does not start
// the container; `podward run` reports the kubelet's message as the
// container's Failed event.
func TestSecurityRunAsNonRoot(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		p := rt.start(t, "-f", rt.manifest(t, t.TempDir(), nonRootPod, nil))
		p.waitLine(t, re(`Warning Failed spec\.containers\{app\} Error: .*container's runAsUser breaks non-root policy`), lineTimeout)
		r, _ := p.signalAndWait(t, syscall.SIGINT)
		if i := r.index(contains("Started container app")); i >= 0 {
			t.Errorf("the container started: %q", r.lines[i].text)
		}
		if i := r.index(output("app", "started")); i >= 0 {
			t.Errorf("the container ran: %q", r.lines[i].text)
		}
	})
}

// TestSecurityRunAsNonRootReason: the container that runAsNonRoot keeps
// from starting waits with the kubelet's reason, CreateContainerConfigError,
// and its message.
func TestSecurityRunAsNonRootReason(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		a := startAgent(t, rt.Args...)
		a.apply("non-root", rt.manifest(t, t.TempDir(), nonRootPod, nil))
		a.waitPod("non-root", "jsonpath={.status.containerStatuses[0].state.waiting.reason}=CreateContainerConfigError", lineTimeout)
		msg := a.mustCLI("get", "pod", "non-root", "-o", "jsonpath={.status.containerStatuses[0].state.waiting.message}")
		if !strings.Contains(msg, "container's runAsUser breaks non-root policy") {
			t.Errorf("waiting message %q, want the kubelet's \"container's runAsUser breaks non-root policy\"", msg)
		}
	})
}

// refusedPod is a pod of one container with the pod-level fields PodSpec
// and the container's securityContext SC (YAML flow style, or empty).
const refusedPod = `
apiVersion: v1
kind: Pod
metadata:
  name: refused
spec:
  restartPolicy: Never
{{- with .PodSpec}}
  {{.}}
{{- end}}
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo started"]
{{- with .SC}}
    securityContext: {{.}}
{{- end}}
`

// TestSecurityRefusedOnProcessRuntime: what the process runtime cannot
// honour it refuses, naming the field, before any container starts:
// `podward run` exits 2 with the field path on stderr. A Localhost seccomp
// profile is refused by the CRI runtime too (podward keeps no profiles).
func TestSecurityRefusedOnProcessRuntime(t *testing.T) {
	needRoot(t)
	cases := map[string]struct{ podSpec, sc, want string }{
		"seccomp-localhost": {sc: `{seccompProfile: {type: Localhost, localhostProfile: profiles/audit.json}}`,
			want: `spec.containers[0].securityContext.seccompProfile.type: Unsupported value: "Localhost"`},
		"pod-seccomp-localhost": {podSpec: `securityContext: {seccompProfile: {type: Localhost, localhostProfile: profiles/audit.json}}`,
			want: `spec.securityContext.seccompProfile.type: Unsupported value: "Localhost"`},
		"apparmor": {sc: `{appArmorProfile: {type: RuntimeDefault}}`,
			want: `spec.containers[0].securityContext.appArmorProfile.type: Unsupported value: "RuntimeDefault"`},
		"sysctls": {podSpec: `securityContext: {sysctls: [{name: kernel.shm_rmid_forced, value: "1"}]}`,
			want: `spec.securityContext.sysctls: Forbidden`},
		"share-process-namespace": {podSpec: `shareProcessNamespace: true`,
			want: `spec.shareProcessNamespace: Unsupported value: true`},
		"host-users-false": {podSpec: `hostUsers: false`,
			want: `spec.hostUsers: Unsupported value: false`},
		"unknown-capability": {sc: `{capabilities: {add: [NOT_A_CAP]}}`,
			want: `spec.containers[0].securityContext.capabilities.add[0]: Unsupported value: "NOT_A_CAP"`},
	}
	rt := runtimeEnv{bintest.Process()}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := rt.run(t, "-f", rt.manifest(t, t.TempDir(), refusedPod, map[string]string{"PodSpec": c.podSpec, "SC": c.sc}))
			r.assertCode(t, 2)
			if !strings.Contains(r.stderr, c.want) {
				t.Errorf("stderr %q, want it to name %q", r.stderr, c.want)
			}
			if i := r.index(contains("started")); i >= 0 {
				t.Errorf("the container ran: %q", r.lines[i].text)
			}
		})
	}
}

// hiddenPod lists the agent's state directory and looks for its socket:
// covered with /dev/null (it is in a directory others may share), the path
// is no socket any more.
const hiddenPod = `
apiVersion: v1
kind: Pod
metadata:
  name: hidden
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c", "echo root-entries=$(ls -A {{.Root}} 2>/dev/null | wc -l); if [ -S {{.Socket}} ]; then echo socket-visible; else echo socket-hidden; fi"]
`

// TestSecurityAgentStateHidden: on the process runtime, whose containers
// see the host's filesystem, the agent's state directory (--root) is an
// empty directory in the container's view and its socket is not there to
// connect to (the directory of the socket is covered, and here the root is
// in it: the root is not there at all).
func TestSecurityAgentStateHidden(t *testing.T) {
	needRoot(t)
	rt := runtimeEnv{bintest.Process()}
	a := startAgent(t, rt.Args...)
	root := filepath.Join(a.dir, "root")
	if entries, err := os.ReadDir(root); err != nil || len(entries) == 0 {
		t.Fatalf("the agent's state directory %s on the host: %d entries, %v; want some", root, len(entries), err)
	}
	if !fileExists(a.socket) {
		t.Fatalf("the agent's socket %s is not on the host", a.socket)
	}
	a.apply("hidden", rt.manifest(t, t.TempDir(), hiddenPod, map[string]string{"Root": root, "Socket": a.socket}))
	a.waitPod("hidden", "jsonpath={.status.phase}=Succeeded", lineTimeout)
	if got, want := a.mustCLI("logs", "hidden"), "root-entries=0\nsocket-hidden\n"; got != want {
		t.Errorf("the container saw %q, want %q", got, want)
	}
}
