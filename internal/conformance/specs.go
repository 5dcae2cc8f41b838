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
// --ginkgo.json-report) and returns the full texts of the specs it
// selected, sorted: the texts --ginkgo.focus matches.
func ReadDryRun(r io.Reader) ([]string, error) {
	var suites []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeText            string
			LeafNodeType            string
			State                   string
		}
	}
	if err := json.NewDecoder(r).Decode(&suites); err != nil {
		return nil, fmt.Errorf("read ginkgo's JSON report: %w", err)
	}
	var names []string
	for _, s := range suites {
		for _, sp := range s.SpecReports {
			// a dry run reports each selected spec as passed, the others as skipped
			if sp.LeafNodeType != "It" || sp.State != "passed" {
				continue
			}
			names = append(names, strings.Join(append(append([]string{}, sp.ContainerHierarchyTexts...), sp.LeafNodeText), " "))
		}
	}
	sort.Strings(names)
	return names, nil
}

// FocusRegexp is a --ginkgo.focus that selects exactly the specs with these
// full texts.
func FocusRegexp(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = regexp.QuoteMeta(n)
	}
	return "^(?:" + strings.Join(quoted, "|") + ")$"
}
