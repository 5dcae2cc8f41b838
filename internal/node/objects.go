package node

import (
	"github.com/podward/podward/internal/objects"
	"github.com/podward/podward/internal/objects/local"
	"github.com/podward/podward/internal/runtime"
	"github.com/podward/podward/internal/store"
)

// The store keeps the standalone objects.
var _ local.Store = (*store.Store)(nil)

// openObjects loads the ConfigMaps and Secrets applied to a standalone
// agent from st (nil: held in memory, as podward run's), and gives them to
// the runtime o opens: onChange hears of each change.
func (o *Options) openObjects(st *store.Store, onChange func(objects.Change)) (*local.Objects, error) {
	opts := local.Options{OnChange: onChange}
	if st != nil {
		opts.Store = st
	}
	objs, err := local.New(opts)
	if err != nil {
		return nil, err
	}
	o.Runtime.objects = runtime.Objects{Getter: objs}
	return objs, nil
}

// objectChanged hears that a ConfigMap or Secret of serve's agent was
// created, updated or deleted. It must not block.
//
// TODO(integrator): call the agent's ObjectChanged(ch), so that the pods
// that reference the object write their volumes again and the containers
// waiting for it start.
func (a *Agent) objectChanged(ch objects.Change) {}

// objectChanged is the same, for the objects of podward run's file.
//
// TODO(integrator): call the agent's ObjectChanged(ch).
func (f *Foreground) objectChanged(ch objects.Change) {}
