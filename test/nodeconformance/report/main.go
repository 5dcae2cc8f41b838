// Command report is hack/node-conformance.sh's reader of the e2e run's
// files (internal/conformance):
//
//	report [-log NODE_LOG] [-strict] JUNIT.xml...
//	    the results as markdown: the totals, the failures by cause, every
//	    spec. Several JUnit reports (the shards of one run, or a run and a
//	    rerun) are merged, a later one winning. With -strict it exits 1
//	    when a spec did not pass (the CI subset selects only specs that
//	    pass, so any other result is a regression).
//	report -list DRY_RUN.json
//	    the full texts of the specs a ginkgo dry run selected, one a line,
//	    sorted
//	report -focus DRY_RUN.json
//	    reads such lines on stdin, prints a --ginkgo.focus selecting
//	    exactly those specs of that dry run's suite (a shard)
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/podward/podward/internal/conformance"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "report:", err)
		os.Exit(1)
	}
}

func run() error {
	logPath := flag.String("log", "", "the podward node's log: its refusals give the failures' causes")
	strict := flag.Bool("strict", false, "exit 1 when a spec did not pass")
	list := flag.String("list", "", "list the specs this ginkgo dry run's JSON report selected")
	focus := flag.String("focus", "", "print a focus selecting exactly the specs on stdin, of this dry run's suite")
	flag.Parse()
	switch {
	case *list != "":
		_, names, err := readDryRun(*list)
		if err != nil {
			return err
		}
		w := bufio.NewWriter(os.Stdout)
		for _, n := range names {
			fmt.Fprintln(w, n)
		}
		return w.Flush()
	case *focus != "":
		return printFocus(*focus)
	}
	if flag.NArg() == 0 {
		return fmt.Errorf("usage: report [-log NODE_LOG] [-strict] JUNIT.xml... | report -list|-focus DRY_RUN.json")
	}
	return writeReport(flag.Args(), *logPath, *strict)
}

func readDryRun(path string) (string, []string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, err
	}
	defer f.Close()
	return conformance.ReadDryRun(f)
}

func printFocus(dryRun string) error {
	suite, _, err := readDryRun(dryRun)
	if err != nil {
		return err
	}
	var names []string
	sc := bufio.NewScanner(os.Stdin)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if sc.Text() != "" {
			names = append(names, sc.Text())
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if len(names) == 0 {
		return fmt.Errorf("no spec on stdin")
	}
	fmt.Println(conformance.FocusRegexp(suite, names))
	return nil
}

func writeReport(junits []string, logPath string, strict bool) error {
	var reports [][]conformance.Spec
	for _, path := range junits {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		specs, err := conformance.ReadJUnit(f)
		f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		reports = append(reports, specs)
	}
	specs := conformance.Merge(reports...)
	if len(specs) == 0 {
		return fmt.Errorf("no spec ran (the focus selected none?)")
	}
	rejected := map[string][]string{}
	if logPath != "" {
		f, err := os.Open(logPath)
		if err != nil {
			return err
		}
		rejected, err = conformance.Rejections(f)
		f.Close()
		if err != nil {
			return err
		}
	}
	conformance.Classify(specs, rejected, conformance.Known)
	if err := conformance.WriteMarkdown(os.Stdout, specs, conformance.Known); err != nil {
		return err
	}
	if strict {
		t := conformance.Totals(specs)
		if n := len(specs) - t[conformance.Passed]; n > 0 {
			return fmt.Errorf("%d of %d specs did not pass", n, len(specs))
		}
	}
	return nil
}
