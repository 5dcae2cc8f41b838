package planner_test

import (
	"testing"
	"time"

	"github.com/podward/podward/internal/planner"
)

// The ordering rules are scenarios in testdata/ (see scenario_test.go);
// what is left here is arithmetic.

func TestDelay(t *testing.T) {
	c := planner.DefaultConfig()
	want := []time.Duration{0, 10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second}
	for steps, w := range want {
		if got := c.Delay(steps); got != w {
			t.Errorf("Delay(%d) = %s, want %s", steps, got, w)
		}
	}
	c.BackoffBase = 100 * time.Millisecond
	if got := c.Delay(3); got != 400*time.Millisecond {
		t.Errorf("configurable base: Delay(3) = %s, want 400ms", got)
	}
}
