package timeline

import (
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// glyphs draw each CellKind in a terminal.
var glyphs = map[CellKind]string{
	CellEmpty:       " ",
	CellTermination: "│",
	CellDeadline:    "┆",
	CellRun:         "█",
	CellStopping:    "▒",
	CellProbeFailed: "!",
	CellSignal:      "◆",
	CellKill:        "✕",
}

// ANSI colours: each role its bar colour, the failures red.
const (
	ansiReset = "\x1b[0m"
	ansiDim   = "\x1b[2m"
	ansiBold  = "\x1b[1m"
	ansiRed   = "\x1b[31m"
)

var roleColors = map[Role]string{
	RoleInit:    "\x1b[36m", // cyan
	RoleSidecar: "\x1b[35m", // magenta
	RoleMain:    "\x1b[32m", // green
	RoleDefer:   "\x1b[33m", // yellow
}

// TextOptions shape Text's picture.
type TextOptions struct {
	// Width is the whole line's width in columns (at least 40 are used).
	Width int
	// Color writes ANSI colours.
	Color bool
}

// Text draws p over w as a Gantt chart in Unicode blocks, one line per
// instance, at most opts.Width columns wide (the title and the legend
// may be longer). It writes only to out.
func Text(out io.Writer, p *Pod, w Window, opts TextOptions) error {
	width := max(opts.Width, 40)
	labelW, outcomeW := 0, 0
	probe := Lay(p, w, 1)
	for _, r := range probe.Rows {
		labelW = max(labelW, utf8.RuneCountInString(r.Label))
		outcomeW = max(outcomeW, utf8.RuneCountInString(r.Outcome))
	}
	l := Lay(p, w, max(width-labelW-outcomeW-2, 10))
	t := &textWriter{color: opts.Color}
	t.line(title(p, w))
	pad := strings.Repeat(" ", labelW+1)
	t.line(pad + axisLabels(l))
	t.line(pad + axisRuler(l))
	for _, r := range l.Rows {
		t.printf("%-*s ", labelW, r.Label)
		for _, c := range r.Cells {
			t.cell(c, r.Instance.Role)
		}
		oc := ""
		if r.Failed {
			oc = ansiRed
		}
		t.paint(oc, " "+r.Outcome)
		t.line("")
	}
	for _, ln := range l.Lines {
		t.line(lineNote(ln, w))
	}
	t.line("█ running  ▒ stopping  ! probe failed  ◆ stop signal  ✕ SIGKILL  │ termination requested  ┆ deadline")
	_, err := io.WriteString(out, t.b.String())
	return err
}

// title says which pod, from when and for how long.
func title(p *Pod, w Window) string {
	s := fmt.Sprintf("pod %s/%s (uid %s) from %s, %s", p.Namespace, p.Name, p.UID, w.From.UTC().Format("2006-01-02T15:04:05.000Z"), FormatOffset(w.To.Sub(w.From)))
	switch {
	case p.Gone:
		s += ", removed"
	case p.mark(MarkTerminated) == nil:
		s += ", still running"
	}
	if p.Dropped > 0 {
		s += fmt.Sprintf(" (%d older records dropped)", p.Dropped)
	}
	return s
}

// lineNote explains one line under the chart.
func lineNote(ln Line, w Window) string {
	g := " "
	switch ln.Kind {
	case MarkTerminationRequested:
		g = glyphs[CellTermination]
	case MarkDeadline:
		g = glyphs[CellDeadline]
	}
	s := fmt.Sprintf("%s +%s %s", g, FormatOffset(ln.At), ln.Label)
	if ln.Column < 0 && ln.At > w.Span() {
		s += ", after the end"
	}
	return s
}

// axisLabels places the ticks' labels at their columns, skipping one
// that would touch the one before.
func axisLabels(l *Layout) string {
	b := []rune(strings.Repeat(" ", l.Columns))
	next := 0
	for _, tk := range l.Ticks {
		if tk.Column < next || tk.Column+len(tk.Label) > l.Columns {
			continue
		}
		copy(b[tk.Column:], []rune(tk.Label))
		next = tk.Column + len(tk.Label) + 1
	}
	return strings.TrimRight(string(b), " ")
}

// axisRuler is a rule with a notch at each tick.
func axisRuler(l *Layout) string {
	b := []rune(strings.Repeat("─", l.Columns))
	for _, tk := range l.Ticks {
		b[tk.Column] = '┬'
	}
	return string(b)
}

type textWriter struct {
	b     strings.Builder
	color bool
}

func (t *textWriter) printf(format string, args ...any) { fmt.Fprintf(&t.b, format, args...) }

func (t *textWriter) line(s string) {
	t.b.WriteString(strings.TrimRight(s, " "))
	t.b.WriteByte('\n')
}

// paint writes s in the colour code (none when empty or colour is off).
func (t *textWriter) paint(code, s string) {
	if !t.color || code == "" {
		t.b.WriteString(s)
		return
	}
	t.b.WriteString(code + s + ansiReset)
}

func (t *textWriter) cell(c CellKind, role Role) {
	code := ""
	switch c {
	case CellRun, CellStopping:
		code = roleColors[role]
	case CellProbeFailed, CellKill:
		code = ansiBold + ansiRed
	case CellSignal:
		code = ansiBold
	case CellTermination, CellDeadline:
		code = ansiDim
	}
	t.paint(code, glyphs[c])
}

// TextWidth is the width Text uses when none is known.
const TextWidth = 100
