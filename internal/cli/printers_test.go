package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }

// podOf builds a pod with init containers (a "!" suffix makes a sidecar)
// and regular containers, and the given statuses.
func podOf(inits, mains []string, initStatuses, statuses []v1.ContainerStatus) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: ago(90 * time.Second)}}
	for _, n := range inits {
		c := v1.Container{Name: strings.TrimSuffix(n, "!")}
		if strings.HasSuffix(n, "!") {
			c.RestartPolicy = ptr.To(v1.ContainerRestartPolicyAlways)
		}
		p.Spec.InitContainers = append(p.Spec.InitContainers, c)
	}
	for _, n := range mains {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: n})
	}
	p.Status.Phase = v1.PodRunning
	p.Status.InitContainerStatuses = initStatuses
	p.Status.ContainerStatuses = statuses
	return p
}

func runningCS(name string, ready bool) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, Ready: ready, Started: ptr.To(true), State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: ago(time.Minute)}}}
}

func waitingCS(name, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, Started: ptr.To(false), State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason}}}
}

func exitedCS(name string, code int32, reason string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, Started: ptr.To(false), State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: code, Reason: reason, FinishedAt: ago(time.Minute)}}}
}

func withRestarts(cs v1.ContainerStatus, n int32, lastExit time.Duration) v1.ContainerStatus {
	cs.RestartCount = n
	cs.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", FinishedAt: ago(lastExit)}
	return cs
}

func withCondition(p *v1.Pod, t v1.PodConditionType) *v1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, v1.PodCondition{Type: t, Status: v1.ConditionTrue})
	return p
}

