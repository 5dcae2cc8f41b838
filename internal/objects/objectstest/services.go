package objectstest

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/objects"
)

// Services is an objects.ServiceLister in memory. Its zero value lists no
// Service and has synced; it is safe for concurrent use.
type Services struct {
	mu       sync.Mutex
	services []*v1.Service
	// Unsynced makes WaitForServices wait for its ctx to end, as a lister
	// whose first read never completes.
	Unsynced bool
	// SyncErr, when set, is what WaitForServices returns at once, as a
	// lister whose wait was cut short by its bound.
	SyncErr error
	// ListErr, when set, fails every Services.
	ListErr error
}

var _ objects.ServiceLister = (*Services)(nil)

// Put adds Services (a Service of the same namespace and name is
// replaced).
func (s *Services) Put(services ...*v1.Service) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, svc := range services {
		i := 0
		for ; i < len(s.services); i++ {
			if o := s.services[i]; o.Namespace == svc.Namespace && o.Name == svc.Name {
				break
			}
		}
		if i < len(s.services) {
			s.services[i] = svc
		} else {
			s.services = append(s.services, svc)
		}
	}
}

// Services implements objects.ServiceLister.
func (s *Services) Services(namespace string) ([]*v1.Service, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ListErr != nil {
		return nil, s.ListErr
	}
	var out []*v1.Service
	for _, svc := range s.services {
		if svc.Namespace == namespace {
			out = append(out, svc)
		}
	}
	return out, nil
}

// WaitForServices implements objects.ServiceLister.
func (s *Services) WaitForServices(ctx context.Context) error {
	s.mu.Lock()
	unsynced, syncErr := s.Unsynced, s.SyncErr
	s.mu.Unlock()
	if syncErr != nil {
		return syncErr
	}
	if !unsynced {
		return nil
	}
	<-ctx.Done()
	return fmt.Errorf("wait for the services' first read: %w", context.Cause(ctx))
}
