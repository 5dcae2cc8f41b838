package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// What `podward run` does not show — a pod's conditions, a container's
// ready flag and restart count — the tests read from `podward serve`
// through the CLI: apply, wait, get -o json, events -o json, delete.

// agentReadyLine is what `podward serve` prints on stderr once it serves.
const agentReadyLine = "podward: agent serving on "

// cliTimeout bounds one CLI command that is not a wait.
const cliTimeout = 30 * time.Second

// agent is one `podward serve` of a test, on a state root and socket in the
// test's directory.
type agent struct {
	t      *testing.T
	dir    string
	socket string
	cmd    *exec.Cmd
	ready  chan struct{} // closed when the readiness line was read
	done   chan struct{} // closed when the process exited
	read   chan struct{} // closed when its output was read to the end
	out    *os.File      // the read end of its output

	mu   sync.Mutex
	log  strings.Builder // stdout and stderr
	pods []string        // applied, deleted by the cleanup
}

// startAgent starts `podward serve ARGS...` and waits until it serves. The
// test's cleanup deletes the pods the test applied (their containers live
// under shims that outlive the agent), stops the agent, and prints its log
// if the test failed.
func startAgent(t *testing.T, args ...string) *agent {
	t.Helper()
	return startAgentIn(t, t.TempDir(), args...)
}

// startAgentIn is startAgent with the state root and socket in dir, so
// that a test can start an agent again on the state an earlier one left
// (stop it first).
func startAgentIn(t *testing.T, dir string, args ...string) *agent {
	t.Helper()
	a := &agent{
		t:      t,
		dir:    dir,
		socket: filepath.Join(dir, "agent.sock"),
		ready:  make(chan struct{}),
		done:   make(chan struct{}),
		read:   make(chan struct{}),
	}
	// A unix socket path must fit in 108 bytes.
	if len(a.socket) > 100 {
		short, err := os.MkdirTemp("", "pwe-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(short) })
		a.socket = filepath.Join(short, "agent.sock")
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	a.out = pr
	a.cmd = exec.Command(podwardBin, append([]string{"serve", "--root", filepath.Join(dir, "root"), "--socket", a.socket, "-v"}, args...)...)
	// Files, not writers: no copying goroutine that a process holding the
	// pipe could keep alive.
	a.cmd.Stdout, a.cmd.Stderr = pw, pw
	if err := a.cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		t.Fatalf("start podward serve: %v", err)
	}
	pw.Close()
	go func() {
		defer close(a.read)
		ready := false
		bintest.ScanLines(pr, io.Discard, func(text string) {
			a.mu.Lock()
			a.log.WriteString(text + "\n")
			a.mu.Unlock()
			if !ready && strings.HasPrefix(text, agentReadyLine) {
				ready = true
				close(a.ready)
			}
		})
	}()
	go func() {
		_ = a.cmd.Wait()
		close(a.done)
	}()
	t.Cleanup(a.cleanup)

	timer := time.NewTimer(lineTimeout)
	defer timer.Stop()
	select {
	case <-a.ready:
		t.Logf("agent serving (pid %d)", a.cmd.Process.Pid)
	case <-a.done:
		t.Fatalf("podward serve exited before it served; its log:\n%s", a.logText())
	case <-timer.C:
		t.Fatalf("podward serve did not serve within %v; its log:\n%s", lineTimeout, a.logText())
	}
	return a
}

func (a *agent) logText() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.log.String()
}

// cleanup deletes the test's pods, stops the agent (SIGTERM, then SIGKILL)
// and waits until its output is read.
func (a *agent) cleanup() {
	t := a.t
	select {
	case <-a.done:
	default:
		if t.Failed() {
			for _, name := range a.pods {
				if out, err := a.cli("events", "--for", "pod/"+name); err == nil {
					t.Logf("events of pod %s:\n%s", name, out)
				}
			}
		}
		for _, name := range a.pods {
			if _, err := a.cli("delete", "pod", name, "--ignore-not-found", "--timeout", "20s"); err != nil {
				t.Errorf("cleanup: %v", err)
			}
		}
		for _, sig := range []os.Signal{syscall.SIGTERM, os.Kill} {
			_ = a.cmd.Process.Signal(sig)
			timer := time.NewTimer(10 * time.Second)
			select {
			case <-a.done:
			case <-timer.C:
			}
			timer.Stop()
			if isClosed(a.done) {
				break
			}
		}
		<-a.done
	}
	// A container that held the agent's output would keep the reader
	// going: cut it off.
	timer := time.NewTimer(5 * time.Second)
	select {
	case <-a.read:
	case <-timer.C:
		t.Errorf("the agent's output stayed open after it exited")
		a.out.Close()
		<-a.read
	}
	timer.Stop()
	a.out.Close()
	if t.Failed() {
		t.Logf("log of podward serve:\n%s", a.logText())
	}
}

