package planner_test

import (
	"testing"
	"time"

	"github.com/podward/podward/internal/planner"
	"github.com/podward/podward/internal/planner/plannertest"
)

// BenchmarkNext plans a pod with two sidecars, an init container, three
// regular containers and two defer containers, mid-termination: the worker
// runs this on every event of a pod.
func BenchmarkNext(b *testing.B) {
	var s plannertest.Scenario
	for _, line := range []string{
		"pod policy=Always sidecar:s1 init:i sidecar:s2 main:a main:b main:c defer:d1 defer:d2",
		"observe s1=running(0s) i=exited(0,1s) s2=running(1s) a=running(2s) b=running(2s) c=running(2s) d1=exited(0,10s) d2=running(10s)",
		"terminate requested=9s deadline=69s rundefer",
	} {
		if _, err := s.Apply(plannertest.ParseDirective("bench", line)); err != nil {
			b.Fatal(err)
		}
	}
	in := s.Input(plannertest.At(11 * time.Second))
	b.ReportAllocs()
	for b.Loop() {
		_ = planner.Next(in)
	}
}