func TestPodRow(t *testing.T) {
	deleting := withCondition(podOf(nil, []string{"app"}, nil, []v1.ContainerStatus{runningCS("app", true)}), v1.PodReady)
	deleting.DeletionTimestamp = ptr.To(ago(0))
	succeeded := podOf(nil, []string{"app"}, nil, []v1.ContainerStatus{exitedCS("app", 0, "Completed")})
	succeeded.Status.Phase = v1.PodSucceeded
	succeededDeleted := succeeded.DeepCopy()
	succeededDeleted.DeletionTimestamp = ptr.To(ago(0))

	tests := map[string]struct {
		pod  *v1.Pod
		want string // READY STATUS RESTARTS
	}{
		"running": {withCondition(podOf(nil, []string{"app"}, nil, []v1.ContainerStatus{runningCS("app", true)}), v1.PodReady),
			"1/1 Running 0"},
		"sidecar counts in READY": {withCondition(podOf([]string{"init", "proxy!"}, []string{"app"},
			[]v1.ContainerStatus{exitedCS("init", 0, "Completed"), runningCS("proxy", true)},
			[]v1.ContainerStatus{runningCS("app", true)}), v1.PodInitialized),
			"2/2 Running 0"},
		"first init container runs": {podOf([]string{"a", "b"}, []string{"app"},
			[]v1.ContainerStatus{runningCS("a", false), waitingCS("b", "PodInitializing")},
			[]v1.ContainerStatus{waitingCS("app", "PodInitializing")}),
			"0/1 Init:0/2 0"},
		"second init container runs": {podOf([]string{"a", "b"}, []string{"app"},
			[]v1.ContainerStatus{exitedCS("a", 0, "Completed"), runningCS("b", false)},
			[]v1.ContainerStatus{waitingCS("app", "PodInitializing")}),
			"0/1 Init:1/2 0"},
		"init container failed": {podOf([]string{"a"}, []string{"app"},
			[]v1.ContainerStatus{exitedCS("a", 1, "Error")}, []v1.ContainerStatus{waitingCS("app", "PodInitializing")}),
			"0/1 Init:Error 0"},
		"init container without a reason": {podOf([]string{"a"}, []string{"app"},
			[]v1.ContainerStatus{exitedCS("a", 2, "")}, nil),
			"0/1 Init:ExitCode:2 0"},
		"init container crash loop": {podOf([]string{"a"}, []string{"app"},
			[]v1.ContainerStatus{withRestarts(waitingCS("a", "CrashLoopBackOff"), 3, 20*time.Second)}, nil),
			"0/1 Init:CrashLoopBackOff 3 (20s ago)"},
		"pod initializing": {withCondition(podOf([]string{"a"}, []string{"app"},
			[]v1.ContainerStatus{exitedCS("a", 0, "Completed")}, []v1.ContainerStatus{waitingCS("app", "PodInitializing")}), v1.PodInitialized),
			"0/1 PodInitializing 0"},
		"container creating": {podOf(nil, []string{"app"}, nil, []v1.ContainerStatus{waitingCS("app", "ContainerCreating")}),
			"0/1 ContainerCreating 0"},
		"crash loop with restarts": {podOf(nil, []string{"app"}, nil, []v1.ContainerStatus{withRestarts(waitingCS("app", "CrashLoopBackOff"), 5, 3*time.Minute)}),
			"0/1 CrashLoopBackOff 5 (3m ago)"},
		"completed": {succeeded, "0/1 Completed 0"},
		"error":     {podOf(nil, []string{"app"}, nil, []v1.ContainerStatus{exitedCS("app", 1, "Error")}), "0/1 Error 0"},
		"signal":    {podOf(nil, []string{"app"}, nil, []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 137, Signal: 9}}}}), "0/1 Signal:9 0"},
		"one done, one running, ready": {withCondition(podOf(nil, []string{"a", "b"}, nil,
			[]v1.ContainerStatus{exitedCS("a", 0, "Completed"), runningCS("b", true)}), v1.PodReady),
			"1/2 Running 0"},
		"one done, one running, not ready": {podOf(nil, []string{"b", "a"}, nil,
			[]v1.ContainerStatus{runningCS("b", true), exitedCS("a", 0, "Completed")}),
			"1/2 NotReady 0"},
		"terminating":                 {deleting, "1/1 Terminating 0"},
		"deleted after it succeeded":  {succeededDeleted, "0/1 Completed 0"},
		"sidecar restarts are summed": {withCondition(podOf([]string{"proxy!"}, []string{"app"}, []v1.ContainerStatus{withRestarts(runningCS("proxy", true), 2, time.Hour)}, []v1.ContainerStatus{withRestarts(runningCS("app", true), 1, 2*time.Hour)}), v1.PodInitialized), "2/2 Running 3 (60m ago)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			row := podRow(tc.pod, now, false, false)
			if got := strings.Join(row[1:4], " "); got != tc.want || row[0] != "web" || row[4] != "90s" {
				t.Fatalf("row = %q, want READY STATUS RESTARTS %q", row, tc.want)
			}
		})
	}

	wide := podRow(deleting, now, true, true)
	if strings.Join(wide, "|") != "default|web|1/1|Terminating|0|90s|<none>|<none>|<none>|<none>" {
		t.Fatalf("wide row %q", wide)
	}
}

func TestSince(t *testing.T) {
	tests := map[time.Duration]string{
		0:                        "0s",
		59 * time.Second:         "59s",
		2 * time.Minute:          "2m",
		10*time.Minute + 5:       "10m",
		3*time.Hour + 20*60:      "3h",
		50 * time.Hour:           "2d2h",
		400 * 24 * time.Hour:     "400d",
		3 * 365 * 24 * time.Hour: "3y",
	}
	for d, want := range tests {
		if got := since(ago(d), now); got != want {
			t.Errorf("since(%v) = %q, want %q", d, got, want)
		}
	}
	if got := since(metav1.Time{}, now); got != "<unknown>" {
		t.Errorf("since(zero) = %q", got)
	}
}

// TestTableRemembersWidths: rows flushed later, as while watching, stay
// aligned with the first ones, under the one header.
func TestTableRemembersWidths(t *testing.T) {
	var b bytes.Buffer
	tb := newTable(&b)
	tb.header("NAME", "READY", "STATUS")
	tb.row("web", "1/1", "Running")
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	tb.header("NAME", "READY", "STATUS")
	tb.row("w", "0/1", "Terminating")
	if err := tb.flush(); err != nil {
		t.Fatal(err)
	}
	want := "NAME   READY   STATUS\n" +
		"web    1/1     Running\n" +
		"w      0/1     Terminating\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}
}

