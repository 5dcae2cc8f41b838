package process

import (
	"github.com/podward/podward/internal/runtime/process/launch"
	"github.com/podward/podward/internal/runtime/process/shim"
)

// MaybeRunInit turns the process into one of the process runtime's helper
// processes when the runtime started it as one, and returns at once
// otherwise. main and TestMain must call it first, before any other work:
// the runtime's helpers are the podward-shim binary (cmd/podward-shim,
// which does what this does), but a Runtime that finds none
// (Config.ShimBinary) re-executes its own binary instead, as each of:
//
//   - a container's shim (package shim), which supervises one container
//     instance until it exited and then exits;
//   - an exec's init helper (package launch), which joins the running
//     container's mount and UTS namespaces (or makes its own, with the
//     container's bind mounts) and execs the command.
func MaybeRunInit() {
	launch.MaybeRunHelper()
	shim.MaybeRun()
}
