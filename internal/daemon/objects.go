package daemon

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
// created, updated or deleted: the pods that reference it write their
// volumes again and the containers waiting for it start (ObjectChanged).
// It must not block; a change before the agent runs has no pod to reach.
func (a *Agent) objectChanged(ch objects.Change) {
	if a.agent != nil {
		a.ObjectChanged(ch)
	}
}

// objectChanged is the same, for the objects of podward run's file.
func (f *Foreground) objectChanged(ch objects.Change) {
	if f.agent != nil {
		f.ObjectChanged(ch)
	}
}

// ObjectChanged tells the pods of `podward run` that an object they may
// reference changed (agent.Agent.ObjectChanged): the objects' Getter or
// Tokens calls it, through the func(objects.Change) it is given. It never
// blocks.
func (f *Foreground) ObjectChanged(ch objects.Change) { f.agent.ObjectChanged(ch) }

// ObjectChanged is Foreground.ObjectChanged for `podward serve`.
func (a *Agent) ObjectChanged(ch objects.Change) { a.agent.ObjectChanged(ch) }

// ObjectChanged is Foreground.ObjectChanged for `podward node`: the
// cluster's managers call it on a watch event of an object or a token's
// refresh.
func (n *ClusterNode) ObjectChanged(ch objects.Change) { n.agent.ObjectChanged(ch) }
