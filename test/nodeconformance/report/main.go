// Command report writes the results of a `make node-conformance` run as
// markdown (internal/conformance): the totals, the failures by cause, and
// every spec.
//
//	report [-log NODE_LOG] [-strict] JUNIT.xml...
//
// Several JUnit reports (the shards of one run, or a run and a rerun) are
// merged, a later one winning. With -strict it exits 1 when a spec did not
// pass (the CI subset of hack/node-conformance.sh: only specs that pass are
// selected, so any other result is a regression).
package main

import (
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
	flag.Parse()
	if flag.NArg() == 0 {
		return fmt.Errorf("usage: report [-log NODE_LOG] [-strict] JUNIT.xml...")
	}
	var reports [][]conformance.Spec
	for _, path := range flag.Args() {
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
	if *logPath != "" {
		f, err := os.Open(*logPath)
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
	if *strict {
		t := conformance.Totals(specs)
		if n := len(specs) - t[conformance.Passed]; n > 0 {
			return fmt.Errorf("%d of %d specs did not pass", n, len(specs))
		}
	}
	return nil
}
