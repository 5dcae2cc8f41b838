package prober

import (
	"strings"
	"testing"
	"time"
)

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{Startup: "Startup", Readiness: "Readiness", Liveness: "Liveness", 0: "Kind(0)", 9: "Kind(9)"} {
		if got := k.String(); got != want {
			t.Errorf("Kind(%d).String() = %q, want %q", int(k), got, want)
		}
	}
}

// TestNext walks the threshold step through sequences of attempts: "s" is
// a success, "f" a failure; want is the state after each attempt (U, S, F).
func TestNext(t *testing.T) {
	tests := map[string]struct {
		kind             Kind
		success, failure int32
		attempts         string
		want             string
	}{
		"liveness fails at the third failure":         {Liveness, 1, 3, "fff", "SSF"},
		"liveness failures must be consecutive":       {Liveness, 1, 3, "ffsfff", "SSSSSF"},
		"readiness starts not ready, one success":     {Readiness, 1, 3, "s", "S"},
		"readiness flips both ways":                   {Readiness, 1, 2, "sffsf", "SSFSS"},
		"readiness success threshold":                 {Readiness, 2, 1, "sfsss", "FFFSS"},
		"startup unknown until success":               {Startup, 1, 3, "ffs", "UUS"},
		"startup fails at threshold":                  {Startup, 1, 2, "ff", "UF"},
		"thresholds below one count as one":           {Liveness, 0, 0, "fs", "FS"},
		"failures below threshold keep readiness set": {Readiness, 1, 3, "sffsff", "SSSSSS"},
	}
	letter := map[state]string{stateUnknown: "U", stateSuccess: "S", stateFailure: "F"}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tl := tally{state: initialState(tc.kind), last: stateUnknown}
			var got strings.Builder
			for _, a := range tc.attempts {
				tl = next(tl, a == 's', tc.success, tc.failure)
				got.WriteString(letter[tl.state])
			}
			if got.String() != tc.want {
				t.Errorf("states after %q = %s, want %s", tc.attempts, got.String(), tc.want)
			}
		})
	}
}

func TestHealthy(t *testing.T) {
	tests := []struct {
		kind Kind
		s    state
		want bool
	}{
		{Readiness, stateFailure, false}, {Readiness, stateSuccess, true}, {Readiness, stateUnknown, false},
		{Liveness, stateSuccess, true}, {Liveness, stateFailure, false},
		{Startup, stateUnknown, true}, {Startup, stateSuccess, true}, {Startup, stateFailure, false},
	}
	for _, tc := range tests {
		if got := healthy(tc.kind, tc.s); got != tc.want {
			t.Errorf("healthy(%v, %v) = %v, want %v", tc.kind, tc.s, got, tc.want)
		}
	}
}

func TestNextAttempt(t *testing.T) {
	s := func(n float64) time.Time { return t0.Add(time.Duration(n * float64(time.Second))) }
	tests := map[string]struct {
		due, started, now float64
		at, gridDue       float64
	}{
		"on time":                      {due: 10, started: 10, now: 10.2, at: 12, gridDue: 12},
		"ended at the next":            {due: 10, started: 10, now: 12, at: 12, gridDue: 12},
		"ran long: once at once":       {due: 10, started: 10, now: 15.5, at: 15.5, gridDue: 12},
		"after the catch-up: the grid": {due: 12, started: 15.5, now: 15.6, at: 16, gridDue: 16},
		"started late":                 {due: 10, started: 19, now: 19, at: 20, gridDue: 20},
		"started late on the grid":     {due: 10, started: 14, now: 14.1, at: 16, gridDue: 16},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			at, due := nextAttempt(s(tc.due), s(tc.started), 2*time.Second, s(tc.now))
			if !at.Equal(s(tc.at)) || !due.Equal(s(tc.gridDue)) {
				t.Errorf("nextAttempt = %v, %v; want %v, %v", at.Sub(t0), due.Sub(t0), s(tc.at).Sub(t0), s(tc.gridDue).Sub(t0))
			}
		})
	}
}
