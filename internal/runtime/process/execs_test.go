package process

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// execRecords lists the names in the root's execs directory.
func execRecords(t *testing.T, root string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, "execs"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestExecIsRecordedWhileItRuns(t *testing.T) {
	root := t.TempDir()
	h := newHarnessAt(t, root)
	pod := newPod(t, shell("app", "exit 0"))
	// The host's PIDs, which name the records; the root is out of the
	// exec's view, so the test reads the records while the exec waits.
	pod.Spec.HostPID = true
	h.prepare(pod)
	fifos := t.TempDir()
	pidFIFO, goFIFO := filepath.Join(fifos, "pid"), filepath.Join(fifos, "go")
	for _, f := range []string{pidFIFO, goFIFO} {
		if err := syscall.Mkfifo(f, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		out  []byte
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		out, code, err := h.r.Exec(context.Background(), pod, model.ContainerRef{Name: "app", Role: model.RoleMain},
			[]string{"/bin/sh", "-c", "echo $$ > " + pidFIFO + "; read x < " + goFIFO})
		done <- result{out, code, err}
	}()
	pid, err := os.ReadFile(pidFIFO) // returns once the command closed it
	if err != nil {
		t.Fatal(err)
	}
	if names := execRecords(t, root); len(names) != 1 || names[0] != strings.TrimSpace(string(pid))+".json" {
		t.Errorf("records %q while exec %s runs; want only its own, <its PID>.json", names, pid)
	}
	if err := os.WriteFile(goFIFO, []byte("go\n"), 0); err != nil {
		t.Fatal(err)
	}
	if res := <-done; res.err != nil || res.code != 0 {
		t.Fatalf("Exec = %q, %d, %v", res.out, res.code, res.err)
	}
	if names := execRecords(t, root); len(names) != 0 {
		t.Errorf("records %q after the exec; want none", names)
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// group is a process group as an exec leaves it: a leader, the test's
// child, and a child of the leader's in the background.
type group struct {
	leader *exec.Cmd
	child  int
	ident  shim.Ident // the leader's, taken while it ran
	stdin  *os.File   // the leader exits when it is closed
}

func startGroup(t *testing.T) *group {
	t.Helper()
	stdin, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, stdoutW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	cmd := exec.Command("/bin/sh", "-c", "sleep 300 </dev/null >/dev/null 2>&1 & echo $!; read x || :")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, stdoutW, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = cmd.Start()
	stdin.Close()
	stdoutW.Close()
	if err != nil {
		t.Fatal(err)
	}
	g := &group{leader: cmd, stdin: stdinW}
	t.Cleanup(func() {
		_ = unix.Kill(-cmd.Process.Pid, unix.SIGKILL)
		_ = unix.Kill(g.child, unix.SIGKILL)
		g.stdin.Close()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if g.child, err = strconv.Atoi(strings.TrimSpace(line)); err != nil || g.child <= 1 {
		t.Fatalf("the group's leader wrote %q, not its child's PID", line)
	}
	if g.ident, err = shim.IdentOf(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	return g
}

// endLeader makes the leader exit and reaps it; its child lives on in the
// group.
func (g *group) endLeader(t *testing.T) {
	t.Helper()
	g.stdin.Close()
	if err := g.leader.Wait(); err != nil {
		t.Fatalf("the group's leader: %v", err)
	}
}

// runs says whether pid runs (is not a zombie, nor gone).
func runs(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i >= 0 && !strings.HasPrefix(string(data[i+1:]), " Z")
}

func writeRecord(t *testing.T, root, name string, data []byte) {
	t.Helper()
	dir := filepath.Join(root, "execs")
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestNewKillsWhatExecsLeft(t *testing.T) {
	tests := map[string]struct {
		// record makes the record of g (the leader's identity) as the
		// case has it.
		record func(id shim.Ident) shim.Ident
		// leaderGone: the leader exited and was reaped before New.
		leaderGone bool
		killed     bool
	}{
		"leader and child run": {
			record: func(id shim.Ident) shim.Ident { return id },
			killed: true,
		},
		// What an exec leaves when the agent dies: its leader died with
		// the agent, its child keeps the group's ID from being reused.
		"leader gone, its child runs": {
			record:     func(id shim.Ident) shim.Ident { return id },
			leaderGone: true,
			killed:     true,
		},
		"record of another boot": {
			record: func(id shim.Ident) shim.Ident { id.BootID = "another-boot"; return id },
		},
		// As if the group had emptied and its ID gone to another process.
		"PID of another process": {
			record: func(id shim.Ident) shim.Ident { id.StartTime++; return id },
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			g := startGroup(t)
			data, err := json.Marshal(execRecord{Leader: tc.record(g.ident)})
			if err != nil {
				t.Fatal(err)
			}
			writeRecord(t, root, strconv.Itoa(g.ident.Pid)+".json", data)
			// An unfinished write and a damaged record go too.
			writeRecord(t, root, "."+strconv.Itoa(g.ident.Pid)+"-123", data[:5])
			writeRecord(t, root, "1.json", []byte("{"))
			if tc.leaderGone {
				g.endLeader(t)
			}

			newHarnessAt(t, root)
			if names := execRecords(t, root); len(names) != 0 {
				t.Errorf("records %q after New; want none", names)
			}
			if tc.killed {
				if !processGone(t, g.child) {
					t.Errorf("the group's child %d still runs", g.child)
				}
				if tc.leaderGone {
					return
				}
				if !processGone(t, g.ident.Pid) {
					t.Errorf("the group's leader %d still runs", g.ident.Pid)
					return
				}
				if err := g.leader.Wait(); err == nil || g.leader.ProcessState.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
					t.Errorf("the group's leader ended with %v, want SIGKILL", err)
				}
				return
			}
			for what, pid := range map[string]int{"leader": g.ident.Pid, "child": g.child} {
				if !runs(pid) {
					t.Errorf("the group's %s %d was killed", what, pid)
				}
			}
		})
	}
}

// TestExecDiesWithItsAgent: an exec whose agent is killed dies at once;
// its child in the background is left, until the next Runtime on the root
// kills it.
func TestExecDiesWithItsAgent(t *testing.T) {
	tests := map[string][]string{
		"without namespaces": {testAgentNoUTSEnv + "=1"},
		"in a UTS namespace": nil,
	}
	for name, env := range tests {
		t.Run(name, func(t *testing.T) {
			if env == nil && os.Geteuid() != 0 {
				t.Skip("needs root for a UTS namespace")
			}
			root := t.TempDir()
			fifo := mkfifo(t)
			uid := types.UID("uid-" + randomSuffix(t))
			script := "sleep 300 </dev/null >/dev/null 2>&1 & echo $$ $! > " + fifo + "; wait"
			agent, id := startTestAgent(t, root, uid, "exec sleep 300", append(env, testAgentExecEnv+"="+script)...)

			pids := make(chan string, 1)
			go func() {
				data, _ := os.ReadFile(fifo) // returns once the exec closed it
				pids <- string(data)
			}()
			var leader, child int
			select {
			case s := <-pids:
				f := strings.Fields(s)
				if len(f) == 2 {
					leader, _ = strconv.Atoi(f[0])
					child, _ = strconv.Atoi(f[1])
				}
				if leader <= 1 || child <= 1 {
					t.Fatalf("the exec wrote %q, not its PID and its child's", s)
				}
			case <-time.After(waitLimit):
				t.Fatal("the test agent's exec did not start")
			}
			t.Cleanup(func() { _ = unix.Kill(child, unix.SIGKILL) })
			if err := agent.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := agent.Wait(); err == nil {
				t.Fatal("the test agent exited normally")
			}
			if !processGone(t, leader) {
				_ = unix.Kill(-leader, unix.SIGKILL)
				t.Fatalf("the exec %d outlived its agent", leader)
			}
			if !runs(child) {
				t.Fatalf("the exec's child %d died with the agent; this test wants it left for New", child)
			}

			h := newHarnessAt(t, root)
			if !processGone(t, child) {
				t.Errorf("the exec's child %d still runs after New", child)
			}
			if names := execRecords(t, root); len(names) != 0 {
				t.Errorf("records %q after New; want none", names)
			}
			ctx := context.Background()
			if err := h.r.Signal(ctx, id, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			h.waitExit(id)
			if err := h.r.CleanupPod(ctx, &model.Pod{Pod: &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}}}); err != nil {
				t.Error(err)
			}
		})
	}
}

// pdeathsigEnv makes the test binary print its parent-death signal and
// exit (see TestMain).
const pdeathsigEnv = "_PODWARD_TEST_PRINT_PDEATHSIG"

// printPdeathsig prints the process's parent-death signal.
func printPdeathsig() int {
	var sig int32
	if err := unix.Prctl(unix.PR_GET_PDEATHSIG, uintptr(unsafe.Pointer(&sig)), 0, 0, 0); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(sig)
	return 0
}

// TestExecCommandDiesWithTheAgent: the command an exec runs, after the
// init helper's exec, still has the parent-death signal, which the kernel
// keeps only for the thread that set it: the helper must exec from its
// main thread.
func TestExecCommandDiesWithTheAgent(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t)
	c := shell("app", "exit 0")
	c.Env = []v1.EnvVar{{Name: pdeathsigEnv, Value: "1"}}
	pod := newPod(t, c)
	h.prepare(pod)
	ref := model.ContainerRef{Name: "app", Role: model.RoleMain}
	// A few times: which thread a Go program runs on is chance.
	for range 3 {
		out, code, err := h.r.Exec(context.Background(), pod, ref, []string{self})
		if err != nil || code != 0 || strings.TrimSpace(string(out)) != strconv.Itoa(int(unix.SIGKILL)) {
			t.Fatalf("Exec = %q, %d, %v; want the parent-death signal %d", out, code, err, unix.SIGKILL)
		}
	}
	if err := h.r.CleanupPod(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
}

// TestExecInAPIDNamespaceDiesWithItsAgent: an exec in a container of its
// own PID namespace is forked into it (its command sees the container's
// processes, the init helper as PID 1) and still dies with its agent: its
// helper gave itself the parent-death signal its starter could not.
func TestExecInAPIDNamespaceDiesWithItsAgent(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root for a PID namespace")
	}
	root := t.TempDir()
	fifo := mkfifo(t)
	uid := types.UID("uid-" + randomSuffix(t))
	// The shell stays the exec's main process (no exec): it runs when it
	// writes the FIFO, and is found by its command line.
	script := "tr '\\0' ' ' < /proc/1/cmdline > " + fifo + "; sleep " + randomSleep(t)
	agent, _ := startTestAgent(t, root, uid, "exec sleep 301", testAgentOwnPIDsEnv+"=1", testAgentExecEnv+"="+script)
	init := make(chan string, 1)
	go func() {
		data, _ := os.ReadFile(fifo) // returns once the exec closed it
		init <- string(data)
	}()
	select {
	case s := <-init:
		if !strings.HasPrefix(s, "podward-init") {
			t.Errorf("the exec's PID 1 runs %q, want the container's init helper", s)
		}
	case <-time.After(waitLimit):
		t.Fatal("the test agent's exec did not start")
	}
	exec := processWithArgs(t, "/bin/sh", "-c", script)
	if err := agent.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = agent.Wait()
	if !processGone(t, exec) {
		_ = unix.Kill(exec, unix.SIGKILL)
		t.Fatalf("the exec %d outlived its agent", exec)
	}
}
