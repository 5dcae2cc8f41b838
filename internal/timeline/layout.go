package timeline

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// CellKind is what one cell of a row shows.
type CellKind int

// Cell kinds start at one so that the zero value is never valid. Where
// several fall into one cell, the later kind in this list wins over the
// earlier, but a line never covers an instance.
const (
	CellEmpty CellKind = iota + 1
	// CellTermination and CellDeadline are the vertical lines of the
	// termination request and of the deadline, in cells no instance
	// covers.
	CellTermination
	CellDeadline
	// CellRun: the instance runs.
	CellRun
	// CellStopping: its stop has begun (its preStop hook, its stop
	// signal, the wait for its exit).
	CellStopping
	// CellProbeFailed: a probe attempt failed.
	CellProbeFailed
	// CellSignal: its stop signal went out.
	CellSignal
	// CellKill: it was sent SIGKILL.
	CellKill
)

// Row is one instance's row of a Layout.
type Row struct {
	Instance Instance
	// Label names the instance: "sidecar proxy #1".
	Label string
	// Outcome says how it ended: "exit 0", "exit 137, SIGKILL", "running".
	Outcome string
	// Failed: it exited with a non-zero code.
	Failed bool
	Cells  []CellKind
}

// Tick is a labelled point of the time axis.
type Tick struct {
	Column int
	At     time.Duration // since the window's start
	Label  string
}

// Line is a pod mark drawn across the rows.
type Line struct {
	Kind MarkKind
	At   time.Duration // since the window's start
	// Column is where it is drawn; -1 when it falls outside the window.
	Column int
	Label  string
}

// Layout is a Pod placed on a grid of Columns cells spanning Window: the
// picture without its glyphs, which Text draws (and the tests read).
type Layout struct {
	Pod     *Pod
	Window  Window
	Columns int
	Rows    []Row
	Ticks   []Tick
	Lines   []Line
}

// Lay places p's instances and marks on columns cells (at least 1)
// spanning w. Rows come by container, in the order each container first
// started, and by attempt within a container.
func Lay(p *Pod, w Window, columns int) *Layout {
	columns = max(columns, 1)
	l := &Layout{Pod: p, Window: w, Columns: columns}
	nameW := 0
	for _, in := range p.Instances {
		nameW = max(nameW, len(in.Container))
	}
	for _, in := range orderedInstances(p) {
		l.Rows = append(l.Rows, l.row(in, nameW))
	}
	l.Ticks = ticks(w, columns, func(d time.Duration) int { return l.column(w.From.Add(d)) })
	for _, m := range p.Marks {
		if m.Kind == MarkProbeFailed {
			continue
		}
		col := -1
		if !m.At.Before(w.From) && !m.At.After(w.To) {
			col = l.column(m.At)
		}
		l.Lines = append(l.Lines, Line{Kind: m.Kind, At: m.At.Sub(w.From), Column: col, Label: markLabel(m)})
	}
	l.drawLines()
	return l
}

// orderedInstances sorts p's instances by container, in the order each
// container first started, then by start.
func orderedInstances(p *Pod) []Instance {
	first := map[string]time.Time{}
	order := map[string]int{}
	for i, in := range p.Instances {
		if t, ok := first[in.Container]; !ok || in.StartedAt.Before(t) {
			first[in.Container] = in.StartedAt
		}
		if _, ok := order[in.Container]; !ok {
			order[in.Container] = i
		}
	}
	out := slices.Clone(p.Instances)
	slices.SortStableFunc(out, func(a, b Instance) int {
		if a.Container != b.Container {
			if c := first[a.Container].Compare(first[b.Container]); c != 0 {
				return c
			}
			return order[a.Container] - order[b.Container]
		}
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return a.Attempt - b.Attempt
	})
	return out
}

// column is the cell that holds time t, clamped to the grid.
func (l *Layout) column(t time.Time) int {
	f := float64(t.Sub(l.Window.From)) / float64(l.Window.Span())
	return min(max(int(math.Floor(f*float64(l.Columns))), 0), l.Columns-1)
}

// lastColumn is the last cell an interval ending (exclusively) at t
// covers.
func (l *Layout) lastColumn(t time.Time) int {
	f := float64(t.Sub(l.Window.From)) / float64(l.Window.Span())
	return min(max(int(math.Ceil(f*float64(l.Columns)))-1, 0), l.Columns-1)
}

// cellStart is the time cell c begins.
func (l *Layout) cellStart(c int) time.Time {
	return l.Window.From.Add(time.Duration(float64(l.Window.Span()) * float64(c) / float64(l.Columns)))
}

