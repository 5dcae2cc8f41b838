package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"
	"sigs.k8s.io/yaml"

	"github.com/podward/podward/internal/model"
)

// Output formats of get and events, as kubectl names them.
const (
	outputTable = ""
	outputWide  = "wide"
	outputJSON  = "json"
	outputYAML  = "yaml"
	outputName  = "name"
)

func checkOutput(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	var names []string
	for _, a := range allowed {
		if a != "" {
			names = append(names, a)
		}
	}
	sort.Strings(names)
	return fmt.Errorf("unable to match a printer suitable for the output format %q, allowed formats are: %s", format, strings.Join(names, ","))
}

// table prints rows in aligned columns the way kubectl's tab writer does:
// a column is as wide as its widest cell plus 3 spaces (at least 6), the
// last cell of a row is not padded, and widths only grow from one flush to
// the next, so that rows printed later while watching stay aligned.
type table struct {
	w      io.Writer
	widths []int
	rows   [][]string
	headed bool
}

const (
	tableMinWidth = 6
	tablePadding  = 3
)

func newTable(w io.Writer) *table { return &table{w: w} }

// row queues a row; flush prints it. Each cell is shown as kubectl's table
// printer shows it (see tableCell).
func (t *table) row(cells ...string) {
	shown := make([]string, len(cells))
	for i, c := range cells {
		shown[i] = tableCell(c)
	}
	t.rows = append(t.rows, shown)
}

// tableCell is a cell as cli-runtime's table printer prints it since
// kubectl 1.26: cut at the first line break (LF, CR or FF) with "..."
// after it, and ESC shown as "^[" (printers.EscapeTerminal), so that text
// from a container cannot move the cursor or clear the reader's screen.
func tableCell(c string) string {
	if i := strings.IndexAny(c, "\f\n\r"); i >= 0 {
		return printers.EscapeTerminal(c[:i]) + "..."
	}
	return printers.EscapeTerminal(c)
}

// header queues the header row, the first time only: rows printed later
// while watching go under the same one.
func (t *table) header(cells ...string) {
	if !t.headed {
		t.row(cells...)
		t.headed = true
	}
}

// flush prints the queued rows.
func (t *table) flush() error {
	for _, r := range t.rows {
		for i, c := range r[:max(len(r)-1, 0)] {
			if i >= len(t.widths) {
				t.widths = append(t.widths, tableMinWidth)
			}
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(c)+tablePadding)
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(c)))
			}
		}
		b.WriteByte('\n')
	}
	t.rows = t.rows[:0]
	_, err := io.WriteString(t.w, b.String())
	return err
}

