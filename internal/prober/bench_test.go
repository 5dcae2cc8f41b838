//go:build unix

package prober

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/model"
)

// benchPods × benchProbesPerPod probes run at periodSeconds 1.
const (
	benchPods         = 1000
	benchProbesPerPod = 3
	benchPerSecond    = benchPods * benchProbesPerPod
)

// attemptCounter counts probe attempts and says when a target is reached.
type attemptCounter struct {
	n       atomic.Int64
	target  atomic.Int64
	mu      sync.Mutex
	reached chan struct{}
}

// until arms the counter: the returned channel closes when n more attempts
// have been made.
func (c *attemptCounter) until(n int64) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reached = make(chan struct{})
	c.target.Store(c.n.Load() + n)
	return c.reached
}

func (c *attemptCounter) add() {
	if c.n.Add(1) == c.target.Load() {
		c.mu.Lock()
		close(c.reached)
		c.mu.Unlock()
	}
}

// instantExecer is an Execer whose commands succeed at once.
type instantExecer struct{ attemptCounter }

func (e *instantExecer) Exec(context.Context, *model.Pod, model.ContainerRef, []string) ([]byte, int, error) {
	e.add()
	return nil, 0, nil
}

// BenchmarkProbeScheduling runs 1,000 pods × 3 probes (an "app" container
// with liveness and readiness, a "sidecar" with liveness; no startup
// probes) at periodSeconds 1 on the real clock. One iteration is one
// second of probing: it waits for 3,000 attempts. It reports the CPU time
// of this process against wall time (cpu-%-of-one-core) and per attempt
// (cpu-µs/attempt); with a listener in another process, also that
// process's CPU per attempt (listener-cpu-µs/attempt), and on Linux the
// softirq work the kernel deferred to its ksoftirqd threads
// (ksoftirqd-µs/attempt, counted to no process).
//
//	exec                          scheduling alone: the handler returns at once
//	tcpSocket                     real connections to a listener in this process,
//	                              so the CPU is the probing and the listener's
//	tcpSocket-external-listener   the listener is another process: the CPU is the
//	                              agent's own share of tcpSocket probing
//	tcpSocket-floor-*             no prober: one goroutine opens and resets 3,000
//	                              connections in a row each second (the probes
//	                              start together too) to the external listener
//	                              with the prober's system calls alone (see
//	                              floorLoop), with a fresh socket each time or
//	                              with one socket kept, as the prober does
//	httpGet-external-listener     informative: httpGet probes of an HTTP server in
//	                              another process, through net/http
//
// Over loopback the kernel runs the listener's side of the handshake (SYN,
// the accept queue, the reset) in the softirq of the process that sends the
// packet, so part of the container's TCP work is counted to the agent; the
// floor includes it too. Compare tcpSocket-external-listener with
// tcpSocket-floor-reused-socket.
func BenchmarkProbeScheduling(b *testing.B) {
	b.Run("exec", func(b *testing.B) {
		ex := &instantExecer{}
		probe := func() v1.ProbeHandler {
			return v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}
		}
		benchProbes(b, ex, &benchListener{counter: &ex.attemptCounter}, probe)
	})
	b.Run("tcpSocket", func(b *testing.B) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		var counter attemptCounter
		accepted := make(chan struct{})
		go func() {
			defer close(accepted)
			for {
				c, err := l.Accept()
				if err != nil {
					return
				}
				_ = c.Close()
				counter.add()
			}
		}()
		defer func() {
			_ = l.Close()
			<-accepted
		}()
		port := l.Addr().(*net.TCPAddr).Port
		probe := func() v1.ProbeHandler {
			return v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(port)}}
		}
		benchProbes(b, nil, &benchListener{counter: &counter}, probe)
	})
	b.Run("tcpSocket-external-listener", func(b *testing.B) {
		l := startBenchListener(b, "tcp")
		probe := func() v1.ProbeHandler {
			return v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(l.port)}}
		}
		benchProbes(b, nil, l, probe)
	})
	b.Run("tcpSocket-floor-fresh-socket", func(b *testing.B) {
		benchFloor(b, startBenchListener(b, "tcp"), false)
	})
	b.Run("tcpSocket-floor-reused-socket", func(b *testing.B) {
		benchFloor(b, startBenchListener(b, "tcp"), true)
	})
	b.Run("httpGet-external-listener", func(b *testing.B) {
		l := startBenchListener(b, "http")
		probe := func() v1.ProbeHandler {
			return v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt(l.port)}}
		}
		benchProbes(b, nil, l, probe)
	})
}

// benchListenerEnv makes the test binary a listener for the benchmark: its
// value is "tcp" (accept and close) or "http" (answer 200). It prints its
// port, then a line per listenerBatch connections or requests served.
const (
	benchListenerEnv = "PODWARD_PROBER_BENCH_LISTENER"
	listenerBatch    = 100
)

