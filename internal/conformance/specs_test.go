package conformance

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

const dryRun = `[{"SuiteDescription":"Kubernetes e2e suite","SpecReports":[
 {"ContainerHierarchyTexts":null,"LeafNodeType":"SynchronizedBeforeSuite","LeafNodeText":"","State":"passed"},
 {"ContainerHierarchyTexts":["[sig-node] Pods"],"LeafNodeType":"It","LeafNodeText":"should get a host IP [NodeConformance] [Conformance]","State":"passed"},
 {"ContainerHierarchyTexts":["[sig-node] Pods"],"LeafNodeType":"It","LeafNodeText":"should get a host IP [NodeConformance] [Conformance] twice","State":"passed"},
 {"ContainerHierarchyTexts":["[sig-node] Probing container","when x"],"LeafNodeType":"It","LeafNodeText":"should *not* be restarted (a+b) [NodeConformance]","State":"passed"},
 {"ContainerHierarchyTexts":["[sig-node] Lease"],"LeafNodeType":"It","LeafNodeText":"serial [Serial]","State":"skipped"}
]}]`

func TestReadDryRunAndFocus(t *testing.T) {
	suite, names, err := ReadDryRun(strings.NewReader(dryRun))
	if err != nil {
		t.Fatal(err)
	}
	if suite != "Kubernetes e2e suite" {
		t.Errorf("suite %q", suite)
	}
	want := []string{
		"[sig-node] Pods should get a host IP [NodeConformance] [Conformance]",
		"[sig-node] Pods should get a host IP [NodeConformance] [Conformance] twice",
		"[sig-node] Probing container when x should *not* be restarted (a+b) [NodeConformance]",
	}
	if !slices.Equal(names, want) {
		t.Fatalf("names %q, want %q", names, want)
	}
	// ginkgo matches "SUITE DESCRIPTION SPEC TEXT": a focus of one spec
	// selects it alone, not another whose text it begins
	text := func(i int) string { return suite + " " + names[i] }
	re := regexp.MustCompile(FocusRegexp(suite, names[:1]))
	if !re.MatchString(text(0)) || re.MatchString(text(1)) {
		t.Errorf("focus %s: want %q only", re, names[0])
	}
	re = regexp.MustCompile(FocusRegexp(suite, names[1:]))
	if re.MatchString(text(0)) || !re.MatchString(text(1)) || !re.MatchString(text(2)) {
		t.Errorf("focus %s: want the last two only", re)
	}
}
