package shim

import (
	"errors"
	"fmt"

	"github.com/podward/podward/internal/runtime/process/launch"
)

// Namespaces opens the mount and UTS namespaces of the running process id
// (a container's main process, as its shim recorded it in container.json),
// leaving out those it shares with this process (a container without
// mounts or host name of its own is in the host's). It returns nil, and
// no error, when that process is gone: its container is exiting or
// exited. The caller closes the result once the process that joins them
// started.
func Namespaces(id Ident) (*launch.Namespaces, error) {
	if id.Pid == 0 {
		return nil, nil
	}
	p, err := OpenProc(id)
	if errors.Is(err, ErrGone) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer p.Close()
	ns, err := launch.OpenNamespaces(id.Pid)
	if p.Exited() {
		// It may have been reaped, and its PID reused, before they
		// were opened.
		ns.Close()
		return nil, nil
	}
	return ns, err
}

// joined opens the namespaces of the container a spec joins (Spec.Join):
// nil without one, an error when its process is gone.
func joined(id *Ident) (*launch.Namespaces, error) {
	if id == nil {
		return nil, nil
	}
	ns, err := Namespaces(*id)
	if err != nil {
		return nil, fmt.Errorf("the target container's namespaces: %w", err)
	}
	if ns == nil {
		return nil, errors.New("the target container does not run any more")
	}
	return ns, nil
}