// TestObjectStream: YAML documents, one per object, are separated as
// kubectl separates them; JSON objects simply follow one another.
func TestObjectStream(t *testing.T) {
	objs := []any{map[string]string{"name": "web"}, map[string]string{"name": "db"}}
	for format, want := range map[string]string{
		outputYAML: "name: web\n---\nname: db\n",
		outputJSON: "{\n    \"name\": \"web\"\n}\n{\n    \"name\": \"db\"\n}\n",
	} {
		var b bytes.Buffer
		o := objectStream{out: &b, format: format}
		if !o.objects() {
			t.Fatalf("%s: objects() = false", format)
		}
		for _, obj := range objs {
			if err := o.printObject(obj); err != nil {
				t.Fatal(err)
			}
		}
		if b.String() != want {
			t.Errorf("%s:\n%s\nwant:\n%s", format, b.String(), want)
		}
	}
	for _, format := range []string{outputTable, outputWide, outputName} {
		if (&objectStream{format: format}).objects() {
			t.Errorf("%q: objects() = true for a table format", format)
		}
	}
}

func TestEventInterval(t *testing.T) {
	e := &v1.Event{FirstTimestamp: ago(10 * time.Minute), LastTimestamp: ago(30 * time.Second), Count: 4}
	if got := eventInterval(e, now); got != "30s (x4 over 10m)" {
		t.Fatalf("repeated event: %q", got)
	}
	e.Count = 1
	if got := eventInterval(e, now); got != "10m" {
		t.Fatalf("single event: %q", got)
	}
}

// TestTemplateOutput: -o jsonpath and go-template print as kubectl
// prints them (cli-runtime's printers), with its messages for bad input.
func TestTemplateOutput(t *testing.T) {
	pod := withPodKind(withCondition(podOf(nil, []string{"app", "side"}, nil, []v1.ContainerStatus{withRestarts(runningCS("app", true), 2, time.Minute), runningCS("side", false)}), v1.PodReady))
	dir := t.TempDir()
	file := filepath.Join(dir, "tmpl")
	if err := os.WriteFile(file, []byte("{.kind}/{.status.containerStatuses[1].name}"), 0o644); err != nil {
		t.Fatal(err)
	}
	missingOK, strict := templateFlags{allowMissingKeys: true}, templateFlags{}
	tests := []struct {
		format string
		flags  templateFlags
		want   string
	}{
		{"jsonpath={.status.phase}", missingOK, "Running"},
		{"jsonpath={.status.containerStatuses[0].restartCount}", missingOK, "2"},
		{"jsonpath={.status.containerStatuses[-1].name}", missingOK, "side"},
		{`jsonpath={.status.conditions[?(@.type=="Ready")].status}`, missingOK, "True"},
		{"jsonpath={.status.containerStatuses[*].name}", missingOK, "app side"},
		{`jsonpath={range .status.containerStatuses[*]}{.name}={.ready}{"\n"}{end}`, missingOK, "app=true\nside=false\n"},
		{"jsonpath={.status.nothing}", missingOK, ""},
		{"jsonpath-as-json={.status.containerStatuses[*].name}", missingOK, "[\n    \"app\",\n    \"side\"\n]\n"},
		{"jsonpath-file=" + file, missingOK, "Pod/side"},
		{"jsonpath", templateFlags{template: "{.metadata.name}", allowMissingKeys: true}, pod.Name},
		{"go-template={{.status.phase}} {{len .status.containerStatuses}}", missingOK, "Running 2"},
	}
	for _, tc := range tests {
		p, err := checkOutputOrTemplate(tc.format, tc.flags, outputTable, outputJSON)
		if err != nil || p == nil {
			t.Errorf("%s: printer %v, %v", tc.format, p, err)
			continue
		}
		var b bytes.Buffer
		o := objectStream{out: &b, format: tc.format, template: p}
		if !o.objects() {
			t.Errorf("%s: objects() = false", tc.format)
		}
		if err := o.printObject(pod); err != nil {
			t.Errorf("%s: %v", tc.format, err)
			continue
		}
		if b.String() != tc.want {
			t.Errorf("%s printed %q, want %q", tc.format, b.String(), tc.want)
		}
	}
	// A list, as get prints several pods.
	p, _ := templatePrinter("jsonpath={.items[*].metadata.name}", missingOK)
	var b bytes.Buffer
	if err := printTemplate(&b, p, newList([]any{pod, pod})); err != nil || b.String() != pod.Name+" "+pod.Name {
		t.Errorf("a list: %q %v", b.String(), err)
	}
	// Missing keys are an error with --allow-missing-template-keys=false.
	p, _ = templatePrinter("jsonpath={.status.nothing}", strict)
	if err := printTemplate(&b, p, pod); err == nil || !strings.Contains(errors.Unwrap(err).Error(), "nothing is not found") {
		t.Errorf("a missing key, strict: %v", err)
	}
	for format, want := range map[string]string{
		"jsonpath":                  "template format specified but no template given",
		"jsonpath={.status.phase":   "error parsing jsonpath {.status.phase, unclosed action",
		"go-template={{.x":          "error parsing template {{.x",
		"jsonpath-file=/nonexist/x": "error reading --template /nonexist/x",
		"custom-columns=NAME:.x":    `unable to match a printer suitable for the output format "custom-columns=NAME:.x", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,template,templatefile`,
	} {
		if _, err := checkOutputOrTemplate(format, missingOK, outputTable, outputJSON); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("-o %s: %v, want %q", format, err, want)
		}
	}
}

