package cluster

import (
	"context"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The node's Lease, kube-node-lease/<node name>, is its heartbeat: the node
// lifecycle controller marks a node unreachable once its Lease has not
// been renewed for leaseDurationSeconds. This is the kubelet's lease
// controller (k8s.io/component-helpers/apimachinery/lease) written on the
// injected clock, which that one does not use for its loop.

// leaseState is the lease goroutine's own state.
type leaseState struct {
	// last is the Lease the API server last returned, the base of the next
	// renewal; nil to fetch it (at start and after a failed update).
	last *coordinationv1.Lease
}

// leaseLoop renews the Lease at once, then at every tick (every
// RenewInterval), until ctx ends.
func (n *Node) leaseLoop(ctx context.Context, tick <-chan time.Time) {
	for {
		if err := n.renewLease(ctx); err != nil && ctx.Err() == nil {
			n.log.Error("cannot renew the node lease, will retry", "err", err, "in", n.cfg.RenewInterval)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
		}
	}
}

// renewLease creates the Lease or updates its renewTime. The update starts
// from the last Lease returned, without a GET, as the kubelet does; a
// conflict (someone else wrote it) fetches it again and retries.
func (n *Node) renewLease(ctx context.Context) error {
	leases := n.cfg.Client.CoordinationV1().Leases(v1.NamespaceNodeLease)
	var err error
	for range updateRetries {
		base := n.lease.last
		if base == nil {
			cctx, cancel := context.WithTimeout(ctx, callTimeout)
			base, err = leases.Get(cctx, n.cfg.NodeName, metav1.GetOptions{})
			cancel()
			if apierrors.IsNotFound(err) {
				cctx, cancel := context.WithTimeout(ctx, callTimeout)
				var created *coordinationv1.Lease
				created, err = leases.Create(cctx, n.newLease(nil), metav1.CreateOptions{})
				cancel()
				if err == nil {
					n.lease.last = created
					return nil
				}
				if apierrors.IsAlreadyExists(err) {
					continue
				}
				return fmt.Errorf("create lease %s/%s: %w", v1.NamespaceNodeLease, n.cfg.NodeName, err)
			}
			if err != nil {
				return fmt.Errorf("get lease %s/%s: %w", v1.NamespaceNodeLease, n.cfg.NodeName, err)
			}
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		var updated *coordinationv1.Lease
		updated, err = leases.Update(cctx, n.newLease(base), metav1.UpdateOptions{})
		cancel()
		if err == nil {
			n.lease.last = updated
			return nil
		}
		n.lease.last = nil
		if !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			break
		}
	}
	return fmt.Errorf("renew lease %s/%s: %w", v1.NamespaceNodeLease, n.cfg.NodeName, err)
}

// newLease is base (nil for a new Lease) held and renewed by this node
// now. Like the kubelet, it sets the owner reference to the Node once the
// Node's UID is known, so that deleting the Node deletes its Lease; and
// again when the Node was registered anew (a new UID), lest the garbage
// collector delete the Lease of the new Node.
func (n *Node) newLease(base *coordinationv1.Lease) *coordinationv1.Lease {
	var l *coordinationv1.Lease
	if base == nil {
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: n.cfg.NodeName, Namespace: v1.NamespaceNodeLease}}
	} else {
		l = base.DeepCopy()
	}
	l.Spec.HolderIdentity = ptr.To(n.cfg.NodeName)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(n.cfg.LeaseDuration.Seconds()))
	l.Spec.RenewTime = &metav1.MicroTime{Time: n.cfg.Clock.Now()}
	n.mu.Lock()
	uid := n.uid
	n.mu.Unlock()
	if uid != "" && (len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != uid) {
		l.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: v1.SchemeGroupVersion.Version,
			Kind:       "Node",
			Name:       n.cfg.NodeName,
			UID:        uid,
		}}
	}
	return l
}
