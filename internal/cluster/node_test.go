package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	goruntime "runtime"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// eventTimeout bounds every wait of these tests for something to happen.
const eventTimeout = 10 * time.Second

var testMachine = Machine{
	CPUs:          4,
	MemoryBytes:   8 << 30,
	StorageBytes:  100 << 30,
	MachineID:     "0123456789abcdef0123456789abcdef",
	SystemUUID:    "4c4c4544-0000-1010-8000-b2c04f4d3232",
	BootID:        "7e1d2a6f-3f4b-4c1e-9d0a-1b2c3d4e5f60",
	KernelVersion: "6.12.0-test",
	OSImage:       "Debian GNU/Linux 13 (trixie)",
}

// fakeRuntime is a runtime.Info whose readiness the test sets.
type fakeRuntime struct {
	mu  sync.Mutex
	err error
	// checked, when set, gets a value at each Status call, if it has
	// room.
	checked chan struct{}
}

func (r *fakeRuntime) Version(context.Context) (string, string, error) {
	return "containerd", "2.1.4", nil
}

func (r *fakeRuntime) Status(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case r.checked <- struct{}{}:
	default:
	}
	return r.err
}

func (r *fakeRuntime) setErr(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

// actionLog records the actions of a fake clientset as they are made, so
// that a test can wait for one.
type actionLog struct {
	mu      sync.Mutex
	actions []k8stesting.Action
	changed chan struct{} // closed and replaced at each action
	next    int           // the first action waitFor has not looked at
}

func recordActions(cs *fake.Clientset) *actionLog {
	l := &actionLog{changed: make(chan struct{})}
	cs.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.actions = append(l.actions, a.DeepCopy())
		close(l.changed)
		l.changed = make(chan struct{})
		return false, nil, nil
	})
	return l
}

// waitFor returns the first action after the ones already matched for
// which match is true, failing the test after eventTimeout.
func (l *actionLog) waitFor(t *testing.T, what string, match func(k8stesting.Action) bool) k8stesting.Action {
	t.Helper()
	deadline := time.After(eventTimeout)
	for {
		l.mu.Lock()
		for i := l.next; i < len(l.actions); i++ {
			if match(l.actions[i]) {
				l.next = i + 1
				a := l.actions[i]
				l.mu.Unlock()
				return a
			}
		}
		l.next = len(l.actions)
		changed := l.changed
		l.mu.Unlock()
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func isAction(verb, resource, subresource string) func(k8stesting.Action) bool {
	return func(a k8stesting.Action) bool {
		return a.GetVerb() == verb && a.GetResource().Resource == resource && a.GetSubresource() == subresource
	}
}

// statusUpdate matches an UpdateStatus of the node whose Ready condition
// has the given status.
func statusUpdate(ready v1.ConditionStatus) func(k8stesting.Action) bool {
	return func(a k8stesting.Action) bool {
		if !isAction("update", "nodes", "status")(a) {
			return false
		}
		c := nodeCondition(a.(k8stesting.UpdateAction).GetObject().(*v1.Node), v1.NodeReady)
		return c != nil && c.Status == ready
	}
}

func nodeCondition(n *v1.Node, typ v1.NodeConditionType) *v1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == typ {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}

var nodeT0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type nodeFixture struct {
	cs      *fake.Clientset
	actions *actionLog
	clock   *clocktesting.FakeClock
	rt      *fakeRuntime
	node    *Node
}

func newNodeFixture(t *testing.T, objects ...runtime.Object) *nodeFixture {
	t.Helper()
	return newNodeFixtureWith(t, nil, objects...)
}

// newNodeFixtureWith is newNodeFixture with its NodeConfig changed by
// configure, when set, before the Node is made.
func newNodeFixtureWith(t *testing.T, configure func(*NodeConfig), objects ...runtime.Object) *nodeFixture {
	t.Helper()
	f := &nodeFixture{
		cs:    fake.NewClientset(objects...),
		clock: clocktesting.NewFakeClock(nodeT0),
		rt:    &fakeRuntime{checked: make(chan struct{}, 1)},
	}
	f.actions = recordActions(f.cs)
	// The API server gives every object a UID; the fake does not.
	uids := 0
	f.cs.PrependReactor("create", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		uids++
		a.(k8stesting.CreateAction).GetObject().(*v1.Node).UID = types.UID(fmt.Sprintf("node-uid-%d", uids))
		return false, nil, nil
	})
	m := testMachine
	cfg := NodeConfig{
		Client:    f.cs,
		NodeName:  "worker-1",
		Clock:     f.clock,
		Logger:    slog.New(slog.DiscardHandler),
		Runtime:   f.rt,
		Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.7"}, {Type: v1.NodeHostName, Address: "worker-1"}},
		Labels:    map[string]string{"topology.kubernetes.io/zone": "lab"},
		Taints:    []v1.Taint{{Key: "podward.io/dedicated", Value: "yes", Effect: v1.TaintEffectNoSchedule}},
		Machine:   &m,
	}
	if configure != nil {
		configure(&cfg)
	}
	n, err := NewNode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.node = n
	return f
}

// run runs the node until the test ends.
func (f *nodeFixture) run(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- f.node.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(eventTimeout):
			t.Errorf("Run did not return after its ctx ended")
		}
	})
}

