package process

import (
	"context"
	"errors"
	"fmt"
	"os"
)

// RuntimeName and RuntimeVersion identify the process runtime in a node's
// status (nodeInfo.containerRuntimeVersion "podward-process://1").
const (
	RuntimeName    = "podward-process"
	RuntimeVersion = "1"
)

// Version names the runtime, for a node's status.
func (r *Runtime) Version(context.Context) (string, string, error) {
	return RuntimeName, RuntimeVersion, nil
}

// Status says whether the runtime can run pods: it is open and its root is
// there (a root on a filesystem gone read-only or removed cannot hold new
// containers' state).
func (r *Runtime) Status(context.Context) error {
	if r.isClosed() {
		return errors.New("the process runtime is closed")
	}
	f, err := os.CreateTemp(r.root, ".status-")
	if err != nil {
		return fmt.Errorf("process runtime root %s is not writable: %w", r.root, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
