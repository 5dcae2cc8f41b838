package podspec

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/runtime"
)

// CheckHostPorts refuses the hostPorts of container c (at field path p, as
// ContainerRef.SpecPath gives it) that a pod on the host's network cannot
// honour: a process there listens on the host's port itself, so a
// hostPort is the containerPort or nothing. Validation already refuses a
// different one for hostNetwork pods (the API server's rule); this is for
// the pods that ask for a network of their own and are put on the host's
// anyway (the process runtime; the CRI runtime without a pod network).
// A runtime that gives the pod its own network maps the ports instead, and
// does not call it.
func CheckHostPorts(c *v1.Container, p string) error {
	for i, port := range c.Ports {
		if port.HostPort != 0 && port.HostPort != port.ContainerPort {
			return runtime.Unsupported("%s.ports[%d].hostPort: Unsupported value: %d: the pod shares the host's network, where its container listens on containerPort %d itself; a different hostPort would need a port mapping this runtime cannot make (use hostPort %d, or none)",
				p, i, port.HostPort, port.ContainerPort, port.ContainerPort)
		}
	}
	return nil
}