// check steps the clock to the next runtime check and waits for it, so
// that the next step is a tick of its own (the ticker drops a tick its
// reader has not taken yet).
func (f *nodeFixture) check(t *testing.T) {
	t.Helper()
	select {
	case <-f.rt.checked: // Register's
	default:
	}
	f.clock.Step(DefaultRuntimeCheckInterval)
	select {
	case <-f.rt.checked:
	case <-time.After(eventTimeout):
		t.Fatal("timed out waiting for a runtime check")
	}
}

func (f *nodeFixture) getNode(t *testing.T) *v1.Node {
	t.Helper()
	n, err := f.cs.CoreV1().Nodes().Get(t.Context(), "worker-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestRegisterCreatesNode(t *testing.T) {
	f := newNodeFixture(t)
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := f.getNode(t)

	wantLabels := map[string]string{
		"kubernetes.io/hostname":      "worker-1",
		"kubernetes.io/os":            goruntime.GOOS,
		"kubernetes.io/arch":          goruntime.GOARCH,
		"node.kubernetes.io/podward":  "true",
		"topology.kubernetes.io/zone": "lab",
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "podward.io/dedicated" {
		t.Errorf("taints = %v", n.Spec.Taints)
	}

	for name, want := range map[v1.ResourceName]string{"cpu": "4", "memory": "8Gi", "ephemeral-storage": "100Gi", "pods": "110"} {
		for list, rl := range map[string]v1.ResourceList{"capacity": n.Status.Capacity, "allocatable": n.Status.Allocatable} {
			q := rl[name]
			if q.Cmp(resource.MustParse(want)) != 0 {
				t.Errorf("%s[%s] = %s, want %s", list, name, q.String(), want)
			}
		}
	}
	if got := n.Status.Addresses; len(got) != 2 || got[0] != (v1.NodeAddress{Type: v1.NodeInternalIP, Address: "10.0.0.7"}) || got[1].Type != v1.NodeHostName {
		t.Errorf("addresses = %v", got)
	}
	if p := n.Status.DaemonEndpoints.KubeletEndpoint.Port; p != 10250 {
		t.Errorf("kubelet port = %d, want 10250", p)
	}
	want := v1.NodeSystemInfo{
		MachineID:               testMachine.MachineID,
		SystemUUID:              testMachine.SystemUUID,
		BootID:                  testMachine.BootID,
		KernelVersion:           testMachine.KernelVersion,
		OSImage:                 testMachine.OSImage,
		ContainerRuntimeVersion: "containerd://2.1.4",
		KubeletVersion:          "v1.37.2-podward",
		OperatingSystem:         goruntime.GOOS,
		Architecture:            goruntime.GOARCH,
	}
	if n.Status.NodeInfo != want {
		t.Errorf("nodeInfo = %+v\nwant %+v", n.Status.NodeInfo, want)
	}
	// A scheduler with NodeDeclaredFeatures places a pod with a
	// RestartAllContainers rule only on a node that declares it.
	if got := n.Status.DeclaredFeatures; !slices.Equal(got, []string{"RestartAllContainersOnContainerExits"}) {
		t.Errorf("declaredFeatures = %v", got)
	}

	wantConds := []struct {
		typ    v1.NodeConditionType
		status v1.ConditionStatus
		reason string
	}{
		{v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory"},
		{v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure"},
		{v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID"},
		{v1.NodeReady, v1.ConditionTrue, "KubeletReady"},
	}
	if len(n.Status.Conditions) != len(wantConds) {
		t.Fatalf("conditions = %+v", n.Status.Conditions)
	}
	for i, w := range wantConds {
		c := n.Status.Conditions[i]
		if c.Type != w.typ || c.Status != w.status || c.Reason != w.reason || !c.LastHeartbeatTime.Time.Equal(nodeT0) || !c.LastTransitionTime.Time.Equal(nodeT0) {
			t.Errorf("condition %d = %+v, want %s=%s (%s) at %v", i, c, w.typ, w.status, w.reason, nodeT0)
		}
	}
	if c := n.Status.Conditions[3]; c.Message != "podward is posting ready status" {
		t.Errorf("Ready message = %q", c.Message)
	}
}

func TestRegisterNotReadyRuntime(t *testing.T) {
	f := newNodeFixture(t)
	f.rt.setErr(errors.New("RuntimeReady=false: containerd is starting"))
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	c := nodeCondition(f.getNode(t), v1.NodeReady)
	if c.Status != v1.ConditionFalse || c.Reason != "KubeletNotReady" || c.Message != "container runtime not ready: RuntimeReady=false: containerd is starting" {
		t.Errorf("Ready = %+v", c)
	}
}

func TestReRegisterKeepsOthersLabelsAndTaints(t *testing.T) {
	existing := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: "worker-1",
			UID:  "uid-from-before",
			Labels: map[string]string{
				"kubernetes.io/hostname":         "stale",
				"node-role.kubernetes.io/worker": "",
				"team":                           "storage",
			},
		},
		Spec: v1.NodeSpec{
			Taints:        []v1.Taint{{Key: "node.kubernetes.io/unreachable", Effect: v1.TaintEffectNoExecute}},
			Unschedulable: true,
		},
		Status: v1.NodeStatus{Conditions: []v1.NodeCondition{
			{Type: v1.NodeReady, Status: v1.ConditionUnknown, Reason: "NodeStatusUnknown", LastTransitionTime: metav1.NewTime(nodeT0.Add(-time.Hour))},
			{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, Reason: "RouteCreated"},
		}},
	}
	f := newNodeFixture(t, existing)
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := f.getNode(t)
	if n.UID != "uid-from-before" {
		t.Errorf("UID = %s: the node was replaced", n.UID)
	}
	for k, v := range map[string]string{"kubernetes.io/hostname": "worker-1", "node-role.kubernetes.io/worker": "", "team": "storage", "node.kubernetes.io/podward": "true"} {
		if got, ok := n.Labels[k]; !ok || got != v {
			t.Errorf("label %s = %q (%v), want %q", k, got, ok, v)
		}
	}
	// The taints are left alone: NodeRestriction forbids a node to
	// change them once it exists.
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "node.kubernetes.io/unreachable" {
		t.Errorf("taints = %v", n.Spec.Taints)
	}
	if !n.Spec.Unschedulable {
		t.Error("the node's cordon was lifted")
	}
	if c := nodeCondition(n, v1.NodeNetworkUnavailable); c == nil || c.Reason != "RouteCreated" {
		t.Errorf("NetworkUnavailable = %+v, want it kept", c)
	}
	if c := nodeCondition(n, v1.NodeReady); c.Status != v1.ConditionTrue || !c.LastTransitionTime.Time.Equal(nodeT0) {
		t.Errorf("Ready = %+v", c)
	}
	if last := n.Status.Conditions[len(n.Status.Conditions)-1]; last.Type != v1.NodeReady {
		t.Errorf("last condition is %s, want Ready", last.Type)
	}

	// Registering again changes nothing but the status.
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	updates := 0
	for _, a := range f.cs.Actions() {
		if isAction("update", "nodes", "")(a) {
			updates++
		}
	}
	if updates != 1 {
		t.Errorf("%d node updates, want 1 (the second registration has nothing to change)", updates)
	}
}

func TestStatusUpdateRetriesOnConflict(t *testing.T) {
	f := newNodeFixture(t, &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Labels: map[string]string{"kubernetes.io/hostname": "worker-1", "kubernetes.io/os": goruntime.GOOS, "kubernetes.io/arch": goruntime.GOARCH, "node.kubernetes.io/podward": "true", "topology.kubernetes.io/zone": "lab"}}})
	conflicts := 2
	f.cs.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "status" || conflicts == 0 {
			return false, nil, nil
		}
		conflicts--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "worker-1", errors.New("the object has been modified"))
	})
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	var verbs []string
	for _, a := range f.cs.Actions() {
		if a.GetResource().Resource == "nodes" {
			verbs = append(verbs, a.GetVerb()+"/"+a.GetSubresource())
		}
	}
	want := []string{"create/", "get/", "update/status", "get/", "update/status", "get/", "update/status"}
	if fmt.Sprint(verbs) != fmt.Sprint(want) {
		t.Errorf("actions = %v\nwant %v", verbs, want)
	}
	if c := nodeCondition(f.getNode(t), v1.NodeReady); c == nil || c.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v", c)
	}
}

