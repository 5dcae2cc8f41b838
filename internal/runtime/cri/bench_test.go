package cri

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// BenchmarkRelist measures the steady state of the relist, where nothing
// changed: the common case, once per RelistPeriod. It reports the time of
// one relist and the CPU it costs, as a share of one core at the default
// period (cpu-%@1s). Against the fake, that CPU is both sides' (the fake
// server runs in the process); against containerd it is podward's, plus
// containerd's when PODWARD_CRI_SERVER_PID names its process.
//
//	go test -run '^$' -bench Relist -benchmem ./internal/runtime/cri/
//	PODWARD_CRI_ENDPOINT=unix://... PODWARD_CRI_TEST_IMAGE=... PODWARD_CRI_SERVER_PID=$(pidof containerd) \
//	  go test -run '^$' -bench 'Relist/containerd' -benchmem ./internal/runtime/cri/
func BenchmarkRelist(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("fake/%d", n), func(b *testing.B) {
			h := newHarness(b, nil)
			for i := range n {
				labels := h.r.selector(
					LabelPodUID, fmt.Sprintf("uid-%d", i/10), LabelPodName, fmt.Sprintf("pod-%d", i/10),
					LabelPodNamespace, "default", LabelContainerName, fmt.Sprintf("c%d", i%10), LabelAttempt, "0",
				)
				h.f.add(fmt.Sprintf("c%d", i%10), labels, runtimeapi.ContainerState_CONTAINER_RUNNING)
			}
			h.relist() // adopts them all
			if got := len(h.r.tracked); got != n {
				b.Fatalf("%d tracked, want %d", got, n)
			}
			measureRelist(b, h.r, 0)
		})
	}
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("containerd/%d", n), func(b *testing.B) {
			criEndpoint(b)
			if n > 100 && os.Getenv("PODWARD_CRI_BENCH_1000") == "" {
				b.Skip("set PODWARD_CRI_BENCH_1000=1: starting 1,000 containers takes minutes")
			}
			r := realRuntime(b, b.TempDir(), nil)
			// Ten pods of n/10 containers: one shim per pod.
			t0 := time.Now()
			for p := range 10 {
				scripts := map[string]string{}
				var names []string
				for i := range n / 10 {
					name := fmt.Sprintf("sleeper-%03d", i)
					scripts[name] = "exec sleep 3600"
					names = append(names, name)
				}
				pod := realPod(b, fmt.Sprintf("bench-%d", p), scripts, names...)
				pod.Spec.TerminationGracePeriodSeconds = new(int64)
				setUp(b, r, pod)
				for _, name := range names {
					startIn(b, r, pod, name, 0)
				}
			}
			b.Logf("%d containers started in %v", n, time.Since(t0))
			var pid int
			if s := os.Getenv("PODWARD_CRI_SERVER_PID"); s != "" {
				pid, _ = strconv.Atoi(s)
			}
			measureRelist(b, r, pid)
		})
	}
}

// measureRelist runs the relist in a loop and reports its cost.
func measureRelist(b *testing.B, r *Runtime, serverPID int) {
	ctx := context.Background()
	if err := r.relist(ctx); err != nil {
		b.Fatal(err)
	}
	self0 := selfCPU()
	server0 := procCPU(serverPID)
	n := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if err := r.relist(ctx); err != nil {
			b.Fatal(err)
		}
		n++
	}
	b.StopTimer()
	perRelist := func(d time.Duration) float64 { return float64(d) / float64(n) }
	b.ReportMetric(perRelist(b.Elapsed())/1e3, "µs/relist")
	cpu := perRelist(selfCPU() - self0)
	if serverPID > 0 {
		server := perRelist(procCPU(serverPID) - server0)
		b.ReportMetric(server/1e3, "server-cpu-µs/relist")
		cpu += server
	}
	b.ReportMetric(cpu/float64(time.Second)*100, "cpu-%@1s")
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// procCPU is the CPU time of process pid (user+system), from
// /proc/<pid>/stat; 0 without a pid.
func procCPU(pid int) time.Duration {
	if pid <= 0 {
		return 0
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th fields of the line.
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const ticks = 100 // USER_HZ
	return time.Duration(ut+st) * time.Second / ticks
}
