package streaming

import (
	"context"
	"slices"
	"testing"
)

// TestObservePorts: a request's port observer hears of each port once,
// whatever the number of streams to it; a request without one is not
// observed.
func TestObservePorts(t *testing.T) {
	var got []int32
	ctx := ObservePorts(context.Background(), func(p int32) { got = append(got, p) })
	seen := newPortsSeen(ctx)
	for _, p := range []int32{8080, 8080, 9090, 8080} {
		seen.observe(p)
	}
	if !slices.Equal(got, []int32{8080, 9090}) {
		t.Errorf("observed %v, want [8080 9090]", got)
	}
	none := newPortsSeen(context.Background())
	if none != nil {
		t.Errorf("portsSeen without an observer = %v, want nil", none)
	}
	none.observe(80) // does nothing
}
