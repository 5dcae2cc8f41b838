package crash

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/test/internal/bintest"
)

// podwardBin is the binary built once by TestMain, and login1Bin the
// stand-in logind (test/internal/login1standin) of the logind test.
var podwardBin, login1Bin string

func TestMain(m *testing.M) {
	os.Exit(bintest.Main(m, "crash", &podwardBin, bintest.Program{Pkg: "github.com/podward/podward/test/internal/login1standin", Bin: &login1Bin}))
}

// Deadlines. They only bound waits on conditions: a passing test never
// waits for one to expire.
const (
	// readyTimeout bounds the wait for the agent's readiness line.
	readyTimeout = 15 * time.Second
	// exitTimeout bounds the wait for the agent to exit once signalled.
	exitTimeout = 15 * time.Second
	// cliTimeout bounds one CLI command that is not a wait.
	cliTimeout = 30 * time.Second
	// recordTimeout bounds the wait for a container's record line.
	recordTimeout = 15 * time.Second
	// goneTimeout bounds the wait for processes to exit once they should.
	goneTimeout = 10 * time.Second
	// lingerTimeout is how long processes killed a moment ago get to
	// finish dying before the test calls them left over.
	lingerTimeout = 3 * time.Second
)

// logsEnv, when set, makes every test print its diagnostics (the agents'
// logs, the record file), not only those that fail.
const logsEnv = "PODWARD_CRASH_LOGS"

// readyLine is what `podward serve` prints on stderr once it serves.
const readyLine = "podward: agent serving on "

// env is one test's world: its own directory, whose path is in the command
// line of every process the test starts (the marker), an agent on a state
// root in it, the record file the containers append to, and a directory
// for the trigger files the test creates to make containers go on.
type env struct {
	t      *testing.T
	dir    string // the marker, with a trailing slash
	root   string // --root
	socket string // --socket
	rec    string // the record file
	trig   string // the trigger directory

	// rt is the runtime the agent runs containers on. On the CRI runtime
	// every container mounts the test's directory at the same path, so
	// that scripts find the record file and triggers there.
	rt bintest.Runtime
	// args are more flags of every agent of the test; environ is more of
	// its environment ("KEY=value").
	args    []string
	environ []string

	agent *agentProc // nil while the agent is down
	gen   int        // agents started so far
	logs  []string   // the agents' stderr files, in start order
}

// agentProc is one run of `podward serve`.
type agentProc struct {
	cmd   *exec.Cmd
	ready chan struct{} // closed when the readiness line was read
	done  chan struct{} // closed when the process exited (and was reaped)
	state *os.ProcessState
}

// newEnv makes a test's world and starts its first agent. The test's
// cleanup prints the agents' logs and the record file if it failed, then
// kills, by the marker, whatever process of the test is still there.
func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvOn(t, bintest.Process())
}

// newEnvOn is newEnv with the agent on runtime rt.
func newEnvOn(t *testing.T, rt bintest.Runtime) *env {
	t.Helper()
	return newEnvArgs(t, rt)
}

// newEnvArgs is newEnvOn with args added to every agent's command line.
func newEnvArgs(t *testing.T, rt bintest.Runtime, args ...string) *env {
	t.Helper()
	e := newStoppedEnv(t, rt, args...)
	e.start()
	return e
}

// newStoppedEnv is newEnvArgs without starting the agent: the test sets up
// its root first (a small filesystem, say), then calls start.
func newStoppedEnv(t *testing.T, rt bintest.Runtime, args ...string) *env {
	t.Helper()
	dir := t.TempDir()
	e := &env{
		t:    t,
		rt:   rt,
		args: args,
		dir:  dir + "/",
		root: filepath.Join(dir, "root"),
		rec:  filepath.Join(dir, "rec", "log"),
		trig: filepath.Join(dir, "trig"),
	}
	// A unix socket path must fit in 108 bytes.
	e.socket = filepath.Join(dir, "agent.sock")
	if len(e.socket) > 100 {
		short, err := os.MkdirTemp("", "pwc-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(short) })
		e.socket = filepath.Join(short, "agent.sock")
	}
	for _, d := range []string{filepath.Dir(e.rec), e.trig} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv(logsEnv) != "" {
			e.dumpDiagnostics()
		}
		if n := killMarked(t, e.dir, 0); n > 0 {
			t.Logf("cleanup: killed %d leftover process(es) of the test", n)
		}
	})
	return e
}

