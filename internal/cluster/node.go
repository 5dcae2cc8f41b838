package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	goruntime "runtime"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/runtime"
)

// KubeletVersion is what the Node reports as status.nodeInfo.kubeletVersion.
// The API server, the scheduler's version skew checks and kubectl expect a
// kubelet version there (kubectl get nodes shows it, and components compare
// it with their own). podward implements the v1.37 pod API, so it reports
// that version; the "-podward" suffix tells a human it is not the kubelet.
const KubeletVersion = "v1.37.2-podward"

// Labels podward puts on its Node. LabelPodward lets a workload or an
// operator select the podward nodes.
const (
	LabelPodward = "node.kubernetes.io/podward"
)

// Defaults of NodeConfig, the kubelet's own.
const (
	DefaultKubeletPort           = 10250
	DefaultStatusUpdateFrequency = 10 * time.Second
	DefaultLeaseDuration         = 40 * time.Second
	DefaultRenewInterval         = 10 * time.Second
	DefaultRuntimeCheckInterval  = 5 * time.Second
	DefaultMaxPods               = 110
)

// Reasons and messages of the Ready condition, the kubelet's.
const (
	ReasonKubeletReady    = "KubeletReady"
	ReasonKubeletNotReady = "KubeletNotReady"
	readyMessage          = "podward is posting ready status"
)

// ConditionCheckpointFailing is podward's own node condition (the kubelet
// has none like it): True while the agent cannot save the state it needs to
// resume its pods after a restart — its pod workers' checkpoints, its
// pods' deletions — a full state disk say. Meanwhile containers are still
// stopped when asked, and new ones wait. Its reasons are
// ReasonCheckpointSaveFailed (True, the message says why) and
// ReasonCheckpointsSaved (False). It is posted only with
// NodeConfig.StateError.
const (
	ConditionCheckpointFailing v1.NodeConditionType = "CheckpointFailing"
	ReasonCheckpointSaveFailed                      = "CheckpointSaveFailed"
	ReasonCheckpointsSaved                          = "CheckpointsSaved"
	checkpointsSavedMessage                         = "podward saves its pods' checkpoints"
)

const (
	// callTimeout bounds each call to the API server and to the runtime.
	callTimeout = 10 * time.Second
	// updateRetries is how many times a status or lease update is tried
	// when it conflicts with a newer version (the kubelet's
	// nodeStatusUpdateRetry).
	updateRetries = 5
	// registerBackoffMax caps the wait between two registration attempts
	// of Run (the kubelet's 7 s).
	registerBackoffMax = 7 * time.Second
)

