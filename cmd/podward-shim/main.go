// Command podward-shim is the process runtime's helper binary, and nothing
// else: a container's shim (package shim), a spare shim waiting for its
// container, or the init helper that sets up an exec's namespaces before
// it execs the command (package launch). The agent (podward serve, run,
// stop-pods) starts it, one per container and per exec; it is not run by
// hand.
//
// It is a binary of its own, rather than podward re-executed, because one
// runs for every container: it links no Kubernetes package (the archtest
// checks its dependencies), so that what each shim holds is the Go
// runtime and its own work, not the agent's libraries and their
// initialisation.
package main

import (
	"fmt"
	"os"

	"github.com/podward/podward/internal/runtime/process/launch"
	"github.com/podward/podward/internal/runtime/process/shim"
)

func main() {
	// Each returns only when the environment does not make this process
	// one of them.
	launch.MaybeRunHelper()
	shim.MaybeRun()
	fmt.Fprintln(os.Stderr, "podward-shim: the process runtime starts this binary as a container's shim or an exec's init helper; it is not run by hand")
	os.Exit(2)
}