// start starts an agent on the test's root and socket and waits until it
// serves.
func (e *env) start() {
	t := e.t
	t.Helper()
	if e.agent != nil {
		t.Fatal("start: an agent is running already")
	}
	e.gen++
	logPath := filepath.Join(e.dir, fmt.Sprintf("agent-%d.log", e.gen))
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	e.logs = append(e.logs, logPath)
	pr, pw, err := os.Pipe()
	if err != nil {
		logFile.Close()
		t.Fatal(err)
	}
	a := &agentProc{ready: make(chan struct{}), done: make(chan struct{})}
	args := append([]string{"serve", "--root", e.root, "--socket", e.socket, "-v"}, e.rt.Args...)
	a.cmd = exec.Command(podwardBin, append(args, e.args...)...)
	a.cmd.Env = append(os.Environ(), e.environ...)
	// Files, not writers: no copying goroutine that a process holding
	// the pipe could keep alive.
	a.cmd.Stdout, a.cmd.Stderr = pw, pw
	if err := a.cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		logFile.Close()
		t.Fatalf("start podward serve: %v", err)
	}
	pw.Close()
	go func() {
		defer logFile.Close()
		defer pr.Close()
		ready := false
		bintest.ScanLines(pr, logFile, func(text string) {
			fmt.Fprintln(logFile, text)
			if !ready && strings.HasPrefix(text, readyLine) {
				ready = true
				close(a.ready)
			}
		})
	}()
	go func() {
		_ = a.cmd.Wait()
		a.state = a.cmd.ProcessState
		close(a.done)
	}()
	e.agent = a

	timer := time.NewTimer(readyTimeout)
	defer timer.Stop()
	select {
	case <-a.ready:
		t.Logf("agent #%d serving (pid %d)", e.gen, a.cmd.Process.Pid)
	case <-a.done:
		e.agent = nil
		t.Fatalf("agent #%d exited (%v) before it served; its log:\n%s", e.gen, a.state, readFile(logPath))
	case <-timer.C:
		t.Fatalf("agent #%d did not serve within %v; its log:\n%s", e.gen, readyTimeout, readFile(logPath))
	}
}

// crash kills the agent with SIGKILL, the agent process only: its
// containers (in sessions of their own, under their shims) live on.
func (e *env) crash() {
	e.t.Helper()
	e.signalAgent(syscall.SIGKILL)
}

// stop stops the agent the way a user would (SIGTERM); containers live on.
func (e *env) stop() {
	e.t.Helper()
	e.signalAgent(syscall.SIGTERM)
}

// restart starts the agent again on the same root and socket.
func (e *env) restart() {
	e.t.Helper()
	e.start()
}

func (e *env) signalAgent(sig syscall.Signal) {
	t := e.t
	t.Helper()
	a := e.agent
	if a == nil {
		t.Fatalf("send %v to the agent: it is not running", sig)
	}
	if err := a.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("send %v to the agent: %v", sig, err)
	}
	timer := time.NewTimer(exitTimeout)
	defer timer.Stop()
	select {
	case <-a.done:
	case <-timer.C:
		t.Fatalf("the agent (pid %d) did not exit within %v of %v", a.cmd.Process.Pid, exitTimeout, sig)
	}
	e.agent = nil
	t.Logf("agent #%d (pid %d) ended by %v: %v", e.gen, a.cmd.Process.Pid, sig, a.state)
}

// crashWhileItExits kills the agent (see crash), then lets the container
// name, whose main process is pid and which waits on its trigger (see
// exitOnTrigger), exit while the agent is down: it waits for the "exit
// NAME" record and for the container and its shim to be gone. The shim
// records the exit before it exits, for the restarted agent to find.
func (e *env) crashWhileItExits(name string, pid int) {
	e.t.Helper()
	shim := shimOf(e.t, pid)
	e.crash()
	e.trigger(name)
	e.waitRecord("exit " + name)
	e.mustBeGone(name+" and its shim, while the agent is down", []int{pid, shim}, goneTimeout)
}