// NodeConfig is what a Node needs. Client, NodeName and Runtime are
// required; every other field has a default.
type NodeConfig struct {
	// Client talks to the cluster's API server with the node's
	// credentials: it must be allowed to create and update its Node, its
	// status, and its Lease in kube-node-lease (the system:node role).
	Client   kubernetes.Interface
	NodeName string
	// Clock drives the heartbeats and stamps the times; default the real
	// clock.
	Clock  clock.WithTicker
	Logger *slog.Logger
	// Runtime is asked for the Ready condition and the runtime version.
	Runtime runtime.Info
	// StateError, when set, is asked for the CheckpointFailing condition
	// (the agent's StateError: nil while its state is saved). A change is
	// posted at the next RuntimeCheckInterval, as a flip of readiness is.
	StateError func() error
	// KubeletPort is where the kubelet server listens, reported in
	// status.daemonEndpoints so that the API server finds it for
	// kubectl logs; default 10250.
	KubeletPort int32
	// Addresses are the node's addresses; default DefaultAddresses().
	Addresses []v1.NodeAddress
	// Labels are put on the Node on top of the standard ones
	// (kubernetes.io/hostname, kubernetes.io/os, kubernetes.io/arch,
	// node.kubernetes.io/podward=true), which they may override. With
	// node credentials, the NodeRestriction admission plugin allows only
	// the kubelet's labels: those standard ones, topology.kubernetes.io/
	// zone and region, instance types, and keys under
	// node.kubernetes.io/ and kubelet.kubernetes.io/ (the kubelet's
	// --node-labels has the same limit).
	Labels map[string]string
	// Taints are put on the Node when Register creates it, as the
	// kubelet's --register-with-taints. An existing Node's taints are left
	// as they are (but OwnTaints and DroppedTaints): they are the admins'
	// and the controllers' (not-ready, unreachable...), and NodeRestriction
	// forbids a node to change them.
	Taints []v1.Taint
	// OwnTaints are podward's own taints, which say what the node is (on
	// the process runtime, ProcessRuntimeTaint): put on the Node with
	// Taints when Register creates it (one of Taints in the same key and
	// effect is replaced), and added to an existing Node that lacks them.
	// When the API server forbids that (NodeRestriction), Register fails
	// with ErrOwnTaintForbidden: pods are never run under a Node that
	// lacks them.
	OwnTaints []v1.Taint
	// DroppedTaints are podward's own taints the node no longer carries
	// (ProcessRuntimeTaint on a node that now runs the CRI runtime):
	// removed from an existing Node that has one of them (the same key,
	// value and effect; other taints are left alone). When the API server
	// forbids that, a warning says so and the Node keeps it.
	DroppedTaints []v1.Taint
	// RootDir is the directory whose filesystem is reported as
	// ephemeral-storage (podward's root, where the pods' volumes and logs
	// are); default "/". Not used when Machine is set.
	RootDir string
	// Machine is the host's description; nil: DetectMachine(RootDir).
	Machine *Machine
	// MaxPods is the pods capacity; default 110.
	MaxPods int64
	// StatusUpdateFrequency is how often the Node's status is posted,
	// with fresh heartbeat times; default 10s.
	StatusUpdateFrequency time.Duration
	// RuntimeCheckInterval is how often Runtime.Status is asked; a change
	// of readiness is posted at once, without waiting for the next status
	// update. Default 5s (the kubelet's runtime check period), and never
	// more than StatusUpdateFrequency.
	RuntimeCheckInterval time.Duration
	// LeaseDuration is the Lease's leaseDurationSeconds: how long the
	// node lifecycle controller waits after the last renewal before it
	// marks the node unreachable; default 40s.
	LeaseDuration time.Duration
	// RenewInterval is how often the Lease is renewed; default 10s.
	RenewInterval time.Duration
	// ShutdownStatus, when set, is the node shutdown manager's: an error
	// while the node shuts down, which makes the Node NotReady with it as
	// the kubelet's Ready condition does (reason KubeletNotReady, message
	// "node is shutting down"). Poke posts a change at once.
	ShutdownStatus func() error
}

// Node registers podward as a Node of a cluster and keeps it alive, as the
// kubelet does: it posts the Node's status (capacity, addresses, system
// info, conditions) periodically and at once when the runtime's readiness
// changes, and renews the node's Lease in kube-node-lease, the heartbeat
// the node lifecycle controller watches.
//
// The Node object is never deleted by podward (the kubelet does not delete
// its Node either): an agent that stops leaves it to turn NotReady, then
// unreachable, and the next start takes it over again.
//
//	NewNode ──► Register ──► Run ─────────────────────────────► ctx done
//	            create or    ├─ lease: renew now, then every RenewInterval
//	            update Node  └─ status: ask the runtime every RuntimeCheckInterval,
//	            + status        post on a readiness flip or every StatusUpdateFrequency
type Node struct {
	cfg     NodeConfig
	machine Machine
	log     *slog.Logger

	mu sync.Mutex
	// isRegistered is set once Register succeeded; uid is the Node's UID
	// then.
	isRegistered bool
	uid          types.UID
	// node is the last Node the API server returned, the base of the next
	// status update (a conflict makes it fetched again).
	node *v1.Node
	// posted is the readiness last posted, postedFailing whether
	// CheckpointFailing was posted True; lastPost when.
	posted        *bool
	postedFailing bool
	lastPost      time.Time
	// runtimeVersion is the last one the runtime told.
	runtimeVersion string

	// lease is the last Lease the API server returned; only the lease
	// goroutine uses it.
	lease leaseState

	// poke asks the status loop for a readiness check now (1-slot).
	poke chan struct{}
}