func TestStatusUpdateGivesUpAfterRetries(t *testing.T) {
	f := newNodeFixture(t)
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.cs.PrependReactor("update", "nodes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "worker-1", errors.New("the object has been modified"))
	})
	err := f.node.postStatus(t.Context(), nil, nodeT0)
	if !apierrors.IsConflict(err) {
		t.Fatalf("postStatus = %v, want a conflict after %d tries", err, updateRetries)
	}
}

func TestReadyFollowsRuntimeStatus(t *testing.T) {
	f := newNodeFixture(t)
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	// The lease is renewed first thing: the tickers exist once it is.
	f.actions.waitFor(t, "the lease", isAction("create", "leases", ""))

	// A readiness flip is posted at the next runtime check, before the
	// status update period.
	f.rt.setErr(errors.New("CRI status: connection refused"))
	f.clock.Step(DefaultRuntimeCheckInterval)
	a := f.actions.waitFor(t, "Ready=False", statusUpdate(v1.ConditionFalse))
	c := nodeCondition(a.(k8stesting.UpdateAction).GetObject().(*v1.Node), v1.NodeReady)
	if c.Reason != "KubeletNotReady" || c.Message != "container runtime not ready: CRI status: connection refused" {
		t.Errorf("Ready = %+v", c)
	}
	t1 := nodeT0.Add(DefaultRuntimeCheckInterval)
	if !c.LastTransitionTime.Time.Equal(t1) || !c.LastHeartbeatTime.Time.Equal(t1) {
		t.Errorf("Ready times = %v, %v, want %v", c.LastTransitionTime, c.LastHeartbeatTime, t1)
	}

	f.rt.setErr(nil)
	f.clock.Step(DefaultRuntimeCheckInterval)
	a = f.actions.waitFor(t, "Ready=True", statusUpdate(v1.ConditionTrue))
	c = nodeCondition(a.(k8stesting.UpdateAction).GetObject().(*v1.Node), v1.NodeReady)
	if t2 := t1.Add(DefaultRuntimeCheckInterval); !c.LastTransitionTime.Time.Equal(t2) || c.Reason != "KubeletReady" {
		t.Errorf("Ready = %+v, want a transition at %v", c, t2)
	}
}