// since is how long ago t was, as kubectl prints ages: "<unknown>" for no
// time, else duration.HumanDuration ("5s", "3m2s", "4h", "12d", "2y").
func since(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// podColumns are the headers of the pod table.
func podColumns(wide, allNamespaces bool) []string {
	cols := []string{"NAME", "READY", "STATUS", "RESTARTS", "AGE"}
	if wide {
		cols = append(cols, "IP", "NODE", "NOMINATED NODE", "READINESS GATES")
	}
	if allNamespaces {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	return cols
}

// podRow is a pod's row, computed as kubectl's pod printer does (see
// summarizePod): NAME READY STATUS RESTARTS AGE, then, wide, IP NODE
// NOMINATED NODE READINESS GATES; NAMESPACE first for every namespace.
func podRow(p *v1.Pod, now time.Time, wide, allNamespaces bool) []string {
	st := summarizePod(p)
	restarts := strconv.Itoa(st.restarts)
	if st.restarts != 0 && !st.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", st.restarts, since(st.lastRestart, now))
	}
	row := []string{p.Name, fmt.Sprintf("%d/%d", st.ready, st.total), st.reason, restarts, since(p.CreationTimestamp, now)}
	if wide {
		ip := p.Status.PodIP
		if len(p.Status.PodIPs) > 0 {
			ip = p.Status.PodIPs[0].IP
		}
		row = append(row, orNone(ip), orNone(p.Spec.NodeName), orNone(p.Status.NominatedNodeName), readinessGates(p))
	}
	if allNamespaces {
		row = append([]string{p.Namespace}, row...)
	}
	return row
}

// podSummary is what the READY, STATUS and RESTARTS cells show.
type podSummary struct {
	ready, total int
	reason       string
	restarts     int
	lastRestart  metav1.Time
	// The sidecars' share of restarts and lastRestart: all that counts of
	// the init containers once the pod is initialized.
	sidecarRestarts    int
	lastSidecarRestart metav1.Time
}

// summarizePod computes a pod's cells as kubectl's pod printer does:
//   - READY counts ready regular containers and started, ready sidecars
//     (restartable init containers) over regular containers plus sidecars;
//   - STATUS is the phase, or the reason of the first init container that
//     is not done (Init:N/M, Init:Error, Init:CrashLoopBackOff, ...), or of
//     the last regular container that is waiting or terminated
//     (CrashLoopBackOff, Completed, Error, ContainerCreating, ...), back to
//     Running while one still runs and the pod is Ready (NotReady
//     otherwise), and Terminating once a deletion started;
//   - RESTARTS sums the restarts, with the time of the last one.
func summarizePod(p *v1.Pod) podSummary {
	s := podSummary{total: len(p.Spec.Containers), reason: string(p.Status.Phase)}
	if p.Status.Reason != "" {
		s.reason = p.Status.Reason
	}
	initializing := s.addInitContainers(p)
	if !initializing || conditionTrue(p, v1.PodInitialized) {
		s.addContainers(p)
	}
	if p.DeletionTimestamp != nil && p.Status.Phase != v1.PodSucceeded && p.Status.Phase != v1.PodFailed {
		s.reason = "Terminating"
	}
	return s
}

// addInitContainers counts the sidecars, and the init containers' restarts
// and ready sidecars up to the first init container that is not done,
// whose reason becomes the pod's. It reports whether there was one: the
// pod is still initializing.
func (s *podSummary) addInitContainers(p *v1.Pod) bool {
	inits := map[string]*v1.Container{}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		inits[c.Name] = c
		if model.IsSidecar(c) {
			s.total++
		}
	}
	for i, cs := range p.Status.InitContainerStatuses {
		s.restarts += int(cs.RestartCount)
		laterRestart(&s.lastRestart, cs)
		sidecar := inits[cs.Name] != nil && model.IsSidecar(inits[cs.Name])
		if sidecar {
			s.sidecarRestarts += int(cs.RestartCount)
			laterRestart(&s.lastSidecarRestart, cs)
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode == 0:
			continue
		case sidecar && cs.Started != nil && *cs.Started:
			if cs.Ready {
				s.ready++
			}
			continue
		}
		s.reason = initReason(cs, i, len(p.Spec.InitContainers))
		return true
	}
	return false
}

// initReason is the STATUS of a pod whose init container i of n, with
// status cs, is not done.
func initReason(cs v1.ContainerStatus, i, n int) string {
	switch {
	case cs.State.Terminated != nil:
		switch t := cs.State.Terminated; {
		case t.Reason != "":
			return "Init:" + t.Reason
		case t.Signal != 0:
			return fmt.Sprintf("Init:Signal:%d", t.Signal)
		default:
			return fmt.Sprintf("Init:ExitCode:%d", t.ExitCode)
		}
	case cs.State.Waiting != nil && cs.State.Waiting.Reason != "" && cs.State.Waiting.Reason != "PodInitializing":
		return "Init:" + cs.State.Waiting.Reason
	default:
		return fmt.Sprintf("Init:%d/%d", i, n)
	}
}

// addContainers counts the regular containers' restarts (on top of the
// sidecars') and ready ones; the reason is the last one's that is waiting
// or terminated, from the last container to the first.
func (s *podSummary) addContainers(p *v1.Pod) {
	s.restarts, s.lastRestart = s.sidecarRestarts, s.lastSidecarRestart
	hasRunning := false
	for i := len(p.Status.ContainerStatuses) - 1; i >= 0; i-- {
		cs := p.Status.ContainerStatuses[i]
		s.restarts += int(cs.RestartCount)
		laterRestart(&s.lastRestart, cs)
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			s.reason = cs.State.Waiting.Reason
		case cs.State.Terminated != nil && cs.State.Terminated.Reason != "":
			s.reason = cs.State.Terminated.Reason
		case cs.State.Terminated != nil && cs.State.Terminated.Signal != 0:
			s.reason = fmt.Sprintf("Signal:%d", cs.State.Terminated.Signal)
		case cs.State.Terminated != nil:
			s.reason = fmt.Sprintf("ExitCode:%d", cs.State.Terminated.ExitCode)
		case cs.Ready && cs.State.Running != nil:
			hasRunning = true
			s.ready++
		}
	}
	if s.reason == "Completed" && hasRunning {
		s.reason = "NotReady"
		if conditionTrue(p, v1.PodReady) {
			s.reason = "Running"
		}
	}
}

// laterRestart moves last to the end of cs's last termination when that is
// later.
func laterRestart(last *metav1.Time, cs v1.ContainerStatus) {
	if t := cs.LastTerminationState.Terminated; t != nil && last.Before(&t.FinishedAt) {
		*last = t.FinishedAt
	}
}

