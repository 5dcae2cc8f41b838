package cluster

import (
	"errors"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

var (
	unreachable = v1.Taint{Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoExecute}
	dedicated   = v1.Taint{Key: "podward.io/dedicated", Value: "yes", Effect: v1.TaintEffectNoSchedule}
	// otherRuntime has the process taint's key and effect, another value.
	otherRuntime = v1.Taint{Key: TaintKeyRuntime, Value: "other", Effect: v1.TaintEffectNoSchedule}
)

// onProcessRuntime configures the node as `podward node --runtime
// process` does.
func onProcessRuntime(c *NodeConfig) { c.OwnTaints = []v1.Taint{ProcessRuntimeTaint()} }

// onCRIRuntime configures the node as `podward node --runtime cri` does.
func onCRIRuntime(c *NodeConfig) { c.DroppedTaints = []v1.Taint{ProcessRuntimeTaint()} }

func existingNode(taints ...v1.Taint) *v1.Node {
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1", UID: "uid-from-before", Labels: map[string]string{"team": "storage"}},
		Spec:       v1.NodeSpec{Taints: taints},
	}
}

// forbidTaintChanges makes the fake API server refuse a Node update that
// changes its taints, as the NodeRestriction admission plugin does for a
// node's credentials.
func forbidTaintChanges(f *nodeFixture) {
	f.cs.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.UpdateAction)
		if u.GetSubresource() != "" {
			return false, nil, nil
		}
		node := u.GetObject().(*v1.Node)
		old, err := f.cs.Tracker().Get(a.GetResource(), "", node.Name)
		if err != nil {
			return false, nil, nil
		}
		if !equality.Semantic.DeepEqual(old.(*v1.Node).Spec.Taints, node.Spec.Taints) {
			return true, nil, apierrors.NewForbidden(a.GetResource().GroupResource(), node.Name, errors.New(`node "worker-1" is not allowed to modify taints`))
		}
		return false, nil, nil
	})
}

func wantTaints(t *testing.T, n *v1.Node, want ...v1.Taint) {
	t.Helper()
	if !slices.EqualFunc(n.Spec.Taints, want, func(a, b v1.Taint) bool { return sameTaint(a, b) }) {
		t.Errorf("taints = %v, want %v", taintStrings(n.Spec.Taints), taintStrings(want))
	}
}

func TestRegisterPutsOwnTaintsOnTheNewNode(t *testing.T) {
	for name, c := range map[string]struct {
		given, want []v1.Taint
	}{
		"added to the given ones":         {given: []v1.Taint{dedicated}, want: []v1.Taint{dedicated, ProcessRuntimeTaint()}},
		"given too: put once":             {given: []v1.Taint{ProcessRuntimeTaint(), dedicated}, want: []v1.Taint{dedicated, ProcessRuntimeTaint()}},
		"replaces one of the same slot":   {given: []v1.Taint{otherRuntime, dedicated}, want: []v1.Taint{dedicated, ProcessRuntimeTaint()}},
		"alone when none is given":        {want: []v1.Taint{ProcessRuntimeTaint()}},
		"another effect of the key stays": {given: []v1.Taint{{Key: TaintKeyRuntime, Value: "process", Effect: v1.TaintEffectNoExecute}}, want: []v1.Taint{{Key: TaintKeyRuntime, Value: "process", Effect: v1.TaintEffectNoExecute}, ProcessRuntimeTaint()}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newNodeFixtureWith(t, func(cfg *NodeConfig) {
				onProcessRuntime(cfg)
				cfg.Taints = c.given
			})
			if err := f.node.Register(t.Context()); err != nil {
				t.Fatal(err)
			}
			wantTaints(t, f.getNode(t), c.want...)
		})
	}
}

func TestRegisterOnCRIPutsNoRuntimeTaint(t *testing.T) {
	f := newNodeFixtureWith(t, onCRIRuntime)
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	wantTaints(t, f.getNode(t), dedicated)
}

func TestReRegisterAddsTheMissingOwnTaint(t *testing.T) {
	for name, c := range map[string]struct {
		existing, want []v1.Taint
	}{
		"missing":                         {existing: []v1.Taint{unreachable}, want: []v1.Taint{unreachable, ProcessRuntimeTaint()}},
		"another value in its slot":       {existing: []v1.Taint{otherRuntime, unreachable}, want: []v1.Taint{unreachable, ProcessRuntimeTaint()}},
		"present: left as it is, no copy": {existing: []v1.Taint{ProcessRuntimeTaint(), unreachable}, want: []v1.Taint{ProcessRuntimeTaint(), unreachable}},
	} {
		t.Run(name, func(t *testing.T) {
			f := newNodeFixtureWith(t, onProcessRuntime, existingNode(c.existing...))
			if err := f.node.Register(t.Context()); err != nil {
				t.Fatal(err)
			}
			n := f.getNode(t)
			wantTaints(t, n, c.want...)
			if n.UID != "uid-from-before" || n.Labels["team"] != "storage" {
				t.Errorf("the node was replaced or lost its labels: %+v", n.ObjectMeta)
			}
		})
	}
}

func TestReRegisterFailsWhenTheOwnTaintCannotBeAdded(t *testing.T) {
	f := newNodeFixtureWith(t, onProcessRuntime, existingNode(unreachable))
	forbidTaintChanges(f)
	err := f.node.Register(t.Context())
	if !errors.Is(err, ErrOwnTaintForbidden) || !apierrors.IsForbidden(err) {
		t.Fatalf("Register = %v, want ErrOwnTaintForbidden wrapping the API server's Forbidden", err)
	}
	if want := "kubectl taint node worker-1 podward.io/runtime=process:NoSchedule"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	wantTaints(t, f.getNode(t), unreachable)
	if n := countVerb(f.cs.Actions(), "update", "nodes"); n != 1 {
		t.Errorf("%d node updates, want the one refused: no status posted for a node that cannot run", n)
	}
}

func TestReRegisterOnCRIRemovesTheProcessTaint(t *testing.T) {
	f := newNodeFixtureWith(t, onCRIRuntime, existingNode(unreachable, ProcessRuntimeTaint(), otherRuntime, dedicated))
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Only podward's own taint goes: the same key with another value is
	// someone else's.
	wantTaints(t, f.getNode(t), unreachable, otherRuntime, dedicated)
}

func TestReRegisterOnCRIKeepsTheProcessTaintWhenForbidden(t *testing.T) {
	f := newNodeFixtureWith(t, onCRIRuntime, existingNode(ProcessRuntimeTaint()))
	forbidTaintChanges(f)
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatalf("Register = %v: a taint it cannot remove must not keep the node from running", err)
	}
	n := f.getNode(t)
	wantTaints(t, n, ProcessRuntimeTaint())
	if n.Labels[LabelPodward] != "true" || n.Labels["team"] != "storage" {
		t.Errorf("labels = %v: the node's labels were not set", n.Labels)
	}
}
