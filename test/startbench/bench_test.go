package startbench

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/client"
	"github.com/podward/podward/internal/daemon"
	"github.com/podward/podward/internal/runtime/process"
	"github.com/podward/podward/test/internal/bintest"
)

var (
	inproc = flag.Bool("startbench.inproc", false, "run the agent in the benchmark's process (for -cpuprofile, -trace, ...) instead of `podward serve`")
	binary = flag.String("startbench.podward", "", "the podward binary to serve with, instead of the one built from this tree (to compare builds back to back)")
)

// podwardBin is the binary built once by TestMain.
var podwardBin string

func TestMain(m *testing.M) {
	// With -startbench.inproc the shims are this binary re-executed.
	process.MaybeRunInit()
	os.Exit(bintest.Main(m, "startbench", &podwardBin))
}

// timeout bounds every wait: a run that passes never waits for it.
const timeout = 30 * time.Second

// containers are the pod's, in start order: the sidecar, then the two
// regular containers.
var containers = []string{"side", "a", "b"}

// BenchmarkPodStart measures a pod's start and stop against the floor, one
// pod at a time, each iteration a floor run and a pod run back to back so
// that both see the same load on the machine.
func BenchmarkPodStart(b *testing.B) {
	dir := b.TempDir()
	fifo := openFIFO(b, filepath.Join(dir, "lines"))
	c := startAgent(b, dir)
	var start, stop, floorStart, floorStop []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		fs, fp := floor(b, fifo, fmt.Sprintf("floor-%d", i))
		ps, pp := podRun(b, c, fifo, fmt.Sprintf("sb-%d", i))
		floorStart, floorStop = append(floorStart, fs), append(floorStop, fp)
		start, stop = append(start, ps), append(stop, pp)
	}
	b.StopTimer()
	report(b, "start-ms", start)
	report(b, "floor-start-ms", floorStart)
	report(b, "stop-ms", stop)
	report(b, "floor-stop-ms", floorStop)
	b.ReportMetric(ms(median(start)-median(floorStart)), "start-over-floor-ms")
	b.ReportMetric(ms(median(stop)-median(floorStop)), "stop-over-floor-ms")
}

func report(b *testing.B, unit string, d []time.Duration) {
	b.ReportMetric(ms(median(d)), unit)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// command is a container's: its first act writes "<pod> <name>" to the
// FIFO, then it loops until a signal ends it.
func command(fifo *lines, pod, name string) []string {
	return []string{"sh", "-c", fmt.Sprintf("echo '%s %s' >%s; while :; do sleep 1; done", pod, name, fifo.path)}
}

// floor starts the pod's three processes directly (each in a process group
// of its own, the sidecar first, as the pod starts them) until each wrote
// its line, then stops them as the pod stops: SIGTERM to the regular
// containers, waited for, then to the sidecar.
func floor(b *testing.B, fifo *lines, pod string) (start, stop time.Duration) {
	b.Helper()
	cmds := make([]*exec.Cmd, len(containers))
	t0 := time.Now()
	for i, name := range containers {
		argv := command(fifo, pod, name)
		cmds[i] = exec.Command("/bin/sh", argv[1:]...)
		cmds[i].SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := cmds[i].Start(); err != nil {
			b.Fatalf("start %s: %v", name, err)
		}
	}
	start = fifo.wait(b, pod, containers).Sub(t0)
	t1 := time.Now()
	for _, group := range [][]*exec.Cmd{cmds[1:], cmds[:1]} {
		for _, cmd := range group {
			if err := unix.Kill(-cmd.Process.Pid, unix.SIGTERM); err != nil {
				b.Fatalf("signal: %v", err)
			}
		}
		for _, cmd := range group {
			_ = cmd.Wait()
		}
	}
	return start, time.Since(t1)
}

// podRun creates the pod through the API and waits for its containers'
// lines; once the agent reports them all running, it deletes the pod and
// waits for its DELETED watch event.
func podRun(b *testing.B, c *client.Client, fifo *lines, name string) (start, stop time.Duration) {
	b.Helper()
	ctx, cancel := context.WithTimeout(b.Context(), timeout)
	defer cancel()
	pod := &v1.Pod{
		TypeMeta:   metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
	}
	always := v1.ContainerRestartPolicyAlways
	pod.Spec.InitContainers = []v1.Container{{Name: containers[0], Image: "busybox", Command: command(fifo, name, containers[0]), RestartPolicy: &always}}
	for _, n := range containers[1:] {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: n, Image: "busybox", Command: command(fifo, name, n)})
	}
	w, err := c.WatchPods(ctx, "default", client.ListOptions{FieldSelector: "metadata.name=" + name})
	if err != nil {
		b.Fatalf("watch pod %s: %v", name, err)
	}
	defer w.Close()
	t0 := time.Now()
	created, err := c.CreatePod(ctx, pod)
	if err != nil {
		b.Fatalf("create pod %s: %v", name, err)
	}
	start = fifo.wait(b, name, containers).Sub(t0)

	// A delete while a start is still in flight would measure the start's
	// abort, not a stop.
	watchUntil(b, w, name, func(ev client.Event[v1.Pod]) bool { return allRunning(ev.Object) })
	t1 := time.Now()
	if _, err := c.DeletePod(ctx, "default", name, client.DeleteOptions{}); err != nil {
		b.Fatalf("delete pod %s: %v", name, err)
	}
	watchUntil(b, w, name, func(ev client.Event[v1.Pod]) bool {
		return ev.Type == client.Deleted && ev.Object.UID == created.UID
	})
	return start, time.Since(t1)
}