// TestCheckpointFailingFollowsStateError: while the agent cannot save its
// state (a full state disk, issue 12), the Node says so in its
// CheckpointFailing condition, posted at the next runtime check like a
// readiness flip, and the condition turns False once the state is saved.
func TestCheckpointFailingFollowsStateError(t *testing.T) {
	f := newNodeFixture(t)
	var mu sync.Mutex
	var stateErr error
	f.node.cfg.StateError = func() error {
		mu.Lock()
		defer mu.Unlock()
		return stateErr
	}
	setStateErr := func(err error) {
		mu.Lock()
		stateErr = err
		mu.Unlock()
	}
	checkpointFailing := func(status v1.ConditionStatus) func(k8stesting.Action) bool {
		return func(a k8stesting.Action) bool {
			if !isAction("update", "nodes", "status")(a) {
				return false
			}
			c := nodeCondition(a.(k8stesting.UpdateAction).GetObject().(*v1.Node), ConditionCheckpointFailing)
			return c != nil && c.Status == status
		}
	}
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	n := f.getNode(t)
	if c := nodeCondition(n, ConditionCheckpointFailing); c == nil || c.Status != v1.ConditionFalse || c.Reason != "CheckpointsSaved" {
		t.Fatalf("CheckpointFailing at registration = %+v, want False (CheckpointsSaved)", c)
	}
	if last := n.Status.Conditions[len(n.Status.Conditions)-1]; last.Type != v1.NodeReady {
		t.Errorf("last condition is %s, want Ready", last.Type)
	}
	f.run(t)
	f.actions.waitFor(t, "the lease", isAction("create", "leases", ""))

	setStateErr(errors.New("state not saved: the state of 1 pod(s) cannot be saved: no space left on device"))
	f.clock.Step(DefaultRuntimeCheckInterval)
	a := f.actions.waitFor(t, "CheckpointFailing=True", checkpointFailing(v1.ConditionTrue))
	c := nodeCondition(a.(k8stesting.UpdateAction).GetObject().(*v1.Node), ConditionCheckpointFailing)
	if c.Reason != "CheckpointSaveFailed" || c.Message != "state not saved: the state of 1 pod(s) cannot be saved: no space left on device" {
		t.Errorf("CheckpointFailing = %+v", c)
	}
	if r := nodeCondition(a.(k8stesting.UpdateAction).GetObject().(*v1.Node), v1.NodeReady); r.Status != v1.ConditionTrue {
		t.Errorf("Ready = %+v: a full state disk does not make the node NotReady", r)
	}

	setStateErr(nil)
	f.clock.Step(DefaultRuntimeCheckInterval)
	f.actions.waitFor(t, "CheckpointFailing=False", checkpointFailing(v1.ConditionFalse))
}

