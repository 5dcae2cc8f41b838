package cli

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"k8s.io/cli-runtime/pkg/printers"

	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
)

// printer serialises event lines and container output on one writer.
type printer struct {
	mu     sync.Mutex
	w      io.Writer
	color  bool
	width  int
	multi  bool
	colors map[string]string
}

var palette = []string{"\x1b[36m", "\x1b[33m", "\x1b[32m", "\x1b[35m", "\x1b[34m", "\x1b[31m"}

func newPrinter(w io.Writer, color bool, pods []*model.Pod) *printer {
	p := &printer{w: w, color: color, multi: len(pods) > 1, colors: map[string]string{}}
	for _, pod := range pods {
		for _, ref := range pod.Containers() {
			name := p.label(pod.Name, ref.Name)
			if len(name) > p.width {
				p.width = len(name)
			}
			if _, ok := p.colors[name]; !ok {
				p.colors[name] = palette[len(p.colors)%len(palette)]
			}
		}
	}
	return p
}

func (p *printer) label(pod, container string) string {
	if p.multi {
		return pod + "/" + container
	}
	return container
}

// output prints a line of a container's output as the container wrote it,
// control characters included, as kubectl logs and kubectl run --attach do.
func (p *printer) output(pod *model.Pod, container, stream string, line []byte) {
	name := p.label(pod.Name, container)
	prefix := fmt.Sprintf("%-*s | ", p.width, name)
	if p.color {
		prefix = p.colors[name] + prefix + "\x1b[0m"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s%s\n", prefix, strings.TrimRight(string(line), "\n"))
}

// event prints an event's line with ESC and CR escaped
// (printers.EscapeTerminal), as kubectl events prints a message since 1.26:
// a message can carry a container's text (a termination message, a probe's
// output). The colour is added after escaping.
func (p *printer) event(e events.Event) {
	line := e.Line()
	if p.multi {
		line = strings.Replace(line, " "+e.FieldPath+" ", " pod/"+e.Pod+"/"+e.FieldPath+" ", 1)
	}
	line = printers.EscapeTerminal(line)
	if p.color && e.Type == events.Warning {
		line = "\x1b[1;31m" + line + "\x1b[0m"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}

func (p *printer) note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, "podward:", msg)
}
