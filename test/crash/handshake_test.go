package crash

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/runtime/process/shim"
	"github.com/podward/podward/test/internal/bintest"
)

// The worst moment of all: the agent dies while a container starts, after
// the container's process runs its command but before the agent confirmed
// the start to the container's shim (package shim's handshake). The
// container has run: the agent must adopt it after its restart, as any
// running container, and not start it again.
//
// The moment is a few hundred microseconds wide, so the test pins it
// (white-box, on the process runtime's layout under --root):
//
//	the test makes the instance's log, ROOT/process/pods/UID/logs/NAME/0.log,
//	a FIFO: the new shim blocks opening it, before it starts the container
//	── the shim wrote shim.json ──▶ the test stops the agent (SIGSTOP): it
//	   waits for the shim's report and cannot confirm anything
//	── the test opens the FIFO ──▶ the shim starts the container, reports,
//	   waits for the agent's answer; the container runs its command (its
//	   record line)
//	── the test kills the agent (SIGKILL) ──▶ restart ──▶ check
//
// The test keeps the FIFO drained, so the container's output never blocks.
func TestCrashDuringStartHandshake(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		pod       func(e *env) *v1.Pod
		container string // the container whose start is caught
		// ready brings the pod to just before the container's start.
		ready func(e *env)
		// startIt makes the agent start the container.
		startIt func(e *env)
		// record is the container's first record line (a prefix).
		record string
		// check checks the pod after the restart; pid is the container's.
		check func(t *testing.T, e *env, pid int)
	}{
		"regular container with restartPolicy Never": {
			pod: func(e *env) *v1.Pod {
				return &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "handshake"},
					Spec: v1.PodSpec{
						RestartPolicy:                 v1.RestartPolicyNever,
						TerminationGracePeriodSeconds: ptr(int64(10)),
						InitContainers: []v1.Container{e.container("gate",
							"echo start gate $BASHPID >> {rec}; "+exitOnTrigger("gate"))},
						Containers: []v1.Container{e.container("main", serving("main"))},
					},
				}
			},
			container: "main",
			ready: func(e *env) {
				e.waitStart("gate")
				e.waitPod("handshake", "jsonpath={.status.initContainerStatuses[0].state.running}", recordTimeout)
			},
			startIt: func(e *env) { e.trigger("gate") },
			record:  "start main ",
			check: func(t *testing.T, e *env, pid int) {
				p := e.watchPod("handshake", "Ready or Failed", func(p *v1.Pod) bool {
					return p.Status.Phase == v1.PodFailed || p.Status.Phase == v1.PodSucceeded || podReady(p)
				}, recordTimeout)
				st := containerStatus(t, p.Status.ContainerStatuses, "main")
				t.Logf("after the restart: phase %s; main: %+v", p.Status.Phase, st)
				if p.Status.Phase != v1.PodRunning || st.State.Running == nil {
					msg := ""
					if term := st.State.Terminated; term != nil {
						msg = term.Reason + ": " + term.Message
					}
					t.Errorf("pod phase %s, main %+v (%s); want Running with main adopted: it was running when the agent died",
						p.Status.Phase, st.State, msg)
				}
				if st.RestartCount != 0 {
					t.Errorf("main restartCount %d, want 0", st.RestartCount)
				}
				if !bintest.ProcessRuns(pid, e.dir) {
					t.Errorf("main's process %d, which ran when the agent died, was killed", pid)
				}
				e.assertCounts(map[string]int{"start gate ": 1, "exit gate": 1, "start main ": 1})
			},
		},
		"defer container": {
			pod: func(e *env) *v1.Pod {
				p := &v1.Pod{
					ObjectMeta: metav1.ObjectMeta{Name: "handshake"},
					Spec: v1.PodSpec{
						TerminationGracePeriodSeconds: ptr(int64(30)),
						Containers:                    []v1.Container{e.container("main", serving("main"))},
					},
				}
				withDefer(e.t, p, e.container("d", "echo defer d $BASHPID >> {rec}; "+exitOnTrigger("d")))
				return p
			},
			container: "d",
			ready: func(e *env) {
				e.waitStart("main")
				e.waitPod("handshake", "condition=Ready", recordTimeout)
			},
			startIt: func(e *env) { e.deleteAsync("handshake") },
			record:  "defer d ",
			check: func(t *testing.T, e *env, pid int) {
				e.waitDeferRunning("handshake", "d")
				p := e.getPod("handshake")
				for _, st := range deferStatuses(t, p) {
					t.Logf("after the restart: defer container %s: %+v", st.Name, st)
					if st.Name != "d" {
						continue
					}
					if st.RestartCount != 0 {
						msg := ""
						if term := st.LastTerminationState.Terminated; term != nil {
							msg = term.Reason + " (" + term.Message + ")"
						}
						t.Errorf("defer container d restartCount %d, want 0; its first instance, which was running when the agent died, ended with %s",
							st.RestartCount, msg)
					}
				}
				if !bintest.ProcessRuns(pid, e.dir) {
					t.Errorf("d's process %d, which ran when the agent died, was killed", pid)
				}
				e.trigger("d")
				e.waitPod("handshake", "delete", 20*time.Second)
				e.assertCounts(map[string]int{"start main ": 1, "defer d ": 1, "exit d": 1, "stop main": 1})
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.apply(tc.pod(e))
			tc.ready(e)

			uid := e.getPod("handshake").UID
			instances := filepath.Join(e.root, "process", "pods", string(uid), "instances")
			known := dirNames(t, instances)
			e.makeLogFIFO(uid, tc.container)

			tc.startIt(e)
			dir := e.waitNewInstance(instances, known, tc.container)
			e.waitInDir(dir, "shim.json of the new shim", func() bool {
				_, err := os.Stat(filepath.Join(dir, shim.ShimFile))
				return err == nil
			}, nil, recordTimeout)
			// The shim now blocks opening the log, before the container
			// starts: the agent cannot have confirmed the start.
			if err := e.agent.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatalf("stop the agent: %v", err)
			}
			t.Logf("agent stopped (SIGSTOP) while %s's shim waits for its log", tc.container)
			e.drainLogFIFO(uid, tc.container)
			pid := recordPID(t, e.waitRecord(tc.record))
			t.Logf("%s runs its command (pid %d); the agent has not confirmed its start", tc.container, pid)

			e.crash()
			e.restart()
			tc.check(t, e, pid)
			e.finish()
		})
	}
}

