// Command specs lists the specs of a ginkgo dry run, or turns such a list
// into a focus, for hack/node-conformance.sh (internal/conformance):
//
//	specs DRY_RUN.json               the full texts of the selected specs, one a
//	                                 line, sorted
//	specs -focus DRY_RUN.json        reads such lines on stdin, prints a
//	                                 --ginkgo.focus selecting exactly those
//	                                 specs of that dry run's suite
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
		fmt.Fprintln(os.Stderr, "specs:", err)
		os.Exit(1)
	}
}

func run() error {
	focus := flag.Bool("focus", false, "read spec texts on stdin and print a focus selecting exactly them")
	flag.Parse()
	if flag.NArg() != 1 {
		return fmt.Errorf("usage: specs [-focus] DRY_RUN.json")
	}
	f, err := os.Open(flag.Arg(0))
	if err != nil {
		return err
	}
	defer f.Close()
	suite, all, err := conformance.ReadDryRun(f)
	if err != nil {
		return err
	}
	if *focus {
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
	w := bufio.NewWriter(os.Stdout)
	for _, n := range all {
		fmt.Fprintln(w, n)
	}
	return w.Flush()
}
