package timeline

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"
)

// SVGWidth is the picture's width in pixels when none is given.
const SVGWidth = 960

// The SVG's geometry, in pixels: a monospace font of fontSize is about
// charW wide per character.
const (
	fontSize = 12
	charW    = 7.3
	rowH     = 24
	barH     = 14
	topH     = 76 // title, subtitle and axis
	pad      = 12
)

// svgColors are the bars' fills by role, and the failures' colour.
var svgColors = map[Role]string{
	RoleInit:    "#4e79a7",
	RoleSidecar: "#b07aa1",
	RoleMain:    "#59a14f",
	RoleDefer:   "#f28e2b",
}

const svgRed = "#d62728"

// SVG draws p over w as a self-contained SVG picture width pixels wide
// (SVGWidth when 0): one row per instance with its bar, the stop's part of
// it hatched, its probe failures, stop signal and SIGKILL marked, the
// termination request and the deadline as vertical lines, and a legend.
// Each bar's <title> gives its exact times. It writes only to out.
func SVG(out io.Writer, p *Pod, w Window, width int) error {
	if width <= 0 {
		width = SVGWidth
	}
	l := Lay(p, w, 1)
	labelChars, outcomeChars := 0, 0
	for _, r := range l.Rows {
		labelChars = max(labelChars, utf8.RuneCountInString(r.Label))
		outcomeChars = max(outcomeChars, utf8.RuneCountInString(r.Outcome))
	}
	s := &svg{w: w, left: pad + float64(labelChars)*charW + pad}
	s.right = max(float64(width)-pad-float64(outcomeChars)*charW-pad, s.left+100)
	rowsBottom := float64(topH + rowH*len(l.Rows))
	height := int(rowsBottom) + 24*(len(l.Lines)+1) + 2*pad

	s.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="%d">`+"\n", width, height, width, height, fontSize)
	s.printf(`<defs><pattern id="stopping" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="3" height="6" fill="#ffffff" fill-opacity="0.55"/></pattern></defs>` + "\n")
	s.printf(`<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, height)
	s.text(pad, 20, "start", `font-weight="bold" font-size="14"`, fmt.Sprintf("pod %s/%s", p.Namespace, p.Name))
	s.text(pad, 38, "start", `fill="#555555"`, strings.TrimPrefix(title(p, w), fmt.Sprintf("pod %s/%s ", p.Namespace, p.Name)))
	s.axis(rowsBottom)
	for i, r := range l.Rows {
		s.row(p, r, float64(topH+rowH*i))
	}
	y := rowsBottom + 20
	for _, ln := range l.Lines {
		s.line(ln, rowsBottom, y)
		y += 24
	}
	s.legend(y)
	s.printf("</svg>\n")
	_, err := out.Write(s.b.Bytes())
	return err
}

type svg struct {
	b           bytes.Buffer
	w           Window
	left, right float64
}

func (s *svg) printf(format string, args ...any) { fmt.Fprintf(&s.b, format, args...) }

// x is where time t is, clamped to the chart.
func (s *svg) x(t time.Time) float64 {
	f := float64(t.Sub(s.w.From)) / float64(s.w.Span())
	return s.left + (s.right-s.left)*min(max(f, 0), 1)
}

func (s *svg) text(x, y float64, anchor, attrs, body string) {
	if attrs != "" {
		attrs = " " + attrs
	}
	s.printf(`<text x="%.1f" y="%.1f" text-anchor="%s"%s>%s</text>`+"\n", x, y, anchor, attrs, esc(body))
}

// axis draws the tick labels, their grid lines and the axis rule.
func (s *svg) axis(bottom float64) {
	// About one tick per ten characters' width, as Text has.
	for _, tk := range ticks(s.w, int((s.right-s.left)/charW), func(time.Duration) int { return 0 }) {
		x := s.x(s.w.From.Add(tk.At))
		s.printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#e6e6e6"/>`+"\n", x, topH-8, x, bottom)
		s.text(x, topH-14, "middle", `fill="#555555"`, tk.Label)
	}
	s.printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#999999"/>`+"\n", s.left, topH-8, s.right, topH-8)
}

