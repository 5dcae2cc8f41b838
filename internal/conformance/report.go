// Package conformance turns a run of Kubernetes' [NodeConformance] e2e
// specs against a podward node (hack/node-conformance.sh) into its report:
// every spec with passed / failed / skipped / not run, the one-line reason of
// each failure, and the failures grouped by cause, each cause naming what
// podward lacks and the issue that builds it.
//
// Its inputs are ginkgo's JUnit reports (one per shard of the run) and the
// node's log, where podward says which pods it refused and why
// ("rejecting a pod this node cannot run"). It imports nothing of podward:
// it reads files and writes markdown.
package conformance

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// Result is what became of one spec.
type Result int

const (
	// Passed: the spec ran and passed.
	Passed Result = iota + 1
	// Failed: the spec ran and failed (or panicked, or timed out).
	Failed
	// Skipped: the spec ran and skipped itself (e2eskipper), with a reason.
	Skipped
	// NotRun: the run was interrupted before or while the spec ran.
	NotRun
)

func (r Result) String() string {
	switch r {
	case Passed:
		return "pass"
	case Failed:
		return "fail"
	case Skipped:
		return "skip"
	case NotRun:
		return "not run"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// Spec is one spec's outcome.
type Spec struct {
	// Name is the spec's full text without ginkgo's "[It] " and its
	// trailing label list.
	Name    string
	Result  Result
	Seconds float64
	// Reason is the first line of the failure or skip message.
	Reason string
	// Cause groups the failure (empty unless Failed).
	Cause string
	// message and output are the failure's whole message and the spec's
	// captured output, used to find its cause.
	message, output string
}

// junit is the part of ginkgo's JUnit report that is read.
type junit struct {
	Cases []struct {
		Name    string  `xml:"name,attr"`
		Status  string  `xml:"status,attr"`
		Time    float64 `xml:"time,attr"`
		Failure *struct {
			Message string `xml:"message,attr"`
			Text    string `xml:",chardata"`
		} `xml:"failure"`
		Error *struct {
			Message string `xml:"message,attr"`
			Text    string `xml:",chardata"`
		} `xml:"error"`
		Skipped *struct {
			Message string `xml:"message,attr"`
		} `xml:"skipped"`
		SystemOut string `xml:"system-out"`
		SystemErr string `xml:"system-err"`
	} `xml:"testsuite>testcase"`
}

// labelList is the label list ginkgo appends to a spec's name in its
// JUnit report: " [Conformance, NodeConformance]".
var labelList = regexp.MustCompile(` \[[^\]]*, [^\]]*\]$`)

// ReadJUnit reads the specs of one ginkgo JUnit report. The suite's own
// nodes (BeforeSuite, AfterSuite, ReportAfterSuite...) are left out, and so
// are the specs the focus and skip did not select (skipped with no message
// of their own).
func ReadJUnit(r io.Reader) ([]Spec, error) {
	var doc struct {
		junit
		XMLName xml.Name
	}
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("read JUnit report: %w", err)
	}
	var specs []Spec
	for _, c := range doc.Cases {
		name, ok := strings.CutPrefix(c.Name, "[It] ")
		if !ok {
			continue
		}
		s := Spec{Name: labelList.ReplaceAllString(name, ""), Seconds: c.Time, output: c.SystemErr + c.SystemOut}
		failure := c.Failure
		if failure == nil && c.Error != nil {
			failure = (*struct {
				Message string `xml:"message,attr"`
				Text    string `xml:",chardata"`
			})(c.Error)
		}
		switch {
		case c.Status == "interrupted" || c.Status == "aborted":
			s.Result, s.Reason = NotRun, "the run was interrupted"
		case failure != nil || c.Status == "failed" || c.Status == "panicked" || c.Status == "timedout":
			s.Result = Failed
			if failure != nil {
				s.message = failure.Message + "\n" + failure.Text
			} else {
				s.message = c.Status
			}
			s.Reason = firstLine(s.message)
			if interrupted.MatchString(s.message) {
				s.Result, s.Reason = NotRun, "the run was interrupted: "+s.Reason
			}
		case c.Skipped != nil:
			msg := strings.TrimSpace(strings.TrimPrefix(c.Skipped.Message, "skipped"))
			msg = strings.TrimSpace(strings.TrimPrefix(msg, "-"))
			if msg == "" {
				continue // not selected
			}
			s.Result, s.Reason = Skipped, firstLine(msg)
		default:
			s.Result = Passed
		}
		specs = append(specs, s)
	}
	return specs, nil
}

var interrupted = regexp.MustCompile(`Interrupted by (User|Timeout)|suite timed out`)

func firstLine(msg string) string {
	for _, line := range strings.Split(msg, "\n") {
		line = strings.TrimSpace(line)
		line = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(line, "[FAILED]"), "[PANICKED]"))
		if line != "" {
			if len(line) > 230 {
				line = line[:230] + "…"
			}
			return line
		}
	}
	return ""
}

