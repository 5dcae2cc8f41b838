package bench

import (
	"math"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	tests := []struct {
		name   string
		sorted []float64
		p      float64
		want   float64
	}{
		{"one sample", []float64{7}, 50, 7},
		{"odd median", []float64{1, 2, 9}, 50, 2},
		{"even median is the mean of the middle two", []float64{1, 2, 4, 9}, 50, 3},
		{"p100 is the max", []float64{1, 2, 4, 9}, 100, 9},
		{"p90 of 1..11 interpolates", []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, 90, 10},
		{"p99 of 0..100", seq(0, 100), 99, 99},
		{"p90 between ranks", []float64{0, 10}, 90, 9},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("Percentile(%v, %v) = %v, want %v", tt.sorted, tt.p, got, tt.want)
			}
		})
	}
	if got := Percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("Percentile of nothing = %v, want NaN", got)
	}
}

func seq(from, to int) []float64 {
	var s []float64
	for i := from; i <= to; i++ {
		s = append(s, float64(i))
	}
	return s
}

func TestSummarizePercentilesFromHundredSamples(t *testing.T) {
	var few []time.Duration
	for i := 99; i >= 1; i-- { // unsorted on purpose
		few = append(few, time.Duration(i)*time.Millisecond)
	}
	s := Summarize(few)
	if s.N != 99 || s.P50 != 50 || s.Min != 1 || s.Max != 99 {
		t.Errorf("Summarize(1..99 ms) = %+v", s)
	}
	if s.P90 != nil || s.P99 != nil {
		t.Errorf("99 samples got p90/p99 %v/%v, want none", s.P90, s.P99)
	}
	if few[0] != 99*time.Millisecond {
		t.Error("Summarize sorted its argument")
	}
	s = Summarize(append(few, 100*time.Millisecond))
	if s.P90 == nil || s.P99 == nil {
		t.Fatalf("100 samples: no p90/p99: %+v", s)
	}
	if !(s.P50 <= *s.P90 && *s.P90 <= *s.P99 && *s.P99 <= s.Max) {
		t.Errorf("percentiles out of order: %+v p90 %v p99 %v", s, *s.P90, *s.P99)
	}
	if math.Abs(*s.P90-90.1) > 1e-9 || math.Abs(*s.P99-99.01) > 1e-9 {
		t.Errorf("p90 %v p99 %v, want 90.1 and 99.01", *s.P90, *s.P99)
	}
	if got := Summarize(nil); got != (Summary{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", got)
	}
}

func TestCompare(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	c := NewCompare(ms(30, 10, 20), ms(4, 5, 6))
	if c.Podward.P50 != 20 || c.Floor.P50 != 5 || c.Ratio != 4 || c.OverMS != 15 {
		t.Errorf("NewCompare = %+v", c)
	}
	if r := Ratio(3, 0); r != 0 {
		t.Errorf("Ratio(3, 0) = %v, want 0 (no floor)", r)
	}
}