// agentPid is the running agent's PID, 0 when it is down.
func (e *env) agentPid() int {
	if e.agent == nil {
		return 0
	}
	return e.agent.cmd.Process.Pid
}

// dumpDiagnostics logs what helps to understand a failure: every agent's
// log, the record file, and the pods as the agent shows them.
func (e *env) dumpDiagnostics() {
	t := e.t
	for i, path := range e.logs {
		t.Logf("--- log of agent #%d (%s):\n%s", i+1, path, readFile(path))
	}
	t.Logf("--- record file:\n%s", readFile(e.rec))
	if e.agent != nil {
		// Short: the agent may be stopped (SIGSTOP).
		if out, err := e.cliWithin(5*time.Second, "get", "pods", "-o", "wide"); err == nil {
			t.Logf("--- get pods:\n%s", out)
		}
		if out, err := e.cliWithin(5*time.Second, "events"); err == nil {
			t.Logf("--- events:\n%s", out)
		}
	}
}

func readFile(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	return string(b)
}

// cli runs `podward ARGS...` against the test's agent and returns its
// stdout; on failure the error has the exit status and stderr.
func (e *env) cli(args ...string) (string, error) {
	return e.cliWithin(cliTimeout, args...)
}

func (e *env) cliWithin(within time.Duration, args ...string) (string, error) {
	return bintest.CLI(podwardBin, e.socket, within, args...)
}

// mustCLI is cli that fails the test on error.
func (e *env) mustCLI(args ...string) string {
	e.t.Helper()
	out, err := e.cli(args...)
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// apply creates pod through `podward apply -f`, from a JSON manifest.
func (e *env) apply(pod *v1.Pod) {
	t := e.t
	t.Helper()
	pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	// The scenarios record their processes' PIDs ($$, $!) and look for
	// them on the host: the host's PIDs.
	pod.Spec.HostPID = true
	if e.rt.IsCRI() && !slices.ContainsFunc(pod.Spec.Volumes, func(v v1.Volume) bool { return v.Name == testDirVolume }) {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: testDirVolume, VolumeSource: v1.VolumeSource{
			HostPath: &v1.HostPathVolumeSource{Path: strings.TrimSuffix(e.dir, "/")},
		}})
	}
	data, err := json.MarshalIndent(pod, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(e.dir, pod.Name+".json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e.mustCLI("apply", "-f", path)
}

// getPod returns the pod as `podward get pod NAME -o json` shows it.
func (e *env) getPod(name string) *v1.Pod {
	t := e.t
	t.Helper()
	out := e.mustCLI("get", "pod", name, "-o", "json")
	var p v1.Pod
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("decode pod %s: %v\n%s", name, err, out)
	}
	return &p
}

// waitPod runs `podward wait pod/NAME --for=COND` and fails the test when
// the condition does not hold within.
func (e *env) waitPod(name, cond string, within time.Duration) {
	t := e.t
	t.Helper()
	_, err := e.cliWithin(within+10*time.Second, "wait", "pod/"+name, "--for="+cond, "--timeout", within.String())
	if err != nil {
		t.Fatalf("pod %s: %v", name, err)
	}
}

// watchPod follows `podward get pod NAME -w -o json` until ok holds for
// the pod, for conditions `podward wait` cannot express (the defer
// containers' statuses are JSON inside an annotation), and returns it.
func (e *env) watchPod(name, what string, ok func(*v1.Pod) bool, within time.Duration) *v1.Pod {
	t := e.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, podwardBin, "get", "pod", name, "-w", "-o", "json")
	cmd.Env = append(os.Environ(), "PODWARD_SOCKET="+e.socket)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("podward get -w: %v", err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	dec := json.NewDecoder(out)
	var last *v1.Pod
	for {
		var p v1.Pod
		if err := dec.Decode(&p); err != nil {
			cancel()
			_ = cmd.Wait()
			t.Fatalf("pod %s: no %s within %v (watch: %v; stderr: %s); last seen: %+v",
				name, what, within, err, strings.TrimSpace(stderr.String()), last)
		}
		last = &p
		if ok(&p) {
			return &p
		}
	}
}

