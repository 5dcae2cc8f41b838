//go:build unix

package prober

import (
	"bufio"
	"context"
	"fmt"
	"net"
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
// of the whole process (scheduler, workers and, for tcpSocket, the
// listener that accepts the probes' connections) against wall time.
func BenchmarkProbeScheduling(b *testing.B) {
	b.Run("exec", func(b *testing.B) {
		ex := &instantExecer{}
		probe := func() v1.ProbeHandler {
			return v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}
		}
		benchProbes(b, ex, &ex.attemptCounter, probe)
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
		benchProbes(b, nil, &counter, probe)
	})
	// The agent's own share: the listener (the containers' side) runs in
	// another process, so the CPU measured is the probing alone.
	b.Run("tcpSocket-external-listener", func(b *testing.B) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), benchListenerEnv+"=1")
		out, err := cmd.StdoutPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		defer func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}()
		lines := bufio.NewScanner(out)
		if !lines.Scan() {
			b.Fatal("the listener process did not report its port")
		}
		port, err := strconv.Atoi(lines.Text())
		if err != nil {
			b.Fatal(err)
		}
		var counter attemptCounter
		read := make(chan struct{})
		go func() {
			defer close(read)
			for lines.Scan() { // one line per listenerBatch accepted connections
				for range listenerBatch {
					counter.add()
				}
			}
		}()
		defer func() {
			_ = cmd.Process.Kill()
			<-read
		}()
		probe := func() v1.ProbeHandler {
			return v1.ProbeHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt(port)}}
		}
		benchProbes(b, nil, &counter, probe)
	})
}

// benchListenerEnv makes the test binary a TCP listener for the benchmark:
// it prints its port, then a line per listenerBatch accepted connections.
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
	n := 0
	for {
		c, err := l.Accept()
		if err != nil {
			os.Exit(1)
		}
		_ = c.Close()
		if n++; n%listenerBatch == 0 {
			fmt.Println(n)
		}
	}
}

func benchProbes(b *testing.B, ex Execer, counter *attemptCounter, handler func() v1.ProbeHandler) {
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
	const perSecond = benchPods * benchProbesPerPod
	warm := counter.until(perSecond)
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

	attempts := int64(b.N) * perSecond
	reached := counter.until(attempts)
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime(b)
	start := time.Now()
	b.ResetTimer()
	<-reached
	b.StopTimer()
	wall := time.Since(start)
	cpu := cpuTime(b) - cpu0
	runtime.ReadMemStats(&ms1)

	b.ReportMetric(100*cpu.Seconds()/wall.Seconds(), "cpu-%-of-one-core")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(attempts), "cpu-ns/attempt")
	b.ReportMetric(float64(attempts)/wall.Seconds(), "attempts/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/float64(attempts), "allocs/attempt")
}

// cpuTime is the user and system CPU time the process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
