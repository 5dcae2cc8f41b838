package conformance

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// ReadDryRun reads ginkgo's JSON report of a dry run (--ginkgo.dry-run
// --ginkgo.json-report) and returns the suite's description and the full
// texts of the specs it selected, sorted.
func ReadDryRun(r io.Reader) (suite string, names []string, err error) {
	var suites []struct {
		SuiteDescription string
		SpecReports      []struct {
			ContainerHierarchyTexts []string
			LeafNodeText            string
			LeafNodeType            string
			State                   string
		}
	}
	if err := json.NewDecoder(r).Decode(&suites); err != nil {
		return "", nil, fmt.Errorf("read ginkgo's JSON report: %w", err)
	}
	for _, s := range suites {
		suite = s.SuiteDescription
		for _, sp := range s.SpecReports {
			// a dry run reports each selected spec as passed, the others as skipped
			if sp.LeafNodeType != "It" || sp.State != "passed" {
				continue
			}
			names = append(names, strings.Join(append(append([]string{}, sp.ContainerHierarchyTexts...), sp.LeafNodeText), " "))
		}
	}
	sort.Strings(names)
	return suite, names, nil
}

// FocusRegexp is a --ginkgo.focus that selects exactly the specs of the
// suite with these full texts: ginkgo matches the focus against the suite's
// description, a space, and the spec's full text.
func FocusRegexp(suite string, names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "^" + regexp.QuoteMeta(suite) + " (?:" + strings.Join(quoted, "|") + ")$"
}