// stop stops the agent with SIGTERM, as systemctl stop does, and waits
// until it exited; its containers keep running. The test fails if it does
// not exit within exitTimeout.
func (a *agent) stop() {
	t := a.t
	t.Helper()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(exitTimeout)
	defer timer.Stop()
	select {
	case <-a.done:
	case <-timer.C:
		t.Fatalf("podward serve did not exit within %v of SIGTERM", exitTimeout)
	}
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// cli runs `podward ARGS...` against the agent and returns its stdout; on
// failure the error has the exit status and stderr.
func (a *agent) cli(args ...string) (string, error) {
	return a.cliWithin(cliTimeout, args...)
}

func (a *agent) cliWithin(within time.Duration, args ...string) (string, error) {
	return bintest.CLI(podwardBin, a.socket, within, args...)
}

// mustCLI is cli that fails the test on error.
func (a *agent) mustCLI(args ...string) string {
	a.t.Helper()
	out, err := a.cli(args...)
	if err != nil {
		a.t.Fatal(err)
	}
	return out
}

// apply creates the pod name from the manifest file through `podward
// apply`; the cleanup deletes it.
func (a *agent) apply(name, manifest string) {
	a.t.Helper()
	a.pods = append(a.pods, name)
	a.mustCLI("apply", "-f", manifest)
}

// waitPod runs `podward wait pod/NAME --for=COND` and fails the test when
// the condition does not hold within.
func (a *agent) waitPod(name, cond string, within time.Duration) {
	t := a.t
	t.Helper()
	start := time.Now()
	if _, err := a.cliWithin(within+10*time.Second, "wait", "pod/"+name, "--for="+cond, "--timeout", within.String()); err != nil {
		status, _ := json.Marshal(a.getPod(name).Status)
		t.Fatalf("pod %s: %v; its status now: %s", name, err, status)
	}
	t.Logf("pod %s: %s after %v", name, cond, time.Since(start).Round(time.Millisecond))
}

// getPod returns the pod as `podward get pod NAME -o json` shows it.
func (a *agent) getPod(name string) pod {
	t := a.t
	t.Helper()
	out := a.mustCLI("get", "pod", name, "-o", "json")
	var p pod
	if err := json.Unmarshal([]byte(out), &p); err != nil {
		t.Fatalf("decode pod %s: %v\n%s", name, err, out)
	}
	return p
}

// events returns the pod's events, oldest first.
func (a *agent) events(name string) []event {
	t := a.t
	t.Helper()
	out := a.mustCLI("events", "--for", "pod/"+name, "-o", "json")
	var list struct {
		Items []event `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decode the events of pod %s: %v\n%s", name, err, out)
	}
	return list.Items
}

// pod is the part of a v1.Pod the tests look at (the suite imports only
// the standard library).
type pod struct {
	Metadata struct {
		DeletionGracePeriodSeconds *int64 `json:"deletionGracePeriodSeconds,omitempty"`
	} `json:"metadata"`
	Spec struct {
		ServiceAccountName string `json:"serviceAccountName"`
	} `json:"spec"`
	Status struct {
		Phase  string `json:"phase"`
		PodIP  string `json:"podIP"`
		PodIPs []struct {
			IP string `json:"ip"`
		} `json:"podIPs"`
		HostIP  string `json:"hostIP"`
		HostIPs []struct {
			IP string `json:"ip"`
		} `json:"hostIPs"`
		Reason     string `json:"reason"`
		Message    string `json:"message"`
		QOSClass   string `json:"qosClass"`
		Conditions []struct {
			Type    string `json:"type"`
			Status  string `json:"status"`
			Reason  string `json:"reason,omitempty"`
			Message string `json:"message,omitempty"`
		} `json:"conditions"`
		InitContainerStatuses []containerStatus `json:"initContainerStatuses"`
		ContainerStatuses     []containerStatus `json:"containerStatuses"`
	} `json:"status"`
}

type containerStatus struct {
	Name         string         `json:"name"`
	Ready        bool           `json:"ready"`
	Started      *bool          `json:"started"`
	RestartCount int32          `json:"restartCount"`
	State        containerState `json:"state"`
	LastState    containerState `json:"lastState"`
}

type containerState struct {
	Waiting *struct {
		Reason  string `json:"reason,omitempty"`
		Message string `json:"message,omitempty"`
	} `json:"waiting,omitempty"`
	Running *struct {
		StartedAt string `json:"startedAt,omitempty"`
	} `json:"running,omitempty"`
	Terminated *struct {
		ExitCode int32  `json:"exitCode"`
		Reason   string `json:"reason,omitempty"`
		Message  string `json:"message,omitempty"`
	} `json:"terminated,omitempty"`
}

// String is the status as JSON, for messages.
func (s containerStatus) String() string {
	b, _ := json.Marshal(s)
	return string(b)
}

// condition is the status of the pod's condition typ, "" if it has none.
func (p pod) condition(typ string) string {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status
		}
	}
	return ""
}

// container is the status of the container (regular or init) name.
func (p pod) container(t *testing.T, name string) containerStatus {
	t.Helper()
	for _, list := range [][]containerStatus{p.Status.ContainerStatuses, p.Status.InitContainerStatuses} {
		for _, st := range list {
			if st.Name == name {
				return st
			}
		}
	}
	status, _ := json.Marshal(p.Status)
	t.Fatalf("no status of container %q in %s", name, status)
	return containerStatus{}
}

// event is the part of a v1.Event the tests look at.
type event struct {
	Type           string `json:"type"`
	Reason         string `json:"reason"`
	Message        string `json:"message"`
	InvolvedObject struct {
		FieldPath string `json:"fieldPath"`
	} `json:"involvedObject"`
}

func (e event) String() string {
	return e.Type + " " + e.Reason + " " + e.InvolvedObject.FieldPath + " " + e.Message
}

// freePort returns a TCP port on 127.0.0.1 that nothing listened on a
// moment ago, for a container to listen on.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// touch creates file (empty).
func touch(t *testing.T, file string) {
	t.Helper()
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
}

// remove removes file.
func remove(t *testing.T, file string) {
	t.Helper()
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
}

// watchEvents follows `podward events --for pod/NAME -w -o json` until ok
// holds for the pod's events so far (oldest first), and returns them; the
// test fails if that does not happen within.
func (a *agent) watchEvents(name, what string, ok func([]event) bool, within time.Duration) []event {
	t := a.t
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	cmd := exec.CommandContext(ctx, podwardBin, "events", "--for", "pod/"+name, "-w", "-o", "json")
	cmd.Env = append(os.Environ(), "PODWARD_SOCKET="+a.socket)
	cmd.WaitDelay = 5 * time.Second
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("podward events -w: %v", err)
	}
	defer func() {
		cancel()
		_ = cmd.Wait()
	}()
	dec := json.NewDecoder(out)
	var evs []event
	for {
		if ok(evs) {
			return evs
		}
		var e event
		if err := dec.Decode(&e); err != nil {
			cancel()
			_ = cmd.Wait()
			t.Fatalf("pod %s: no %s within %v (watch: %v; stderr: %s); events:\n%s",
				name, what, within, err, strings.TrimSpace(stderr.String()), eventList(evs))
		}
		evs = append(evs, e)
	}
}

// waitEvent waits until the pod has an event whose line (TYPE REASON
// FIELDPATH MESSAGE) starts with prefix, for at most within. It follows
// `podward events --for pod/NAME -w -o json`.
func (a *agent) waitEvent(name, prefix string, within time.Duration) {
	t := a.t
	t.Helper()
	a.watchEvents(name, "event "+strconv.Quote(prefix), func(evs []event) bool {
		return countEvents(evs, prefix) > 0
	}, within)
}

// countEvents is how many of evs have a line that starts with prefix.
func countEvents(evs []event, prefix string) int {
	n := 0
	for _, e := range evs {
		if strings.HasPrefix(e.String(), prefix) {
			n++
		}
	}
	return n
}

func eventList(evs []event) string {
	var b strings.Builder
	for _, e := range evs {
		b.WriteString(e.String())
		b.WriteByte('\n')
	}
	return b.String()
}