func TestStatusPostedEveryUpdateFrequency(t *testing.T) {
	f := newNodeFixture(t)
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	f.actions.waitFor(t, "the lease", isAction("create", "leases", ""))

	// Nothing changed: the status is posted once StatusUpdateFrequency
	// has passed since the registration, with fresh heartbeats and the
	// transition kept.
	for range DefaultStatusUpdateFrequency / DefaultRuntimeCheckInterval {
		f.check(t)
	}
	a := f.actions.waitFor(t, "a status update", isAction("update", "nodes", "status"))
	n := a.(k8stesting.UpdateAction).GetObject().(*v1.Node)
	want := nodeT0.Add(DefaultStatusUpdateFrequency)
	for _, c := range n.Status.Conditions {
		if !c.LastHeartbeatTime.Time.Equal(want) || !c.LastTransitionTime.Time.Equal(nodeT0) {
			t.Errorf("%s: heartbeat %v, transition %v; want %v, %v", c.Type, c.LastHeartbeatTime, c.LastTransitionTime, want, nodeT0)
		}
	}
	// No status update was made at the check in between.
	updates := 0
	for _, a := range f.cs.Actions() {
		if isAction("update", "nodes", "status")(a) {
			updates++
		}
	}
	if updates != 1 {
		t.Errorf("%d status updates, want 1", updates)
	}
}

