package planner

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkNext plans a pod with two sidecars, an init container, three
// regular containers and two defer containers, mid-termination: the worker
// runs this on every event of a pod.
func BenchmarkNext(b *testing.B) {
	p := pod(v1.RestartPolicyAlways, "sidecar:s1", "init:i", "sidecar:s2", "main:a", "main:b", "main:c", "defer:d1", "defer:d2")
	in := Input{
		Pod: p,
		Containers: obs{
			"s1": running(0), "i": exited(0, time.Second), "s2": running(time.Second),
			"a": running(2 * time.Second), "b": running(2 * time.Second), "c": running(2 * time.Second),
			"d1": exited(0, 10*time.Second), "d2": running(10 * time.Second),
		},
		Termination: &Termination{RequestedAt: at(9 * time.Second), Deadline: at(69 * time.Second), RunDefer: true},
		Now:         at(11 * time.Second),
		Config:      DefaultConfig(),
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Next(in)
	}
}