// waitDeferRunning waits until the pod's status shows its defer container
// name running: the agent has then recorded the start (it checkpoints
// before it publishes).
func (e *env) waitDeferRunning(pod, name string) {
	t := e.t
	t.Helper()
	e.watchPod(pod, "running defer container "+name, func(p *v1.Pod) bool {
		for _, st := range deferStatuses(t, p) {
			if st.Name == name && st.State.Running != nil {
				return true
			}
		}
		return false
	}, recordTimeout)
}

// deleteAsync asks for the deletion of a pod and returns at once.
func (e *env) deleteAsync(name string) {
	e.t.Helper()
	e.mustCLI("delete", "pod", name, "--wait=false")
}

// finish ends a test: it deletes every pod (their defer containers run,
// which must end on their own), stops the agent, and checks that no
// process of the test is left.
func (e *env) finish() {
	t := e.t
	t.Helper()
	if e.agent == nil {
		e.restart()
	}
	out := e.mustCLI("get", "pods", "-o", "json")
	var list v1.PodList
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decode pod list: %v\n%s", err, out)
	}
	for _, p := range list.Items {
		if _, err := e.cli("delete", "pod", p.Name, "--timeout", "30s"); err != nil {
			t.Errorf("finish: %v", err)
		}
	}
	e.stop()
	e.assertNoProcesses("after every pod was deleted and the agent stopped", 0)
}

// assertNoProcesses fails the test when a process with the test's marker
// in its command line (other than except) is still there a moment after.
func (e *env) assertNoProcesses(when string, except int) {
	t := e.t
	t.Helper()
	pids := markedProcesses(e.dir, except)
	if len(pids) == 0 {
		return
	}
	// A process killed a moment ago may still be on its way out.
	left := waitGone(pids, e.dir, lingerTimeout)
	for _, pid := range left {
		t.Errorf("%s: process %d is still there: %s", when, pid, bintest.Cmdline(pid))
	}
	if len(left) == 0 {
		t.Logf("%s: %d process(es) were still exiting; gone within %v", when, len(pids), lingerTimeout)
	}
}

// The record file.

// script makes a container's bash script: {rec} is the record file and
// {trig} the trigger directory. Both are in the test's directory, so the
// container's command line carries the test's marker.
func (e *env) script(s string) string {
	return strings.NewReplacer("{rec}", e.rec, "{trig}", e.trig).Replace(s)
}

// testDirVolume is the volume of the test's directory on the CRI runtime.
const testDirVolume = "test-dir"

// container is a bash container running script (see env.script).
func (e *env) container(name, script string) v1.Container {
	c := v1.Container{Name: name, Image: "bash", Command: []string{e.rt.Bash, "-c", e.script(script)}}
	if e.rt.IsCRI() {
		dir := strings.TrimSuffix(e.dir, "/")
		c.VolumeMounts = []v1.VolumeMount{{Name: testDirVolume, MountPath: dir}}
	}
	return c
}

// trigger creates the trigger file name, on which a container waits.
func (e *env) trigger(name string) {
	e.t.Helper()
	if err := os.WriteFile(filepath.Join(e.trig, name), nil, 0o644); err != nil {
		e.t.Fatal(err)
	}
	e.t.Logf("triggered %s", name)
}

// records returns the complete lines of the record file so far.
func (e *env) records() []string {
	data, err := os.ReadFile(e.rec)
	if err != nil {
		return nil
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i]
	} else {
		return nil
	}
	return strings.Split(string(data), "\n")
}

// waitRecords waits, watching the record file's directory with inotify,
// until ok holds for the record file's lines, and returns them.
func (e *env) waitRecords(what string, ok func([]string) bool, within time.Duration) []string {
	e.t.Helper()
	var lines []string
	e.waitInDir(filepath.Dir(e.rec), what, func() bool {
		lines = e.records()
		return ok(lines)
	}, func() string { return "records:\n" + strings.Join(lines, "\n") }, within)
	return lines
}