// watchUntil reads w until done says so.
func watchUntil(b *testing.B, w *client.Watch[v1.Pod], name string, done func(client.Event[v1.Pod]) bool) {
	b.Helper()
	for {
		ev, err := w.Next()
		if err != nil {
			b.Fatalf("watch pod %s: %v", name, err)
		}
		if done(ev) {
			return
		}
	}
}

// allRunning says whether every container of p runs.
func allRunning(p *v1.Pod) bool {
	n := 0
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		if cs.State.Running != nil {
			n++
		}
	}
	return n == len(containers)
}

// lines reads the FIFO the containers write their first line to, stamping
// each line as it comes.
type lines struct {
	path string
	mu   sync.Mutex
	seen map[string]time.Time
	news chan struct{} // closed and replaced on each line
	done chan struct{} // closed once the reader ended
}

// openFIFO makes the FIFO at path and reads it until the benchmark ends.
// It is held open for writing too, so that a writer never waits for a
// reader and the reader never sees its end between writers.
func openFIFO(b *testing.B, path string) *lines {
	b.Helper()
	if err := unix.Mkfifo(path, 0o666); err != nil {
		b.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		b.Fatal(err)
	}
	l := &lines{path: path, seen: map[string]time.Time{}, news: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(l.done)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			at := time.Now()
			l.mu.Lock()
			l.seen[sc.Text()] = at
			close(l.news)
			l.news = make(chan struct{})
			l.mu.Unlock()
		}
	}()
	b.Cleanup(func() {
		f.Close()
		<-l.done
	})
	return l
}

// wait waits for the line of each of names of pod and returns when the
// last came.
func (l *lines) wait(b *testing.B, pod string, names []string) time.Time {
	b.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		l.mu.Lock()
		var last time.Time
		all := true
		for _, n := range names {
			at, ok := l.seen[pod+" "+n]
			if !ok {
				all = false
				break
			}
			if at.After(last) {
				last = at
			}
		}
		news := l.news
		l.mu.Unlock()
		if all {
			return last
		}
		select {
		case <-news:
		case <-timer.C:
			b.Fatalf("pod %s: not every container wrote its line within %v", pod, timeout)
		}
	}
}

// startAgent starts the agent on a state root in dir and returns a client
// of it; the benchmark's cleanup stops it.
func startAgent(b *testing.B, dir string) *client.Client {
	b.Helper()
	socket := filepath.Join(dir, "agent.sock")
	if len(socket) > 100 {
		short, err := os.MkdirTemp("", "pwsb-")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { os.RemoveAll(short) })
		socket = filepath.Join(short, "agent.sock")
	}
	root := filepath.Join(dir, "root")
	if *inproc {
		startInProcess(b, root, socket)
	} else {
		startServe(b, root, socket)
	}
	c := client.New(socket)
	b.Cleanup(c.Close)
	return c
}

// startServe runs `podward serve` until the benchmark ends.
func startServe(b *testing.B, root, socket string) {
	b.Helper()
	bin := podwardBin
	if *binary != "" {
		bin = *binary
	}
	cmd := exec.Command(bin, "serve", "--root", root, "--socket", socket)
	out, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start podward serve: %v", err)
	}
	ready := make(chan struct{})
	var log strings.Builder
	read := make(chan struct{})
	go func() {
		defer close(read)
		once := sync.OnceFunc(func() { close(ready) })
		bintest.ScanLines(out, io.Discard, func(text string) {
			log.WriteString(text + "\n")
			if strings.HasPrefix(text, "podward: agent serving on ") {
				once()
			}
		})
	}()
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-read
		_ = cmd.Wait()
		if b.Failed() {
			b.Logf("podward serve's log:\n%s", log.String())
		}
	})
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-ready:
	case <-read:
		b.Fatalf("podward serve exited before it served:\n%s", log.String())
	case <-timer.C:
		b.Fatalf("podward serve did not serve within %v", timeout)
	}
}

// startInProcess runs the agent `podward serve` assembles in this process
// until the benchmark ends.
func startInProcess(b *testing.B, root, socket string) {
	b.Helper()
	o := daemon.AgentOptions{Options: daemon.DefaultOptions(), Socket: socket}
	o.Root = root
	var log syncBuffer
	o.LogOutput = &log
	ctx, cancel := context.WithCancel(context.WithoutCancel(b.Context()))
	a, err := daemon.NewAgent(ctx, o)
	if err != nil {
		cancel()
		b.Fatalf("start the agent: %v", err)
	}
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-served; err != nil && !errors.Is(err, context.Canceled) {
			b.Errorf("serve: %v", err)
		}
		a.Close()
		if b.Failed() {
			b.Logf("the agent's log:\n%s", log.String())
		}
	})
}

// syncBuffer is the in-process agent's log.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