// row draws one instance: its label, its bar (hatched from its stop on),
// its marks and its outcome.
func (s *svg) row(p *Pod, r Row, y float64) {
	in := r.Instance
	s.text(pad, y+rowH/2+4, "start", `xml:space="preserve"`, r.Label)
	end := in.FinishedAt
	if !in.Exited() {
		end = s.w.To
	}
	x0, x1 := s.x(in.StartedAt), s.x(end)
	x1 = max(x1, x0+2)
	by := y + (rowH-barH)/2
	fill := svgColors[in.Role]
	s.printf(`<g><title>%s</title>`, esc(instanceTitle(&in, s.w)))
	s.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" rx="2" fill="%s"/>`, x0, by, x1-x0, barH, fill)
	if !in.StopRequestedAt.IsZero() {
		xs := min(max(s.x(in.StopRequestedAt), x0), x1)
		s.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%d" fill="url(#stopping)"/>`, xs, by, x1-xs, barH)
	}
	s.printf("</g>\n")
	for _, m := range p.Marks {
		if m.Kind == MarkProbeFailed && m.Container == in.Container && m.Attempt == in.Attempt {
			x := s.x(m.At)
			s.printf(`<path d="M%.1f %.1fl-4 -7h8z" fill="%s"><title>%s</title></path>`+"\n", x, by, svgRed, esc(fmt.Sprintf("%s probe failed at +%s", m.Detail, FormatOffset(m.At.Sub(s.w.From)))))
		}
	}
	cy := by + barH/2
	if !in.SignalledAt.IsZero() {
		x := s.x(in.SignalledAt)
		s.printf(`<path d="M%.1f %.1fl5 5l-5 5l-5 -5z" fill="#000000" stroke="#ffffff"><title>%s</title></path>`+"\n", x, cy-5, esc(fmt.Sprintf("%s at +%s", in.Signal, FormatOffset(in.SignalledAt.Sub(s.w.From)))))
	}
	if !in.KilledAt.IsZero() {
		x := s.x(in.KilledAt)
		s.printf(`<path d="M%.1f %.1fl8 8m0 -8l-8 8" stroke="%s" stroke-width="2.5"><title>%s</title></path>`+"\n", x-4, cy-4, svgRed, esc(fmt.Sprintf("SIGKILL at +%s", FormatOffset(in.KilledAt.Sub(s.w.From)))))
	}
	attrs := `fill="#333333"`
	if r.Failed {
		attrs = `fill="` + svgRed + `"`
	}
	s.text(s.right+pad, y+rowH/2+4, "start", attrs, r.Outcome)
}

// line draws a pod mark across the rows, and its note under them.
func (s *svg) line(ln Line, bottom, noteY float64) {
	stroke, dash := "#333333", "4 3"
	if ln.Kind == MarkDeadline {
		stroke, dash = svgRed, "2 3"
	}
	note := fmt.Sprintf("+%s %s", FormatOffset(ln.At), ln.Label)
	x := s.x(s.w.From.Add(ln.At))
	if ln.Column < 0 {
		note += ", after the end →"
		x = s.right
	} else if ln.Kind != MarkTerminated {
		s.printf(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="%s" stroke-width="1.5"/>`+"\n", x, topH-8, x, noteY-12, stroke, dash)
	}
	anchor := "start"
	if x > (s.left+s.right)/2 {
		anchor = "end"
	}
	s.text(x, noteY, anchor, `fill="`+stroke+`"`, note)
}

// legend explains the colours and marks.
func (s *svg) legend(y float64) {
	x := float64(pad)
	for _, r := range []Role{RoleInit, RoleSidecar, RoleMain, RoleDefer} {
		s.printf(`<rect x="%.1f" y="%.1f" width="14" height="10" fill="%s"/>`+"\n", x, y-9, svgColors[r])
		s.text(x+18, y, "start", "", r.String())
		x += 18 + charW*float64(len(r.String())) + 14
	}
	s.printf(`<rect x="%.1f" y="%.1f" width="14" height="10" fill="#888888"/><rect x="%.1f" y="%.1f" width="14" height="10" fill="url(#stopping)"/>`+"\n", x, y-9, x, y-9)
	s.text(x+18, y, "start", "", "stopping")
	x += 18 + charW*8 + 14
	s.printf(`<path d="M%.1f %.1fl-4 -7h8z" fill="%s"/>`+"\n", x+4, y, svgRed)
	s.text(x+12, y, "start", "", "probe failed")
	x += 12 + charW*12 + 14
	s.printf(`<path d="M%.1f %.1fl5 5l-5 5l-5 -5z" fill="#000000"/>`+"\n", x+5, y-9)
	s.text(x+14, y, "start", "", "stop signal")
	x += 14 + charW*11 + 14
	s.printf(`<path d="M%.1f %.1fl8 8m0 -8l-8 8" stroke="%s" stroke-width="2.5"/>`+"\n", x, y-8, svgRed)
	s.text(x+14, y, "start", "", "SIGKILL")
}

// instanceTitle is a bar's tooltip: the instance's exact times.
func instanceTitle(in *Instance, w Window) string {
	off := func(t time.Time) string { return "+" + FormatOffset(t.Sub(w.From)) }
	s := fmt.Sprintf("%s %s #%d: started %s", in.Role, in.Container, in.Attempt, off(in.StartedAt))
	if !in.StopRequestedAt.IsZero() {
		s += ", stop requested " + off(in.StopRequestedAt)
	}
	if !in.SignalledAt.IsZero() {
		s += fmt.Sprintf(", %s %s", in.Signal, off(in.SignalledAt))
	}
	if !in.KilledAt.IsZero() {
		s += ", SIGKILL " + off(in.KilledAt)
	}
	if in.Exited() {
		o, _ := outcome(in)
		s += fmt.Sprintf(", exited %s (%s)", off(in.FinishedAt), o)
	} else {
		s += ", still running"
	}
	return s
}

func esc(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}
