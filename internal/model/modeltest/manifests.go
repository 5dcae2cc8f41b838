// Package modeltest makes the big manifests that the tests and benchmarks
// of the paths reading manifests use — the model's decoder, the CLI, the
// agent's API — and measures what reading one costs. It imports nothing of
// podward.
package modeltest

import (
	"fmt"
	"strings"
	"testing"
)

// ManyContainers is a pod manifest of about size bytes of YAML (it stops
// at the first container past size): containers of a few fields each, as
// a generator would write them.
func ManyContainers(size int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n  containers:\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "  - name: c%d\n    image: busybox\n    command: [\"sh\", \"-c\", \"sleep 1000\"]\n    env:\n    - name: A\n      value: b\n", i)
	}
	return []byte(b.String())
}

// BigEnv is a pod manifest of about size bytes of YAML: one container with
// a long environment.
func BigEnv(size int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n  containers:\n  - name: app\n    image: busybox\n    command: [sleep, \"1000\"]\n    env:\n")
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "    - name: VAR_%d\n      value: value-of-the-variable-%d\n", i, i)
	}
	return []byte(b.String())
}

// Loop runs op in the benchmark's loop, with allocations reported, and
// reports cpu-ns/op besides ns/op: the process's CPU time (user and system,
// every thread, the garbage collector's included) per op, which other work
// on a busy machine does not inflate as it inflates wall time.
func Loop(b *testing.B, op func()) {
	b.Helper()
	b.ReportAllocs()
	start := cpuTime()
	n := 0
	for b.Loop() {
		op()
		n++
	}
	if used := cpuTime() - start; used > 0 {
		b.ReportMetric(float64(used.Nanoseconds())/float64(n), "cpu-ns/op")
	}
}

// EnvEntries is a pod manifest of one container with n environment
// variables written one per line in flow style ("- {name: V1, value: x}"),
// the densest a hand or a generator writes them: 100,000 of them make a
// manifest of about 3 MiB, the API server's limit on a request body.
func EnvEntries(n int) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: Pod\nmetadata:\n  name: big\nspec:\n  containers:\n  - name: app\n    image: busybox\n    command: [sleep, \"1000\"]\n    env:\n")
	for i := range n {
		fmt.Fprintf(&b, "    - {name: V%d, value: x}\n", i)
	}
	return []byte(b.String())
}