// NewNode checks cfg, fills in its defaults and describes the machine.
// Nothing is sent to the API server before Register or Run.
func NewNode(cfg NodeConfig) (*Node, error) {
	if cfg.Client == nil {
		return nil, errors.New("node: no API client")
	}
	if cfg.NodeName == "" {
		return nil, errors.New("node: no node name")
	}
	if cfg.Runtime == nil {
		return nil, errors.New("node: no runtime")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.KubeletPort == 0 {
		cfg.KubeletPort = DefaultKubeletPort
	}
	if cfg.Addresses == nil {
		cfg.Addresses = DefaultAddresses()
	}
	if cfg.MaxPods == 0 {
		cfg.MaxPods = DefaultMaxPods
	}
	if cfg.StatusUpdateFrequency <= 0 {
		cfg.StatusUpdateFrequency = DefaultStatusUpdateFrequency
	}
	if cfg.RuntimeCheckInterval <= 0 {
		cfg.RuntimeCheckInterval = DefaultRuntimeCheckInterval
	}
	cfg.RuntimeCheckInterval = min(cfg.RuntimeCheckInterval, cfg.StatusUpdateFrequency)
	if cfg.LeaseDuration <= 0 {
		cfg.LeaseDuration = DefaultLeaseDuration
	}
	if cfg.RenewInterval <= 0 {
		cfg.RenewInterval = DefaultRenewInterval
	}
	if cfg.RootDir == "" {
		cfg.RootDir = "/"
	}
	n := &Node{cfg: cfg, log: cfg.Logger.With("node", cfg.NodeName), poke: make(chan struct{}, 1)}
	if cfg.Machine != nil {
		n.machine = *cfg.Machine
	} else {
		m, err := DetectMachine(cfg.RootDir)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", cfg.NodeName, err)
		}
		n.machine = m
	}
	return n, nil
}

// DefaultAddresses are the addresses of this host as the kubelet finds
// them: the InternalIP of the interface of the default route (127.0.0.1
// when there is none) and the Hostname, the host's name in lower case.
func DefaultAddresses() []v1.NodeAddress {
	ip := "127.0.0.1"
	if hostIP, err := utilnet.ChooseHostInterface(); err == nil {
		ip = hostIP.String()
	}
	addrs := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: ip}}
	if h, err := os.Hostname(); err == nil && h != "" {
		addrs = append(addrs, v1.NodeAddress{Type: v1.NodeHostName, Address: strings.ToLower(h)})
	}
	return addrs
}

// Register creates the Node, or takes over the one of the same name (an
// agent that restarted): the standard labels and Config.Labels are set,
// Config.OwnTaints put on and Config.DroppedTaints removed, keeping the
// labels, taints and everything else others put there, and its status is
// posted. It is one attempt, idempotent; the caller
// registers before it starts syncing pods, so that the node exists when
// the pods bound to it are looked for. ctx bounds the whole attempt.
func (n *Node) Register(ctx context.Context) error {
	nodes := n.cfg.Client.CoreV1().Nodes()
	runtimeErr := n.runtimeStatus(ctx)
	now := n.cfg.Clock.Now()

	want := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.cfg.NodeName, Labels: n.labels()},
		Spec:       v1.NodeSpec{Taints: mergeTaints(n.cfg.Taints, n.cfg.OwnTaints)},
	}
	failing := n.setStatus(ctx, &want.Status, runtimeErr, now)
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	created, err := nodes.Create(cctx, want, metav1.CreateOptions{})
	cancel()
	if err == nil {
		n.registered(created, runtimeErr == nil, failing, now)
		n.log.Info("registered the node", "ready", runtimeErr == nil)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register node %s: %w", n.cfg.NodeName, err)
	}

	existing, err := n.takeOver(ctx)
	if err != nil {
		return fmt.Errorf("register node %s: %w", n.cfg.NodeName, err)
	}
	n.mu.Lock()
	n.uid, n.node = existing.UID, existing
	n.mu.Unlock()
	if err := n.postStatus(ctx, runtimeErr, now); err != nil {
		return fmt.Errorf("register node %s: %w", n.cfg.NodeName, err)
	}
	n.mu.Lock()
	n.isRegistered = true
	n.mu.Unlock()
	n.log.Info("took over the existing node", "ready", runtimeErr == nil)
	return nil
}

