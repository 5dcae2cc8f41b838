package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// The taint of a node that runs its pods as host processes (`podward node
// --runtime process`): such a pod is not isolated as a container is (it
// sees the host's filesystem and processes, as its securityContext allows),
// so only the pods that tolerate it are scheduled there. It is NoSchedule:
// it keeps the scheduler away, and the node itself still runs whatever is
// bound to it (as the kubelet, which admits pods whatever their
// tolerations of NoSchedule taints).
const (
	TaintKeyRuntime   = "podward.io/runtime"
	TaintValueProcess = "process"
)

// ProcessRuntimeTaint is podward.io/runtime=process:NoSchedule, the taint of
// a node on the process runtime.
func ProcessRuntimeTaint() v1.Taint {
	return v1.Taint{Key: TaintKeyRuntime, Value: TaintValueProcess, Effect: v1.TaintEffectNoSchedule}
}

// ErrOwnTaintForbidden is Register's error when an existing Node lacks one
// of NodeConfig.OwnTaints and the API server forbids the node to add it
// (the NodeRestriction admission plugin forbids a node to change its own
// taints): an administrator adds it, or deletes the Node so that the node
// creates it again with its taints.
var ErrOwnTaintForbidden = errors.New("the existing Node lacks a taint this node must carry, and the API server forbids the node to add it")

// sameSlot reports whether a and b are the same taint for the API server,
// which allows one taint per key and effect on a Node.
func sameSlot(a, b v1.Taint) bool { return a.Key == b.Key && a.Effect == b.Effect }

// sameTaint reports whether a and b are the same key, value and effect.
func sameTaint(a, b v1.Taint) bool { return sameSlot(a, b) && a.Value == b.Value }

// mergeTaints is given with own on top: a taint of given in the slot (key
// and effect) of one of own is replaced by it, so that no slot is taken
// twice. given is not modified.
func mergeTaints(given, own []v1.Taint) []v1.Taint {
	out := slices.DeleteFunc(slices.Clone(given), func(t v1.Taint) bool {
		return slices.ContainsFunc(own, func(o v1.Taint) bool { return sameSlot(t, o) })
	})
	for _, o := range own {
		if !slices.ContainsFunc(out, func(t v1.Taint) bool { return sameSlot(t, o) }) {
			out = append(out, o)
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// reconcileTaints puts the node's own taints on an existing Node (one in
// the same slot with another value is replaced) and, when drop is set,
// removes its dropped ones (exactly those: key, value and effect), leaving
// every other taint as it is. It returns the taints it added and removed.
func (n *Node) reconcileTaints(node *v1.Node, drop bool) (added, removed []v1.Taint) {
	taints := node.Spec.Taints
	for _, o := range n.cfg.OwnTaints {
		if !slices.ContainsFunc(taints, func(t v1.Taint) bool { return sameTaint(t, o) }) {
			added = append(added, o)
		}
	}
	if drop {
		for _, d := range n.cfg.DroppedTaints {
			if slices.ContainsFunc(taints, func(t v1.Taint) bool { return sameTaint(t, d) }) {
				removed = append(removed, d)
			}
		}
	}
	if len(added) == 0 && len(removed) == 0 {
		return nil, nil
	}
	taints = slices.DeleteFunc(slices.Clone(taints), func(t v1.Taint) bool {
		return slices.ContainsFunc(removed, func(d v1.Taint) bool { return sameTaint(t, d) })
	})
	node.Spec.Taints = mergeTaints(taints, n.cfg.OwnTaints)
	return added, removed
}

// taintStrings are taints as kubectl writes them, key=value:effect.
func taintStrings(taints []v1.Taint) []string {
	s := make([]string, len(taints))
	for i := range taints {
		s[i] = taints[i].ToString()
	}
	return s
}

// ownTaintForbidden is Register's error when the API server refused to add
// the node's own taints to its existing Node: what to do about it, and the
// API server's answer.
func (n *Node) ownTaintForbidden(added []v1.Taint, err error) error {
	list := strings.Join(taintStrings(added), " ")
	return fmt.Errorf("%w: add it (kubectl taint node %s %s), or delete the Node for the node to register it anew: %w",
		ErrOwnTaintForbidden, n.cfg.NodeName, list, err)
}
