package crash

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/test/internal/bintest"
)

// stateDiskSize is the size of the full-disk test's state filesystem: the
// issue's 2 MB.
const stateDiskSize = "2m"

// floodSleepers is how many idle containers the flooding pod has besides
// the flooding one: its checkpoint then takes several pages of the store,
// which a full disk cannot give it (a small checkpoint may still fit in
// the store's free pages).
const floodSleepers = 24

// TestFullStateDisk is issue 12's full state disk: a pod floods its log
// until the agent's state filesystem (a 2 MiB tmpfs as --root) is full.
// Deleted, it is stopped within its grace period all the same (before, its
// kill waited for a checkpoint that could not be written: it ran on for
// ever, while an event said it was killed); the agent stays up and reports
// the state it cannot save (/healthz, a FailedCheckpoint event); and once
// the flood's log is removed, another pod's log, which lost its output
// meanwhile, marks the gap and goes on.
func TestFullStateDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the state root is a tmpfs of its own")
	}
	t.Parallel()
	e := newStoppedEnv(t, bintest.Process())
	if err := os.MkdirAll(e.root, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", e.root, "tmpfs", 0, "size="+stateDiskSize+",mode=0700"); err != nil {
		t.Fatalf("mount a %s tmpfs on %s: %v", stateDiskSize, e.root, err)
	}
	t.Cleanup(func() {
		// What still holds the filesystem goes first; then it is detached
		// (and freed once nothing uses it).
		killMarked(t, e.dir, 0)
		if err := unix.Unmount(e.root, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", e.root, err)
		}
	})
	e.start()

	e.apply(&v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "quiet"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(2)),
			// Lines of a kilobyte, so that it needs room on a full disk
			// at once.
			Containers: []v1.Container{e.container("quiet",
				"echo start quiet $BASHPID >> {rec}; pad=$(printf '%01000d' 0); i=0; while true; do i=$((i+1)); echo tick $i $pad; sleep 0.05; done")},
		},
	})
	e.waitStart("quiet")

	const grace = 3 * time.Second
	flood := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "flood"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(grace / time.Second)),
			// It ignores SIGTERM, as a shell that is PID 1: only the kill
			// at the deadline stops it.
			Containers: []v1.Container{e.container("flood",
				"trap '' TERM; echo start flood $BASHPID >> {rec}; "+waitTrigger("flood")+"; exec yes 'flood {rec}'")},
		},
	}
	for i := range floodSleepers {
		name := fmt.Sprintf("sleeper-with-a-rather-long-name-%02d", i)
		flood.Spec.Containers = append(flood.Spec.Containers, e.container(name,
			"trap '' TERM; echo start "+name+" $BASHPID >> {rec}; while true; do sleep 100 & wait; done"))
	}
	e.apply(flood)
	var pids []int
	for _, c := range flood.Spec.Containers {
		pid := e.waitStart(c.Name)
		pids = append(pids, pid, shimOf(t, pid))
	}
	uid := e.getPod("flood").UID
	floodLogs := filepath.Join(e.root, "process", "pods", string(uid), "logs")
	e.trigger("flood")
	e.waitInDir(filepath.Join(floodLogs, "flood"), "a full state disk", func() bool {
		return freeBlocks(t, e.root) == 0
	}, nil, recordTimeout)
	t.Logf("the state disk is full")
	// The quiet pod's shim cannot write its log either; it says so to the
	// agent (its notices need no room), which logs it.
	agentLog := e.logs[len(e.logs)-1]
	e.waitInDir(e.dir, "the quiet pod's shim telling the agent its log cannot be written", func() bool {
		for _, l := range strings.Split(readFile(agentLog), "\n") {
			if strings.Contains(l, `msg="shim: cannot write the container log`) && strings.Contains(l, "container=quiet") && strings.Contains(l, "no space left on device") {
				return true
			}
		}
		return false
	}, nil, recordTimeout)

	events := e.watchEvents()
	start := time.Now()
	e.deleteAsync("flood")
	events.wait(t, "the flood pod's FailedCheckpoint event", func(ev v1.Event) bool {
		return ev.InvolvedObject.Name == "flood" && ev.Reason == "FailedCheckpoint" && ev.Type == v1.EventTypeWarning
	})
	// The agent is up and says what it cannot do: once the node's
	// FailedCheckpoint event says the state is not saved, /healthz fails
	// — unless a retried save succeeded since, which the node's
	// CheckpointSaved event then says.
	events.wait(t, "the node's FailedCheckpoint event", func(ev v1.Event) bool {
		return ev.InvolvedObject.Kind == "Node" && ev.Reason == "FailedCheckpoint" && strings.Contains(ev.Message, "no space left on device")
	})
	if code, body := e.healthz(t); code != http.StatusInternalServerError || !strings.Contains(body, "[-]state failed:") || !strings.Contains(body, "no space left on device") {
		events.wait(t, fmt.Sprintf("the node's CheckpointSaved event, since healthz said %d %q on a full state disk", code, body), func(ev v1.Event) bool {
			return ev.InvolvedObject.Kind == "Node" && ev.Reason == "CheckpointSaved"
		})
	}
	// Stopped within its grace period: SIGKILL at the deadline, the 2 s
	// minimum after the stop signal being within it too.
	e.mustBeGone("the flood pod's containers and shims", pids, time.Until(start.Add(grace+2*time.Second)))
	t.Logf("the flood pod was gone %v after its delete (grace period %v)", time.Since(start).Round(time.Millisecond), grace)
	events.wait(t, "the flood pod's GracePeriodExceeded event", func(ev v1.Event) bool {
		return ev.InvolvedObject.Name == "flood" && ev.Reason == "GracePeriodExceeded" && strings.Contains(ev.Message, "killed flood")
	})

	// Room again: the flood's log goes. The quiet pod's log marks what it
	// lost and goes on; its event says how much.
	if err := os.RemoveAll(floodLogs); err != nil {
		t.Fatal(err)
	}
	quietLog := ""
	quietDir := filepath.Join(e.root, "process", "pods", string(e.getPod("quiet").UID), "logs", "quiet")
	e.waitInDir(quietDir, "the quiet pod's log marking the gap, then going on", func() bool {
		data, _ := os.ReadFile(filepath.Join(quietDir, "0.log"))
		quietLog = string(data)
		i := strings.Index(quietLog, " stdout F podward: ")
		return i >= 0 && strings.Contains(quietLog[i:], " bytes of log dropped: no space left on device\n") &&
			strings.Contains(quietLog[i:], " stdout F tick ")
	}, func() string { return "its log ends:\n" + lastLines(quietLog, 5) }, recordTimeout)
	events.wait(t, "the quiet pod's LogDropped event", func(ev v1.Event) bool {
		return ev.InvolvedObject.Name == "quiet" && ev.Reason == "LogDropped" && ev.Type == v1.EventTypeWarning &&
			strings.Contains(ev.Message, "bytes of the container's stdout were dropped")
	})
	// A checkpoint the full disk refused is saved again on the worker's
	// retry (checkpointRetry), not at once: wait for the store's write.
	var code int
	var body string
	e.waitInDir(e.root, "healthz ok once the disk has room and the flood is gone", func() bool {
		code, body = e.healthz(t)
		return code == http.StatusOK
	}, func() string { return fmt.Sprintf("healthz: %d %q", code, body) }, recordTimeout)
	events.stop()
	e.finish()
}