// takeOver sets podward's labels and own taints on the existing Node,
// keeping the others', and removes its dropped taints, retrying when the
// update conflicts with a newer version. It returns the Node as the API
// server has it then.
func (n *Node) takeOver(ctx context.Context) (*v1.Node, error) {
	nodes := n.cfg.Client.CoreV1().Nodes()
	drop := true
	for attempt := 0; ; attempt++ {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		existing, err := nodes.Get(cctx, n.cfg.NodeName, metav1.GetOptions{})
		cancel()
		if err != nil {
			return nil, fmt.Errorf("get the existing node: %w", err)
		}
		relabelled := n.reconcileMeta(existing)
		added, removed := n.reconcileTaints(existing, drop)
		if !relabelled && added == nil && removed == nil {
			return existing, nil
		}
		cctx, cancel = context.WithTimeout(ctx, callTimeout)
		updated, err := nodes.Update(cctx, existing, metav1.UpdateOptions{})
		cancel()
		switch {
		case err == nil:
			if added != nil || removed != nil {
				n.log.Info("set the node's own taints", "added", taintStrings(added), "removed", taintStrings(removed))
			}
			return updated, nil
		case apierrors.IsForbidden(err) && added != nil:
			return nil, n.ownTaintForbidden(added, err)
		case apierrors.IsForbidden(err) && removed != nil:
			// A taint too many only keeps pods away: the node runs
			// without removing it.
			n.log.Warn("cannot remove the node's former taints, the Node keeps them", "taints", taintStrings(removed), "err", err)
			drop = false
		case !apierrors.IsConflict(err) || attempt+1 == updateRetries:
			return nil, fmt.Errorf("update the existing node: %w", err)
		}
	}
}

// Run keeps the Node alive until ctx ends: it registers it first when
// Register has not succeeded yet (retrying with a backoff up to 7 s), then
// renews the Lease and posts the status. Failures are logged and retried at
// the next interval. It returns nil once ctx is done, ctx.Err() when ctx
// ends before the node could be registered.
func (n *Node) Run(ctx context.Context) error {
	if err := n.registerUntilDone(ctx); err != nil {
		return err
	}
	// Both tickers exist before either loop does anything, so that a
	// test's fake clock, stepped once the first lease is seen, reaches
	// them both.
	leaseTicker := n.cfg.Clock.NewTicker(n.cfg.RenewInterval)
	defer leaseTicker.Stop()
	statusTicker := n.cfg.Clock.NewTicker(n.cfg.RuntimeCheckInterval)
	defer statusTicker.Stop()
	var wg sync.WaitGroup
	wg.Go(func() { n.leaseLoop(ctx, leaseTicker.C()) })
	wg.Go(func() { n.statusLoop(ctx, statusTicker.C()) })
	wg.Wait()
	return nil
}

func (n *Node) registerUntilDone(ctx context.Context) error {
	backoff := 100 * time.Millisecond
	for {
		n.mu.Lock()
		done := n.isRegistered
		n.mu.Unlock()
		if done {
			return nil
		}
		err := n.Register(ctx)
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		n.log.Error("cannot register the node, will retry", "err", err, "in", backoff)
		t := n.cfg.Clock.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
		backoff = min(2*backoff, registerBackoffMax)
	}
}

// statusLoop asks the runtime for its status at every tick (every
// RuntimeCheckInterval) and posts the Node's status when readiness flipped
// or StatusUpdateFrequency has passed since the last post.
func (n *Node) statusLoop(ctx context.Context, tick <-chan time.Time) {
	for {
		var now time.Time
		select {
		case <-ctx.Done():
			return
		case now = <-tick:
		case <-n.poke:
			now = n.cfg.Clock.Now()
		}
		runtimeErr := n.runtimeStatus(ctx)
		failing := n.stateError() != nil
		n.mu.Lock()
		flipped := n.posted == nil || *n.posted != (runtimeErr == nil) || n.postedFailing != failing
		// The tick's time, not the clock's, is compared, so that the
		// time the last post took does not push the next one a tick
		// later.
		due := now.Sub(n.lastPost) >= n.cfg.StatusUpdateFrequency
		n.mu.Unlock()
		if !flipped && !due {
			continue
		}
		if flipped {
			n.log.Info("runtime readiness or state changed", "ready", runtimeErr == nil, "err", runtimeErr, "checkpointFailing", failing)
		}
		err := n.postStatus(ctx, runtimeErr, now)
		if apierrors.IsNotFound(err) {
			// Someone deleted the Node: register it again (the kubelet
			// does not, and stays lost until restarted).
			n.log.Warn("the node was deleted, registering it again")
			err = n.Register(ctx)
		}
		if err != nil && ctx.Err() == nil {
			n.log.Error("cannot post the node status, will retry", "err", err)
		}
	}
}

