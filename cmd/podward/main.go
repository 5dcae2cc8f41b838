// Command podward runs Kubernetes pods on one machine with their whole
// lifecycle: init containers, sidecars, defer containers, ordered stop.
package main

import (
	"os"

	"github.com/podward/podward/internal/cli"
	"github.com/podward/podward/internal/runtime/process"
)

func main() {
	// A re-executed podward may be a container's init helper: it sets up
	// the container's mounts and execs its command, never returning here.
	process.MaybeRunInit()
	os.Exit(cli.Main(os.Args[1:]))
}