// runBenchListener is the listener process's body; it never returns.
func runBenchListener() {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		os.Exit(1)
	}
	fmt.Println(l.Addr().(*net.TCPAddr).Port)
	var mu sync.Mutex
	n := 0
	served := func() {
		mu.Lock()
		defer mu.Unlock()
		if n++; n%listenerBatch == 0 {
			fmt.Println(n)
		}
	}
	if os.Getenv(benchListenerEnv) == "http" {
		_ = http.Serve(l, http.HandlerFunc(func(http.ResponseWriter, *http.Request) { served() }))
		os.Exit(1)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		_ = c.Close()
		served()
	}
}

// benchListener is a listener process of the benchmark.
type benchListener struct {
	pid     int
	port    int
	counter *attemptCounter // what it served
}

// startBenchListener runs the test binary as a listener of the given kind
// in another process until b ends.
func startBenchListener(b *testing.B, kind string) *benchListener {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), benchListenerEnv+"="+kind)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	read := make(chan struct{})
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-read
		_ = cmd.Wait()
	})
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		close(read)
		b.Fatal("the listener process did not report its port")
	}
	port, err := strconv.Atoi(lines.Text())
	if err != nil {
		close(read)
		b.Fatal(err)
	}
	counter := &attemptCounter{}
	go func() {
		defer close(read)
		for lines.Scan() { // one line per listenerBatch
			for range listenerBatch {
				counter.add()
			}
		}
	}()
	return &benchListener{pid: cmd.Process.Pid, port: port, counter: counter}
}

// benchProbes runs the benchmark's probes with handler; l counts their
// attempts (its pid is 0 when it is this process).
func benchProbes(b *testing.B, ex Execer, l *benchListener, handler func() v1.ProbeHandler) {
	m := New(Config{Execer: ex, Clock: clock.RealClock{}, Report: func(Result) {}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	defer func() {
		cancel()
		<-done
	}()

	probe := func() *v1.Probe {
		return &v1.Probe{ProbeHandler: handler(), TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: 3}
	}
	warm := l.counter.until(benchPerSecond)
	now := time.Now()
	for i := range benchPods {
		pod := newPod("pod-"+strconv.Itoa(i),
			v1.Container{Name: "app", LivenessProbe: probe(), ReadinessProbe: probe()},
			v1.Container{Name: "sidecar", LivenessProbe: probe()},
		)
		m.AddContainer(pod, ref(pod, 0), "app-"+strconv.Itoa(i), now)
		m.AddContainer(pod, ref(pod, 1), "sidecar-"+strconv.Itoa(i), now)
	}
	<-warm // every probe has run once
	measure(b, l, nil)
}

// benchFloor opens and resets benchPerSecond connections a second to l
// from one goroutine with a floorLoop, until b ends.
func benchFloor(b *testing.B, l *benchListener, reuse bool) {
	floor, err := newFloorLoop(l.port, reuse)
	if errors.Is(err, errors.ErrUnsupported) {
		b.Skip("no floor loop on this platform")
	} else if err != nil {
		b.Fatal(err)
	}
	defer floor.close()
	ctx, cancel := context.WithCancel(context.Background())
	failed := make(chan error, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		// All at once, as the benchmark's probes, which start together.
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			for range benchPerSecond {
				if err := floor.once(); err != nil {
					failed <- err
					return
				}
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	defer func() {
		cancel()
		<-done
	}()
	select {
	case <-l.counter.until(benchPerSecond):
	case err := <-failed:
		b.Fatal(err)
	}
	measure(b, l, failed)
}

// measure waits for b.N seconds' worth of attempts counted by l (or an
// error from failed) and reports what they cost: the CPU time of this
// process and, for a listener in another process, that process's and the
// ksoftirqd threads' (softirq work the kernel deferred, counted to no
// process; on a busy machine some of it is not ours).
func measure(b *testing.B, l *benchListener, failed <-chan error) {
	attempts := int64(b.N) * benchPerSecond
	reached := l.counter.until(attempts)
	softirqd := softirqThreads()
	others := func() (listener, softirq time.Duration) {
		if l.pid != 0 {
			listener = procCPU(l.pid)
		}
		for _, pid := range softirqd {
			softirq += procCPU(pid)
		}
		return listener, softirq
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	listener0, softirq0 := others()
	cpu0 := cpuTime(b)
	start := time.Now()
	b.ResetTimer()
	select {
	case <-reached:
	case err := <-failed:
		b.Fatal(err)
	}
	b.StopTimer()
	wall := time.Since(start)
	cpu := cpuTime(b) - cpu0
	listener1, softirq1 := others()
	runtime.ReadMemStats(&ms1)

	perAttempt := func(d time.Duration) float64 { return d.Seconds() * 1e6 / float64(attempts) }
	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%-of-one-core")
	b.ReportMetric(perAttempt(cpu), "cpu-µs/attempt")
	b.ReportMetric(float64(attempts)/wall.Seconds(), "attempts/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(attempts), "allocs/attempt")
	if l.pid != 0 {
		b.ReportMetric(perAttempt(listener1-listener0), "listener-cpu-µs/attempt")
	}
	if len(softirqd) > 0 {
		b.ReportMetric(perAttempt(softirq1-softirq0), "ksoftirqd-µs/attempt")
	}
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