// runtimeStatus asks the runtime whether it is ready, then the node
// shutdown manager whether the node shuts down: the error the Ready
// condition reports, the runtime's first.
func (n *Node) runtimeStatus(ctx context.Context) error {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	if err := n.cfg.Runtime.Status(cctx); err != nil {
		return fmt.Errorf("container runtime not ready: %w", err)
	}
	if f := n.cfg.ShutdownStatus; f != nil {
		return f()
	}
	return nil
}

// Poke makes the status loop check readiness and post a change now rather
// than at its next tick (the node shutdown began or was cancelled). It
// never blocks.
func (n *Node) Poke() {
	select {
	case n.poke <- struct{}{}:
	default:
	}
}

// postStatus sets the Node's status and posts it (UpdateStatus), from the
// last Node the API server returned; a conflict fetches it again and
// retries. now is the heartbeat time.
func (n *Node) postStatus(ctx context.Context, runtimeErr error, now time.Time) error {
	nodes := n.cfg.Client.CoreV1().Nodes()
	n.mu.Lock()
	base := n.node
	n.mu.Unlock()
	var err error
	for range updateRetries {
		if base == nil {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			base, err = nodes.Get(cctx, n.cfg.NodeName, metav1.GetOptions{})
			cancel()
			if err != nil {
				return fmt.Errorf("get node %s: %w", n.cfg.NodeName, err)
			}
		}
		node := base.DeepCopy()
		failing := n.setStatus(ctx, &node.Status, runtimeErr, now)
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		var updated *v1.Node
		updated, err = nodes.UpdateStatus(cctx, node, metav1.UpdateOptions{})
		cancel()
		if err == nil {
			n.mu.Lock()
			ready := runtimeErr == nil
			n.node, n.uid, n.posted, n.postedFailing, n.lastPost = updated, updated.UID, &ready, failing, now
			n.mu.Unlock()
			return nil
		}
		// Fetch it again, whatever the error: the node may have changed,
		// or been deleted and created again by someone else.
		base = nil
		n.mu.Lock()
		n.node = nil
		n.mu.Unlock()
		if !apierrors.IsConflict(err) {
			break
		}
	}
	return fmt.Errorf("update status of node %s: %w", n.cfg.NodeName, err)
}

// registered records the Node as the API server created it.
func (n *Node) registered(node *v1.Node, ready, failing bool, now time.Time) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.uid, n.node, n.posted, n.postedFailing, n.lastPost = node.UID, node, &ready, failing, now
	n.isRegistered = true
}

// labels are the labels podward sets on its Node.
func (n *Node) labels() map[string]string {
	l := map[string]string{
		v1.LabelHostname:   n.cfg.NodeName,
		v1.LabelOSStable:   goruntime.GOOS,
		v1.LabelArchStable: goruntime.GOARCH,
		LabelPodward:       "true",
	}
	maps.Copy(l, n.cfg.Labels)
	return l
}

// reconcileMeta sets podward's labels on an existing Node, keeping the
// others (as the kubelet's updateDefaultLabels); it reports whether it
// changed anything.
func (n *Node) reconcileMeta(node *v1.Node) bool {
	changed := false
	if node.Labels == nil {
		node.Labels = map[string]string{}
	}
	for k, v := range n.labels() {
		if cur, ok := node.Labels[k]; !ok || cur != v {
			node.Labels[k] = v
			changed = true
		}
	}
	return changed
}

// declaredFeatures are the node features (KEP-5328, NodeDeclaredFeatures)
// that podward implements and that a scheduler checks before placing a pod
// that needs one: RestartAllContainersOnContainerExits, for a pod with a
// RestartAllContainers restart rule (KEP-5532).
var declaredFeatures = []string{"RestartAllContainersOnContainerExits"}

