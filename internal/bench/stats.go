package bench

import (
	"math"
	"slices"
	"time"
)

// percentileFrom is the sample count from which a Summary carries p90 and
// p99: below it, they would be the largest samples under another name.
const percentileFrom = 100

// Summary describes a set of duration samples, in milliseconds.
type Summary struct {
	N   int      `json:"n"`
	P50 float64  `json:"p50_ms"`
	P90 *float64 `json:"p90_ms,omitempty"`
	P99 *float64 `json:"p99_ms,omitempty"`
	Min float64  `json:"min_ms"`
	Max float64  `json:"max_ms"`
}

// Summarize computes the Summary of samples; samples is not modified. An
// empty set gives the zero Summary.
func Summarize(samples []time.Duration) Summary {
	if len(samples) == 0 {
		return Summary{}
	}
	ms := make([]float64, len(samples))
	for i, d := range samples {
		ms[i] = float64(d) / float64(time.Millisecond)
	}
	slices.Sort(ms)
	s := Summary{N: len(ms), P50: Percentile(ms, 50), Min: ms[0], Max: ms[len(ms)-1]}
	if len(ms) >= percentileFrom {
		p90, p99 := Percentile(ms, 90), Percentile(ms, 99)
		s.P90, s.P99 = &p90, &p99
	}
	return s
}

// Percentile is the p-th percentile (0 < p ≤ 100) of sorted, by linear
// interpolation between the closest ranks (the "R-7" definition, numpy's
// default): the 50th of an even count is the mean of the two middle ones.
// It is NaN for an empty slice.
func Percentile(sorted []float64, p float64) float64 {
	switch n := len(sorted); {
	case n == 0:
		return math.NaN()
	case n == 1:
		return sorted[0]
	default:
		h := (p / 100) * float64(n-1)
		lo := int(math.Floor(h))
		if lo >= n-1 {
			return sorted[n-1]
		}
		return sorted[lo] + (h-float64(lo))*(sorted[lo+1]-sorted[lo])
	}
}

// Ratio is a/b, or 0 when b is not positive (no floor to compare with).
func Ratio(a, b float64) float64 {
	if b <= 0 {
		return 0
	}
	return a / b
}

// Compare is a podward figure beside its floor, from the same run.
type Compare struct {
	Podward Summary `json:"podward"`
	Floor   Summary `json:"floor"`
	// Ratio is podward's median over the floor's.
	Ratio float64 `json:"ratio"`
	// OverMS is podward's median minus the floor's.
	OverMS float64 `json:"over_ms"`
}

// NewCompare pairs podward's samples with the floor's.
func NewCompare(podward, floor []time.Duration) Compare {
	c := Compare{Podward: Summarize(podward), Floor: Summarize(floor)}
	c.Ratio = Ratio(c.Podward.P50, c.Floor.P50)
	c.OverMS = c.Podward.P50 - c.Floor.P50
	return c
}