func readinessGates(p *v1.Pod) string {
	if len(p.Spec.ReadinessGates) == 0 {
		return "<none>"
	}
	n := 0
	for _, g := range p.Spec.ReadinessGates {
		if conditionTrue(p, g.ConditionType) {
			n++
		}
	}
	return fmt.Sprintf("%d/%d", n, len(p.Spec.ReadinessGates))
}

func conditionTrue(p *v1.Pod, t v1.PodConditionType) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// eventColumns are the headers of `podward events`, kubectl events' own.
func eventColumns(allNamespaces bool) []string {
	cols := []string{"LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"}
	if allNamespaces {
		cols = append([]string{"NAMESPACE"}, cols...)
	}
	return cols
}

// eventRow is an event's row as kubectl events prints it.
func eventRow(e *v1.Event, now time.Time, allNamespaces bool) []string {
	row := []string{eventInterval(e, now), e.Type, e.Reason, e.InvolvedObject.Kind + "/" + e.InvolvedObject.Name, strings.TrimSpace(e.Message)}
	if allNamespaces {
		row = append([]string{e.Namespace}, row...)
	}
	return row
}

// eventInterval is "5s", or "5s (x3 over 2m)" for a repeated event.
func eventInterval(e *v1.Event, now time.Time) string {
	first := since(e.FirstTimestamp, now)
	if !e.EventTime.IsZero() {
		first = duration.HumanDuration(now.Sub(e.EventTime.Time))
	}
	switch {
	case e.Series != nil:
		return fmt.Sprintf("%s (x%d over %s)", duration.HumanDuration(now.Sub(e.Series.LastObservedTime.Time)), e.Series.Count, first)
	case e.Count > 1:
		return fmt.Sprintf("%s (x%d over %s)", since(e.LastTimestamp, now), e.Count, first)
	default:
		return first
	}
}

// sortEvents orders events by when they were last seen, oldest first, as
// kubectl does.
func sortEvents(items []v1.Event) {
	sort.SliceStable(items, func(i, j int) bool {
		return eventTime(&items[i]).Before(eventTime(&items[j]))
	})
}

func eventTime(e *v1.Event) time.Time {
	if !e.LastTimestamp.IsZero() {
		return e.LastTimestamp.Time
	}
	return e.EventTime.Time
}

// objectStream prints objects one after another in JSON or YAML, as
// kubectl does for a list and then for each change while watching: YAML
// documents are separated by "---".
type objectStream struct {
	out    io.Writer
	format string
	// template prints the template formats (jsonpath, go-template).
	template printers.ResourcePrinter
	printed  int // YAML documents so far
}

// objects reports whether the format prints objects rather than rows.
func (o *objectStream) objects() bool {
	return o.format == outputJSON || o.format == outputYAML || o.template != nil
}

// printObject prints obj; it is called only when objects() holds.
func (o *objectStream) printObject(obj any) error {
	if o.template != nil {
		return printTemplate(o.out, o.template, obj)
	}
	if o.format == outputJSON {
		return printJSON(o.out, obj)
	}
	if o.printed > 0 {
		if _, err := io.WriteString(o.out, "---\n"); err != nil {
			return err
		}
	}
	o.printed++
	return printYAML(o.out, obj)
}

// printJSON prints obj as kubectl -o json does: keys sorted, indented by
// four spaces.
func printJSON(w io.Writer, obj any) error {
	raw, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	var generic any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&generic); err != nil {
		return err
	}
	out, err := json.MarshalIndent(generic, "", "    ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(out, '\n'))
	return err
}

// printYAML prints obj as kubectl -o yaml does.
func printYAML(w io.Writer, obj any) error {
	out, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	_, err = w.Write(out)
	return err
}

// listObject is what kubectl prints for several objects with -o json|yaml.
type listObject struct {
	APIVersion string            `json:"apiVersion"`
	Items      []any             `json:"items"`
	Kind       string            `json:"kind"`
	Metadata   map[string]string `json:"metadata"`
}

func newList(items []any) *listObject {
	if items == nil {
		items = []any{}
	}
	return &listObject{APIVersion: "v1", Kind: "List", Items: items, Metadata: map[string]string{"resourceVersion": ""}}
}

// withPodKind sets the kind and apiVersion kubectl shows on each pod.
func withPodKind(p *v1.Pod) *v1.Pod {
	p.Kind, p.APIVersion = "Pod", "v1"
	return p
}

func withEventKind(e *v1.Event) *v1.Event {
	e.Kind, e.APIVersion = "Event", "v1"
	return e
}