// setStatus writes what podward knows of the node into st, keeping what
// others set there (other conditions, other resources, images...). It
// reports whether it set CheckpointFailing True.
func (n *Node) setStatus(ctx context.Context, st *v1.NodeStatus, runtimeErr error, now time.Time) (checkpointFailing bool) {
	if st.Capacity == nil {
		st.Capacity = v1.ResourceList{}
	}
	if st.Allocatable == nil {
		st.Allocatable = v1.ResourceList{}
	}
	for name, q := range n.machine.Capacity(n.cfg.MaxPods) {
		st.Capacity[name] = q
	}
	for name, q := range n.machine.Allocatable(n.cfg.MaxPods) {
		st.Allocatable[name] = q
	}
	st.Addresses = slices.Clone(n.cfg.Addresses)
	st.DeclaredFeatures = slices.Clone(declaredFeatures)
	st.DaemonEndpoints.KubeletEndpoint.Port = n.cfg.KubeletPort

	info := &st.NodeInfo
	info.MachineID = n.machine.MachineID
	info.SystemUUID = n.machine.SystemUUID
	info.BootID = n.machine.BootID
	info.KernelVersion = n.machine.KernelVersion
	info.OSImage = n.machine.OSImage
	info.ContainerRuntimeVersion = n.containerRuntimeVersion(ctx)
	info.KubeletVersion = KubeletVersion
	info.KubeProxyVersion = ""
	info.OperatingSystem = goruntime.GOOS
	info.Architecture = goruntime.GOARCH

	hb := metav1.NewTime(now)
	conds := []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", Message: "kubelet has sufficient memory available"},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure"},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientPID", Message: "kubelet has sufficient PID available"},
	}
	if n.cfg.StateError != nil {
		stateErr := n.stateError()
		checkpointFailing = stateErr != nil
		conds = append(conds, checkpointCondition(stateErr))
	}
	conds = append(conds, readyCondition(runtimeErr))
	var others []v1.NodeCondition
	old := map[v1.NodeConditionType]v1.NodeCondition{}
	for _, c := range st.Conditions {
		switch c.Type {
		case v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, ConditionCheckpointFailing, v1.NodeReady:
			old[c.Type] = c
		default:
			others = append(others, c)
		}
	}
	for i := range conds {
		c := &conds[i]
		c.LastHeartbeatTime = hb
		c.LastTransitionTime = hb
		if prev, ok := old[c.Type]; ok && prev.Status == c.Status {
			c.LastTransitionTime = prev.LastTransitionTime
		}
	}
	// Ready goes last, as the kubelet keeps it for old clients
	// (kubernetes/kubernetes#16961).
	st.Conditions = append(others, conds...)
	return checkpointFailing
}

// stateError is the agent's StateError, nil without one.
func (n *Node) stateError() error {
	if n.cfg.StateError == nil {
		return nil
	}
	return n.cfg.StateError()
}

func checkpointCondition(stateErr error) v1.NodeCondition {
	if stateErr != nil {
		return v1.NodeCondition{Type: ConditionCheckpointFailing, Status: v1.ConditionTrue, Reason: ReasonCheckpointSaveFailed, Message: stateErr.Error()}
	}
	return v1.NodeCondition{Type: ConditionCheckpointFailing, Status: v1.ConditionFalse, Reason: ReasonCheckpointsSaved, Message: checkpointsSavedMessage}
}

func readyCondition(runtimeErr error) v1.NodeCondition {
	if runtimeErr != nil {
		return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: ReasonKubeletNotReady, Message: runtimeErr.Error()}
	}
	return v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: ReasonKubeletReady, Message: readyMessage}
}

// containerRuntimeVersion is "<name>://<version>", as the kubelet reports
// it; when the runtime cannot tell, the last version it told.
func (n *Node) containerRuntimeVersion(ctx context.Context) string {
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	name, version, err := n.cfg.Runtime.Version(cctx)
	cancel()
	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		n.log.Debug("cannot get the runtime version", "err", err)
		return n.runtimeVersion
	}
	n.runtimeVersion = name + "://" + version
	return n.runtimeVersion
}