// freeBlocks is how many blocks the filesystem of path has free.
func freeBlocks(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		t.Fatalf("statfs %s: %v", path, err)
	}
	return st.Bavail
}

// lastLines is the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(len(lines)-n, 0):], "\n")
}

// healthz asks the agent's /healthz (verbose) on its socket.
func (e *env) healthz(t *testing.T) (int, string) {
	t.Helper()
	hc := &http.Client{Timeout: cliTimeout, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", e.socket)
		},
	}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Get("http://podward/healthz?verbose")
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	t.Logf("healthz: %d %q", resp.StatusCode, body)
	return resp.StatusCode, string(body)
}

// eventWatch is `podward events -w -o json` of every namespace, decoded as
// it comes.
type eventWatch struct {
	cmd    *exec.Cmd
	cancel context.CancelFunc
	events chan v1.Event
	seen   []v1.Event
}

// watchEvents starts watching the events; the test stops the watch.
func (e *env) watchEvents() *eventWatch {
	t := e.t
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, podwardBin, "events", "-A", "-w", "-o", "json")
	cmd.Env = append(os.Environ(), "PODWARD_SOCKET="+e.socket)
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("podward events -w: %v", err)
	}
	w := &eventWatch{cmd: cmd, cancel: cancel, events: make(chan v1.Event, 1000)}
	go func() {
		defer close(w.events)
		dec := json.NewDecoder(out)
		for {
			var ev v1.Event
			if err := dec.Decode(&ev); err != nil {
				return
			}
			w.events <- ev
		}
	}()
	t.Cleanup(w.stop)
	return w
}

// wait waits for an event that ok accepts, seen or to come, for at most
// recordTimeout.
func (w *eventWatch) wait(t *testing.T, what string, ok func(v1.Event) bool) {
	t.Helper()
	for _, ev := range w.seen {
		if ok(ev) {
			return
		}
	}
	timer := time.NewTimer(recordTimeout)
	defer timer.Stop()
	for {
		select {
		case ev, open := <-w.events:
			if !open {
				t.Fatalf("no %s: the event watch ended", what)
			}
			w.seen = append(w.seen, ev)
			if ok(ev) {
				t.Logf("event: %s %s %s: %s", ev.Type, ev.Reason, ev.InvolvedObject.Name, ev.Message)
				return
			}
		case <-timer.C:
			var b strings.Builder
			for _, ev := range w.seen {
				fmt.Fprintf(&b, "%s %s %s: %s\n", ev.Type, ev.Reason, ev.InvolvedObject.Name, ev.Message)
			}
			t.Fatalf("no %s within %v; events:\n%s", what, recordTimeout, b.String())
		}
	}
}

// stop ends the watch; it is idempotent.
func (w *eventWatch) stop() {
	w.cancel()
	_ = w.cmd.Wait()
	for range w.events {
	}
}