// Merge merges the specs of several reports (shards of one run, or a run
// and a rerun): a spec counts once, a finished result wins over not run, and
// a later report over an earlier one. The result is sorted by name.
func Merge(reports ...[]Spec) []Spec {
	byName := map[string]Spec{}
	for _, specs := range reports {
		for _, s := range specs {
			if old, ok := byName[s.Name]; ok && old.Result != NotRun && s.Result == NotRun {
				continue
			}
			byName[s.Name] = s
		}
	}
	out := make([]Spec, 0, len(byName))
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Rejections reads podward's node log: for each namespace, why podward
// refused its pods, in the order logged.
func Rejections(log io.Reader) (map[string][]string, error) {
	out := map[string][]string{}
	sc := bufio.NewScanner(log)
	sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
	for sc.Scan() {
		m := rejection.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		out[m[1]] = append(out[m[1]], strings.ReplaceAll(m[2], `\"`, `"`))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the node's log: %w", err)
	}
	return out, nil
}

var (
	rejection = regexp.MustCompile(`msg="rejecting a pod this node cannot run" pod=([^/ ]+)/\S+ .*?err="(.*)"\s*$`)
	// the e2e framework names each spec's namespace in its output
	specNamespace = regexp.MustCompile(`namespace[: "]+([a-z0-9][-a-z0-9]*-[0-9]+)`)
)

// Classify sets the Cause of every failed spec: podward's refusal of one of
// its pods, when the node's log has one for a namespace the spec's output
// names; else the first of causes whose pattern matches the failure
// message or the spec's name; else "other".
func Classify(specs []Spec, rejected map[string][]string, causes []Cause) {
	for i := range specs {
		s := &specs[i]
		if s.Result != Failed {
			continue
		}
		s.Cause = ""
		for _, m := range specNamespace.FindAllStringSubmatch(s.output, -1) {
			if errs := rejected[m[1]]; len(errs) > 0 {
				s.Cause = classifyRejection(errs[0], causes)
				break
			}
		}
		if s.Cause == "" {
			s.Cause = "other"
			for _, c := range causes {
				if (c.Message != nil && c.Message.MatchString(s.message)) || (c.Spec != nil && c.Spec.MatchString(s.Name)) {
					s.Cause = c.Name
					break
				}
			}
		}
	}
}

func classifyRejection(err string, causes []Cause) string {
	for _, c := range causes {
		if c.Rejection != nil && c.Rejection.MatchString(err) {
			return c.Name
		}
	}
	// the refusal itself, without the names and indexes that differ by pod
	err = strings.TrimPrefix(err, "invalid pod: ")
	err = regexp.MustCompile(`\[\d+\]`).ReplaceAllString(err, "[*]")
	err = regexp.MustCompile(`"[^"]*"`).ReplaceAllString(err, `"…"`)
	if len(err) > 160 {
		err = err[:160] + "…"
	}
	return "refused by podward: " + err
}

// Totals counts the specs by result.
func Totals(specs []Spec) map[Result]int {
	t := map[Result]int{}
	for _, s := range specs {
		t[s.Result]++
	}
	return t
}

// WriteMarkdown writes the report's tables: the totals, the failures by
// cause (with what each cause is, from causes), and every spec.
func WriteMarkdown(w io.Writer, specs []Spec, causes []Cause) error {
	t := Totals(specs)
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "**%d passed, %d failed, %d skipped, %d not run, of %d specs**\n\n",
		t[Passed], t[Failed], t[Skipped], t[NotRun], len(specs))
	count := map[string]int{}
	for _, s := range specs {
		if s.Result == Failed {
			count[s.Cause]++
		}
	}
	if len(count) > 0 {
		names := make([]string, 0, len(count))
		for c := range count {
			names = append(names, c)
		}
		sort.Slice(names, func(i, j int) bool {
			if count[names[i]] != count[names[j]] {
				return count[names[i]] > count[names[j]]
			}
			return names[i] < names[j]
		})
		notes := map[string]string{}
		for _, c := range causes {
			notes[c.Name] = c.Note
		}
		fmt.Fprintln(bw, "| failure cause | specs | what it takes |")
		fmt.Fprintln(bw, "|---|---|---|")
		for _, c := range names {
			fmt.Fprintf(bw, "| %s | %d | %s |\n", cell(c), count[c], cell(notes[c]))
		}
		fmt.Fprintln(bw)
	}
	fmt.Fprintln(bw, "| # | spec | result | cause | reason (first line of the failure or skip) | s |")
	fmt.Fprintln(bw, "|---|---|---|---|---|---|")
	for i, s := range specs {
		fmt.Fprintf(bw, "| %d | %s | %s | %s | %s | %.0f |\n", i+1, cell(s.Name), s.Result, cell(s.Cause), cell(s.Reason), s.Seconds)
	}
	return bw.Flush()
}

func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}
