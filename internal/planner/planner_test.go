package planner_test

import (
	"encoding/json"
	"strings"
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

func TestStopReason(t *testing.T) {
	names := map[planner.StopReason]string{
		planner.ReasonTerminating:         "Terminating",
		planner.ReasonDeferDone:           "DeferContainersCompleted",
		planner.ReasonGracePeriodExceeded: "GracePeriodExceeded",
		planner.ReasonProbeFailed:         "ProbeFailed",
		planner.ReasonPostStartHookFailed: "FailedPostStartHook",
	}
	for r, name := range names {
		if r.String() != name {
			t.Errorf("%d.String() = %q, want %q", int(r), r.String(), name)
		}
		b, err := json.Marshal(planner.Action{Kind: planner.Kill, Reason: r})
		if err != nil || !strings.Contains(string(b), `"Reason":"`+name+`"`) {
			t.Errorf("marshal %s: %s, %v", name, b, err)
		}
		var back planner.Action
		if err := json.Unmarshal(b, &back); err != nil || back.Reason != r {
			t.Errorf("unmarshal %s: %v, %v", b, back.Reason, err)
		}
	}
	if b, err := json.Marshal(planner.Action{Kind: planner.Start}); err != nil || !strings.Contains(string(b), `"Reason":""`) {
		t.Errorf("a Start's zero reason: %s, %v", b, err)
	}
	if s := planner.StopReason(9).String(); s != "StopReason(9)" {
		t.Errorf("unknown reason String() = %q", s)
	}
	if _, err := planner.StopReason(9).MarshalText(); err == nil {
		t.Error("an unknown reason marshalled")
	}
	var r planner.StopReason
	if err := r.UnmarshalText([]byte("Terminted")); err == nil {
		t.Error("a misspelt reason unmarshalled")
	}
}