func podReady(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.PodReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

// logFIFO is the log of the first instance of container in the process
// runtime's layout.
func (e *env) logFIFO(uid types.UID, container string) string {
	return filepath.Join(e.root, "process", "pods", string(uid), "logs", container, "0.log")
}

// makeLogFIFO makes the log of container's first instance a FIFO, on which
// its shim will block until the test opens it.
func (e *env) makeLogFIFO(uid types.UID, container string) {
	t := e.t
	t.Helper()
	path := e.logFIFO(uid, container)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(path, 0o640); err != nil {
		t.Fatalf("mkfifo %s: %v", path, err)
	}
}

// drainLogFIFO opens the FIFO made by makeLogFIFO, which lets its shim go
// on, and reads it until the test ends. Opened for reading and writing, it
// never reports an end of file, and its open never blocks.
func (e *env) drainLogFIFO(uid types.UID, container string) {
	t := e.t
	t.Helper()
	f, err := os.OpenFile(e.logFIFO(uid, container), os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open the log FIFO: %v", err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 32*1024)
		for {
			if _, err := f.Read(buf); err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		f.Close() // ends the pending Read: the FIFO is in Go's poller
		<-done
	})
}

// waitNewInstance waits for the instance directory of container that is
// not in known, and returns its path. Only that one instance may start.
func (e *env) waitNewInstance(instances string, known map[string]bool, container string) string {
	t := e.t
	t.Helper()
	var dir string
	e.waitInDir(instances, "new instance directory", func() bool {
		for name := range dirNames(t, instances) {
			if !known[name] {
				dir = filepath.Join(instances, name)
				return true
			}
		}
		return false
	}, nil, recordTimeout)
	// The agent writes the spec before it starts the shim.
	var spec shim.Spec
	e.waitInDir(dir, "spec of the new instance", func() bool {
		data, err := os.ReadFile(filepath.Join(dir, shim.SpecFile))
		return err == nil && json.Unmarshal(data, &spec) == nil
	}, nil, recordTimeout)
	if spec.Container != container {
		t.Fatalf("the new instance %s is of container %q, want %q", dir, spec.Container, container)
	}
	return dir
}

// dirNames is the set of entry names of dir.
func dirNames(t *testing.T, dir string) map[string]bool {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, ent := range entries {
		names[ent.Name()] = true
	}
	return names
}
