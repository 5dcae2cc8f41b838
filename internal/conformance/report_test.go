package conformance

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

func readFixture(t *testing.T) []Spec {
	t.Helper()
	f, err := os.Open("testdata/junit.xml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	specs, err := ReadJUnit(f)
	if err != nil {
		t.Fatal(err)
	}
	return specs
}

func TestReadJUnit(t *testing.T) {
	specs := readFixture(t)
	got := map[string]Result{}
	for _, s := range specs {
		got[s.Name] = s.Result
	}
	want := map[string]Result{
		"[sig-node] Pods should get a host IP [NodeConformance]":                                                                 Passed,
		"[sig-storage] ConfigMap should be consumable from pods in volume [NodeConformance]":                                     Failed,
		"[sig-node] Probing container should *not* be restarted with a non-local redirect http liveness probe [NodeConformance]": Failed,
		"[sig-node] Something new [NodeConformance]":                                                                             Failed,
		"[sig-node] Needs two nodes [NodeConformance]":                                                                           Skipped,
		"[sig-node] Cut short [NodeConformance]":                                                                                 NotRun,
	}
	if len(got) != len(want) {
		t.Errorf("specs %v, want %v (suite nodes and unselected specs left out)", got, want)
	}
	for name, r := range want {
		if got[name] != r {
			t.Errorf("%s: %v, want %v", name, got[name], r)
		}
	}
	for _, s := range specs {
		if s.Name == "[sig-node] Needs two nodes [NodeConformance]" && s.Reason != "Requires at least 2 nodes (not 1)" {
			t.Errorf("skip reason %q", s.Reason)
		}
		if s.Name == "[sig-node] Something new [NodeConformance]" && s.Reason != "something else broke" {
			t.Errorf("failure reason %q", s.Reason)
		}
	}
}

func TestClassify(t *testing.T) {
	specs := readFixture(t)
	log := `time=2026-12-06T10:00:00Z level=INFO msg="rejecting a pod this node cannot run" pod=configmap-4242/pod-configmaps-1 uid=x err="invalid pod: spec.securityContext.seLinuxOptions: Unsupported value: podward's CRI runtime does not pass seLinuxOptions"
time=2026-12-06T10:00:01Z level=INFO msg="something else" pod=other-1/p
`
	rejected, err := Rejections(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	if len(rejected["configmap-4242"]) != 1 {
		t.Fatalf("rejections %v: want one for configmap-4242", rejected)
	}
	Classify(specs, rejected, Known)
	want := map[string]string{
		"[sig-storage] ConfigMap should be consumable from pods in volume [NodeConformance]":                                     "seLinuxOptions refused on the CRI runtime",
		"[sig-node] Probing container should *not* be restarted with a non-local redirect http liveness probe [NodeConformance]": "no ProbeWarning event for a probe's non-local redirect",
		"[sig-node] Something new [NodeConformance]":                                                                             "other",
		"[sig-node] Pods should get a host IP [NodeConformance]":                                                                 "",
	}
	for _, s := range specs {
		if w, ok := want[s.Name]; ok && s.Cause != w {
			t.Errorf("%s: cause %q, want %q", s.Name, s.Cause, w)
		}
	}
}

// A failure whose message is a container's env dump is not filed under a
// known cause by the variables every pod has (KUBERNETES_SERVICE_HOST, the
// service links): the spec's own cause, after all the known ones, is.
func TestClassifyEnvDump(t *testing.T) {
	specs := []Spec{{
		Name: "[sig-node] ConfigMap should be consumable via the environment [NodeConformance]", Result: Failed,
		message: "expected \"data-1=value-1\" in container output: Expected\nKUBERNETES_SERVICE_HOST=10.0.0.1\nKUBERNETES_SERVICE_PORT=443\n",
	}}
	own := Cause{Name: "the spec's own", Spec: regexp.MustCompile(`ConfigMap should be consumable via the environment`)}
	Classify(specs, nil, append(append([]Cause{}, Known...), own))
	if want := own.Name; specs[0].Cause != want {
		t.Errorf("cause %q, want %q", specs[0].Cause, want)
	}
}

func TestClassifyUnknownRejection(t *testing.T) {
	got := classifyRejection(`invalid pod: spec.containers[3].foo: Unsupported value: "bar": no`, Known)
	if got != `refused by podward: spec.containers[*].foo: Unsupported value: "…": no` {
		t.Errorf("got %q", got)
	}
}

func TestMerge(t *testing.T) {
	a := []Spec{{Name: "x", Result: Failed}, {Name: "y", Result: Passed}, {Name: "z", Result: NotRun}}
	b := []Spec{{Name: "x", Result: Passed}, {Name: "y", Result: NotRun}, {Name: "z", Result: Failed}}
	got := Merge(a, b)
	want := []Result{Passed, Passed, Failed} // a rerun's result wins; not run never hides a result
	if len(got) != 3 {
		t.Fatalf("merged %v", got)
	}
	for i, s := range got {
		if s.Result != want[i] {
			t.Errorf("%s: %v, want %v", s.Name, s.Result, want[i])
		}
	}
}

func TestWriteMarkdown(t *testing.T) {
	specs := readFixture(t)
	Classify(specs, nil, Known)
	var buf bytes.Buffer
	if err := WriteMarkdown(&buf, Merge(specs), Known); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{
		"**1 passed, 3 failed, 1 skipped, 1 not run, of 6 specs**",
		"| no ProbeWarning event for a probe's non-local redirect | 1 | issue 20 |",
		"| other | 2 |  |",
		"| 3 | [sig-node] Pods should get a host IP [NodeConformance] | pass |  |  | 4 |",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("markdown lacks %q:\n%s", want, out)
		}
	}
}