// end is where the instance's bar ends: its exit, else the window's end.
func (l *Layout) end(in *Instance) time.Time {
	if in.Exited() {
		return in.FinishedAt
	}
	return l.Window.To
}

// row lays one instance out; nameW is the widest container name, so
// that the labels line up.
func (l *Layout) row(in Instance, nameW int) Row {
	r := Row{Instance: in, Label: fmt.Sprintf("%-7s %-*s #%d", in.Role, nameW, in.Container, in.Attempt), Cells: make([]CellKind, l.Columns)}
	r.Outcome, r.Failed = outcome(&in)
	for i := range r.Cells {
		r.Cells[i] = CellEmpty
	}
	end := l.end(&in)
	if end.Before(l.Window.From) || in.StartedAt.After(l.Window.To) {
		return r // outside the window
	}
	first, last := l.column(in.StartedAt), max(l.lastColumn(end), l.column(in.StartedAt))
	for c := first; c <= last; c++ {
		r.Cells[c] = CellRun
		if !in.StopRequestedAt.IsZero() && !l.cellStart(c).Before(in.StopRequestedAt) {
			r.Cells[c] = CellStopping
		}
	}
	if !in.StopRequestedAt.IsZero() {
		r.Cells[max(l.column(in.StopRequestedAt), first)] = CellStopping
	}
	put := func(t time.Time, k CellKind) {
		if !t.IsZero() && !t.Before(l.Window.From) && !t.After(l.Window.To) {
			if c := l.column(t); r.Cells[c] < k {
				r.Cells[c] = k
			}
		}
	}
	for _, m := range l.Pod.Marks {
		if m.Kind == MarkProbeFailed && m.Container == in.Container && m.Attempt == in.Attempt {
			put(m.At, CellProbeFailed)
		}
	}
	put(in.SignalledAt, CellSignal)
	put(in.KilledAt, CellKill)
	return r
}

// drawLines draws the termination request and the deadline through the
// cells no instance covers.
func (l *Layout) drawLines() {
	for _, ln := range l.Lines {
		var k CellKind
		switch ln.Kind {
		case MarkTerminationRequested:
			k = CellTermination
		case MarkDeadline:
			k = CellDeadline
		default:
			continue
		}
		if ln.Column < 0 {
			continue
		}
		for i := range l.Rows {
			if c := &l.Rows[i].Cells[ln.Column]; *c < CellRun && *c < k {
				*c = k
			}
		}
	}
}

// outcome says how an instance ended, and whether it failed.
func outcome(in *Instance) (string, bool) {
	if !in.Exited() {
		if !in.StopRequestedAt.IsZero() {
			return "stopping", false
		}
		return "running", false
	}
	s := fmt.Sprintf("exit %d", in.ExitCode)
	var why []string
	if in.Reason != "" && in.Reason != "Completed" && in.Reason != "Error" {
		why = append(why, in.Reason)
	}
	if !in.KilledAt.IsZero() {
		why = append(why, "SIGKILL")
	} else if in.Signal != "" {
		why = append(why, "after "+in.Signal)
	}
	if len(why) > 0 {
		s += ", " + strings.Join(why, ", ")
	}
	return s, in.ExitCode != 0
}

func markLabel(m Mark) string {
	var s string
	switch m.Kind {
	case MarkTerminationRequested:
		s = "termination requested"
	case MarkDeadline:
		s = "deadline"
	case MarkTerminated:
		s = "terminated"
	default:
		s = m.Kind.String()
	}
	if m.Detail != "" {
		s += " (" + m.Detail + ")"
	}
	return s
}

// ticks are the labelled points of the axis: multiples of a round step
// (1, 2 or 5 × 10^n of a unit), about one every ten columns.
func ticks(w Window, columns int, col func(time.Duration) int) []Tick {
	span := w.Span()
	step := niceStep(span / time.Duration(max(columns/10, 1)))
	var out []Tick
	for d := time.Duration(0); d <= span; d += step {
		out = append(out, Tick{Column: col(d), At: d, Label: FormatOffset(d)})
	}
	return out
}

// niceStep rounds d up to 1, 2 or 5 × 10^n milliseconds (at least 1 ms).
func niceStep(d time.Duration) time.Duration {
	step := time.Millisecond
	for {
		for _, m := range []time.Duration{1, 2, 5} {
			if m*step >= d {
				return m * step
			}
		}
		step *= 10
	}
}

// FormatOffset writes a time since the window's start briefly: "0s",
// "250ms", "1.5s", "2m30s".
func FormatOffset(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d < time.Second && d > -time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", d.Seconds()), "0"), ".") + "s"
	default:
		return d.Round(time.Second).String()
	}
}
