package node

import "github.com/podward/podward/internal/objects"

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