// waitInDir waits until cond holds, checking it again whenever an entry of
// dir is created, written or renamed into it (inotify), for at most
// within. On failure, detail (if not nil) says what was seen.
func (e *env) waitInDir(dir, what string, cond func() bool, detail func() string, within time.Duration) {
	t := e.t
	t.Helper()
	ok, err := bintest.WaitInDir(dir, cond, within)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		msg := ""
		if detail != nil {
			msg = "; " + detail()
		}
		t.Fatalf("no %s within %v%s", what, within, msg)
	}
}

// waitRecord waits for a record line that starts with prefix and returns
// the first one.
func (e *env) waitRecord(prefix string) string {
	e.t.Helper()
	lines := e.waitRecords(fmt.Sprintf("record %q", prefix), func(lines []string) bool {
		return indexOf(lines, prefix) >= 0
	}, recordTimeout)
	return lines[indexOf(lines, prefix)]
}

// waitStart waits for the record "start NAME PID" and returns the PID.
func (e *env) waitStart(name string) int {
	e.t.Helper()
	return recordPID(e.t, e.waitRecord("start "+name+" "))
}

// indexOf is the index of the first line that starts with prefix, or -1.
func indexOf(lines []string, prefix string) int {
	for i, l := range lines {
		if strings.HasPrefix(l, prefix) {
			return i
		}
	}
	return -1
}