func TestLeaseCreatedThenRenewed(t *testing.T) {
	f := newNodeFixture(t)
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	node := f.getNode(t)
	f.run(t)

	a := f.actions.waitFor(t, "the lease's creation", isAction("create", "leases", ""))
	l := a.(k8stesting.CreateAction).GetObject().(*coordinationv1.Lease)
	if l.Namespace != "kube-node-lease" || l.Name != "worker-1" {
		t.Errorf("lease %s/%s", l.Namespace, l.Name)
	}
	if *l.Spec.HolderIdentity != "worker-1" || *l.Spec.LeaseDurationSeconds != 40 || !l.Spec.RenewTime.Time.Equal(nodeT0) {
		t.Errorf("lease spec = holder %s, duration %d, renewed %v", *l.Spec.HolderIdentity, *l.Spec.LeaseDurationSeconds, l.Spec.RenewTime)
	}
	wantOwner := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "worker-1", UID: node.UID}
	if len(l.OwnerReferences) != 1 || l.OwnerReferences[0] != wantOwner {
		t.Errorf("owners = %+v, want %+v", l.OwnerReferences, wantOwner)
	}

	for i := 1; i <= 2; i++ {
		f.clock.Step(DefaultRenewInterval)
		a = f.actions.waitFor(t, "a renewal", isAction("update", "leases", ""))
		l = a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease)
		if want := nodeT0.Add(time.Duration(i) * DefaultRenewInterval); !l.Spec.RenewTime.Time.Equal(want) {
			t.Errorf("renewal %d at %v, want %v", i, l.Spec.RenewTime, want)
		}
		if len(l.OwnerReferences) != 1 {
			t.Errorf("renewal %d: owners = %v", i, l.OwnerReferences)
		}
	}
	// Renewals start from the lease returned, without a GET.
	if n := countVerb(f.cs.Actions(), "get", "leases"); n != 1 {
		t.Errorf("%d lease GETs, want 1 (before the creation)", n)
	}
}

func TestLeaseRenewalRefetchesOnConflict(t *testing.T) {
	f := newNodeFixture(t)
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := f.node.renewLease(t.Context()); err != nil {
		t.Fatal(err)
	}
	// Someone else wrote the lease: our copy is stale.
	conflicted := false
	f.cs.PrependReactor("update", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
		if conflicted {
			return false, nil, nil
		}
		conflicted = true
		return true, nil, apierrors.NewConflict(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "worker-1", errors.New("modified"))
	})
	f.clock.Step(time.Second)
	if err := f.node.renewLease(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := countVerb(f.cs.Actions(), "get", "leases"); n != 2 {
		t.Errorf("%d lease GETs, want 2 (before the creation, after the conflict)", n)
	}
	l, err := f.cs.CoordinationV1().Leases("kube-node-lease").Get(t.Context(), "worker-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !l.Spec.RenewTime.Time.Equal(nodeT0.Add(time.Second)) {
		t.Errorf("renewTime = %v", l.Spec.RenewTime)
	}
}

