package agent

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/model"
)

// SyncConditions hands the agent the conditions the API server has in the
// status of a pod it knows (cluster mode: a pod update). Of them, those the
// node does not own (model.OthersConditions: a readiness gate's, which a
// controller sets through the status subresource) become the conditions of
// the pod it runs, for its worker to publish as they are and to compute
// Ready from (the kubelet's pod manager holds the API server's pod, status
// included, and HandlePodReconcile syncs the pod again when its readiness
// changed). The node's own are ignored: they are what it wrote. The same
// conditions as before are nothing to do; a pod that was rejected or has
// terminated takes them without a worker to hand them to.
func (a *Agent) SyncConditions(uid types.UID, conds []v1.PodCondition) error {
	a.specChangeMu.Lock()
	defer a.specChangeMu.Unlock()
	cur, err := a.recorded(uid)
	if err != nil {
		return err
	}

	others := model.OthersConditions(conds)
	if equality.Semantic.DeepEqual(model.OthersConditions(cur.Status.Conditions), others) {
		return nil
	}
	next := &model.Pod{Pod: cur.Pod.DeepCopy(), Defer: cur.Defer}
	next.Status.Conditions = others
	_, err = a.updateSpec(uid, next)
	return err
}
