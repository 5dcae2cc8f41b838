package objects

import (
	"context"

	v1 "k8s.io/api/core/v1"
)

// ServiceLister is what a pod's service links are read from: the cluster's
// Services, as the kubelet's service lister holds them. It is optional:
// standalone there is none, and a pod then has no service variables at
// all, as from a kubelet without an API server. The Services returned are
// shared: callers must not modify them.
type ServiceLister interface {
	// Services lists the Services of namespace as last read; it never
	// waits. Before the first read has completed it lists what has
	// arrived so far (WaitForServices says when that is all).
	Services(namespace string) ([]*v1.Service, error)
	// WaitForServices returns nil once the Services have been read at
	// least once (the kubelet's serviceHasSynced), at once after that; an
	// error wrapping ctx's cause when ctx ends first.
	WaitForServices(ctx context.Context) error
}