func TestRunRegistersAgainAfterDeletion(t *testing.T) {
	f := newNodeFixture(t)
	f.run(t) // registers itself
	f.actions.waitFor(t, "the registration", isAction("create", "nodes", ""))
	f.actions.waitFor(t, "the lease", isAction("create", "leases", ""))
	if err := f.cs.CoreV1().Nodes().Delete(t.Context(), "worker-1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for range DefaultStatusUpdateFrequency / DefaultRuntimeCheckInterval {
		f.check(t)
	}
	a := f.actions.waitFor(t, "the registration again", isAction("create", "nodes", ""))
	uid := a.(k8stesting.CreateAction).GetObject().(*v1.Node).UID
	// The lease is given to the new Node at the first renewal after the
	// registration is done (the create seen above may not be yet).
	now := nodeT0.Add(DefaultStatusUpdateFrequency)
	for range 3 {
		f.clock.Step(DefaultRenewInterval)
		now = now.Add(DefaultRenewInterval)
		a = f.actions.waitFor(t, "a renewal", func(a k8stesting.Action) bool {
			return isAction("update", "leases", "")(a) && a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).Spec.RenewTime.Time.Equal(now)
		})
		owners := a.(k8stesting.UpdateAction).GetObject().(*coordinationv1.Lease).OwnerReferences
		if len(owners) == 1 && owners[0].UID == uid {
			return
		}
	}
	t.Errorf("the lease's owner is still not the new node %s", uid)
}

func countVerb(actions []k8stesting.Action, verb, resource string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func TestNewNodeDefaults(t *testing.T) {
	m := testMachine
	n, err := NewNode(NodeConfig{Client: fake.NewClientset(), NodeName: "n", Runtime: &fakeRuntime{}, Machine: &m, StatusUpdateFrequency: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if n.cfg.RuntimeCheckInterval != 2*time.Second {
		t.Errorf("runtime check every %v, want at most the status update frequency", n.cfg.RuntimeCheckInterval)
	}
	if n.cfg.KubeletPort != 10250 || n.cfg.LeaseDuration != 40*time.Second || n.cfg.RenewInterval != 10*time.Second || n.cfg.MaxPods != 110 {
		t.Errorf("defaults: %+v", n.cfg)
	}
	if len(n.cfg.Addresses) == 0 || n.cfg.Addresses[0].Type != v1.NodeInternalIP {
		t.Errorf("addresses = %v", n.cfg.Addresses)
	}
	for _, bad := range []NodeConfig{{NodeName: "n", Runtime: &fakeRuntime{}}, {Client: fake.NewClientset(), Runtime: &fakeRuntime{}}, {Client: fake.NewClientset(), NodeName: "n"}} {
		if _, err := NewNode(bad); err == nil {
			t.Errorf("NewNode(%+v) accepted", bad)
		}
	}
}

// While the node shuts down it is NotReady with the shutdown manager's
// error, as the kubelet's Ready condition has it (nodestatus.ReadyCondition
// with the shutdown manager's ShutdownStatus): reason KubeletNotReady,
// message "node is shutting down"; Poke posts the change at once, without
// waiting for the next runtime check.
func TestNotReadyWhileShuttingDown(t *testing.T) {
	f := newNodeFixture(t)
	var mu sync.Mutex
	var shutting error
	f.node.cfg.ShutdownStatus = func() error {
		mu.Lock()
		defer mu.Unlock()
		return shutting
	}
	if err := f.node.Register(t.Context()); err != nil {
		t.Fatal(err)
	}
	f.run(t)
	f.actions.waitFor(t, "the lease", isAction("create", "leases", ""))

	mu.Lock()
	shutting = errors.New("node is shutting down")
	mu.Unlock()
	f.node.Poke()
	a := f.actions.waitFor(t, "Ready=False", statusUpdate(v1.ConditionFalse))
	c := nodeCondition(a.(k8stesting.UpdateAction).GetObject().(*v1.Node), v1.NodeReady)
	if c.Reason != "KubeletNotReady" || c.Message != "node is shutting down" || !c.LastTransitionTime.Time.Equal(nodeT0) {
		t.Errorf("Ready = %+v", c)
	}

	mu.Lock()
	shutting = nil
	mu.Unlock()
	f.node.Poke()
	f.actions.waitFor(t, "Ready=True", statusUpdate(v1.ConditionTrue))
}