// count is how many lines start with prefix.
func count(lines []string, prefix string) int {
	n := 0
	for _, l := range lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// assertNoRecord stops the test if a record line starts with prefix; why
// says what such a line would mean.
func (e *env) assertNoRecord(prefix, why string) {
	e.t.Helper()
	if lines := e.records(); count(lines, prefix) != 0 {
		e.t.Fatalf("%s: %q", why, lines)
	}
}

// recordPID reads the PID at the end of a record line.
func recordPID(t *testing.T, line string) int {
	t.Helper()
	f := strings.Fields(line)
	pid, err := strconv.Atoi(f[len(f)-1])
	if err != nil || pid <= 0 {
		t.Fatalf("no PID in record %q", line)
	}
	return pid
}

// assertCounts checks how many lines start with each prefix: the "no double
// start" rule, among others.
func (e *env) assertCounts(want map[string]int) {
	t := e.t
	t.Helper()
	lines := e.records()
	for prefix, n := range want {
		if got := count(lines, prefix); got != n {
			t.Errorf("%d records %q, want %d; records:\n%s", got, prefix, n, strings.Join(lines, "\n"))
		}
	}
}

// Processes.

// markedProcesses lists the live processes whose command line contains
// marker, except except (0: none).
func markedProcesses(marker string, except int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var pids []int
	for _, ent := range entries {
		pid, err := strconv.Atoi(ent.Name())
		if err != nil || pid == self || pid == except {
			continue
		}
		if bintest.ProcessRuns(pid, marker) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// shimOf returns the PID of the shim of the container whose main process
// is pid: its parent, whose command line says it is a shim.
func shimOf(t *testing.T, pid int) int {
	t.Helper()
	_, ppid, ok := bintest.ProcStat(pid)
	if !ok {
		t.Fatalf("process %d is gone: cannot find its shim", pid)
	}
	if cl := bintest.Cmdline(ppid); !strings.HasPrefix(cl, "podward-shim ") {
		t.Fatalf("the parent %d of container process %d is not a shim: %q", ppid, pid, cl)
	}
	return ppid
}

// pidfds opens a pidfd for each pid that is still the process with marker
// in its command line; the others are gone already.
func pidfds(pids []int, marker string) map[int]int {
	fds := map[int]int{}
	for _, pid := range pids {
		fd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			continue // ESRCH: gone
		}
		// The pidfd pins the process: check it is still the one meant
		// (and not a new process that reused the PID).
		if !bintest.ProcessRuns(pid, marker) {
			unix.Close(fd)
			continue
		}
		fds[pid] = fd
	}
	return fds
}

// waitGone waits until each of pids (processes whose command line has
// marker) has exited, for at most within, through pidfds (which turn
// readable at the exit); it returns those that did not exit.
func waitGone(pids []int, marker string, within time.Duration) []int {
	fds := pidfds(pids, marker)
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	deadline := time.Now().Add(within)
	for len(fds) > 0 {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		var polls []unix.PollFd
		var order []int
		for pid, fd := range fds {
			polls = append(polls, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
			order = append(order, pid)
		}
		if _, err := unix.Poll(polls, int(left/time.Millisecond)+1); err != nil && !errors.Is(err, unix.EINTR) {
			break
		}
		for i, p := range polls {
			if p.Revents != 0 {
				unix.Close(fds[order[i]])
				delete(fds, order[i])
			}
		}
	}
	var left []int
	for pid := range fds {
		left = append(left, pid)
	}
	return left
}

// mustBeGone fails the test unless every one of pids exits within.
func (e *env) mustBeGone(what string, pids []int, within time.Duration) {
	t := e.t
	t.Helper()
	start := time.Now()
	if left := waitGone(pids, e.dir, within); len(left) > 0 {
		for _, pid := range left {
			t.Errorf("%s: process %d still runs after %v: %s", what, pid, within, bintest.Cmdline(pid))
		}
		t.FailNow()
	}
	t.Logf("%s: processes %v gone after %v", what, pids, time.Since(start).Round(time.Millisecond))
}

// killMarked kills with SIGKILL, through pidfds, every process whose
// command line has marker (except except), waits for them to exit and
// returns how many there were.
func killMarked(t *testing.T, marker string, except int) int {
	pids := markedProcesses(marker, except)
	if len(pids) == 0 {
		return 0
	}
	fds := pidfds(pids, marker)
	for pid, fd := range fds {
		if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
			t.Logf("kill leftover %d: %v", pid, err)
		}
		unix.Close(fd)
	}
	if left := waitGone(pids, marker, goneTimeout); len(left) > 0 {
		t.Errorf("leftover processes %v survived SIGKILL", left)
	}
	return len(pids)
}

// Status helpers.

// containerStatus finds a container's status by name in list.
func containerStatus(t *testing.T, list []v1.ContainerStatus, name string) v1.ContainerStatus {
	t.Helper()
	for _, st := range list {
		if st.Name == name {
			return st
		}
	}
	t.Fatalf("no status for container %q in %+v", name, list)
	return v1.ContainerStatus{}
}

// assertExitedOnce checks the status of a container that exited while the
// agent was down, as the restarted agent shows it: terminated with code,
// its real exit code, and not restarted.
func assertExitedOnce(t *testing.T, st v1.ContainerStatus, code int32) {
	t.Helper()
	switch {
	case st.State.Terminated == nil:
		t.Errorf("%s: state %+v, want terminated", st.Name, st.State)
	case st.State.Terminated.ExitCode != code:
		t.Errorf("%s: exit code %d, want %d (its real one)", st.Name, st.State.Terminated.ExitCode, code)
	}
	if st.RestartCount != 0 {
		t.Errorf("%s: restartCount %d, want 0", st.Name, st.RestartCount)
	}
}

// deferStatuses decodes the defer containers' statuses from the pod's
// annotation.
func deferStatuses(t *testing.T, p *v1.Pod) []v1.ContainerStatus {
	t.Helper()
	raw, ok := p.Annotations[deferStatusesAnnotation]
	if !ok {
		return nil
	}
	var list []v1.ContainerStatus
	if err := json.Unmarshal([]byte(raw), &list); err != nil {
		t.Fatalf("decode %s: %v\n%s", deferStatusesAnnotation, err, raw)
	}
	return list
}

const (
	deferAnnotation         = "pod.alpha.kubernetes.io/defer-containers"
	deferStatusesAnnotation = "pod.alpha.kubernetes.io/defer-container-statuses"
)

// withDefer sets the pod's defer containers.
func withDefer(t *testing.T, p *v1.Pod, cs ...v1.Container) {
	t.Helper()
	data, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[deferAnnotation] = string(data)
}