func TestParseWaitFor(t *testing.T) {
	ready := withCondition(podOf(nil, []string{"app"}, nil, []v1.ContainerStatus{runningCS("app", true)}), v1.PodReady)
	tests := map[string]bool{
		"condition=Ready":                                    true,
		"condition=ready=true":                               true,
		"condition=Ready=False":                              false,
		"condition=Initialized":                              false,
		"jsonpath={.status.phase}=Running":                   true,
		"jsonpath={.status.phase}=Succeeded":                 false,
		"jsonpath={.status.phase}":                           true,
		"jsonpath={.status.reason}":                          false,
		"jsonpath={.status.containerStatuses[0].ready}=true": true,
	}
	for s, want := range tests {
		c, err := parseWaitFor(s)
		if err != nil {
			t.Errorf("%s: %v", s, err)
			continue
		}
		if got, err := c.met(ready); err != nil || got != want {
			t.Errorf("%s on a ready pod: %v %v, want %v", s, got, err, want)
		}
	}
	if c, err := parseWaitFor("delete"); err != nil || !c.deleted {
		t.Errorf("delete: %+v %v", c, err)
	}
	for _, bad := range []string{"", "ready", "condition=", "jsonpath=.status.phase", "jsonpath={.status.phase}Running"} {
		if _, err := parseWaitFor(bad); err == nil {
			t.Errorf("--for=%s parsed", bad)
		}
	}
	// kubectl wait's rules (JSONPathWait): one value, a scalar when compared.
	nested, _ := parseWaitFor("jsonpath={.status.containerStatuses[0].state}=x")
	if _, err := nested.met(ready); err == nil || !strings.Contains(err.Error(), "nested object or list which is not supported") {
		t.Errorf("a path to an object compared with a value: %v", err)
	}
	many, _ := parseWaitFor("jsonpath={.status.conditions[*].status}=True")
	withCondition(ready, v1.PodInitialized)
	if _, err := many.met(ready); err == nil || !strings.Contains(err.Error(), "more than one value") {
		t.Errorf("a path with several values: %v", err)
	}
}

func TestErrorText(t *testing.T) {
	st := metav1.Status{Reason: metav1.StatusReasonInvalid, Details: &metav1.StatusDetails{Kind: "Pod", Name: "web", Causes: []metav1.StatusCause{
		{Field: "spec.containers[0].image", Message: "Required value"},
	}}}
	if got := invalidText(st); got != `The Pod "web" is invalid: spec.containers[0].image: Required value` {
		t.Errorf("one cause: %q", got)
	}
	st.Details.Causes = append(st.Details.Causes, metav1.StatusCause{Message: "no command"})
	if got := invalidText(st); got != "The Pod \"web\" is invalid:\n* spec.containers[0].image: Required value\n* no command" {
		t.Errorf("two causes: %q", got)
	}
}
