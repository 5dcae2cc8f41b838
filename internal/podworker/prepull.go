package podworker

import (
	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/internal/model"
)

// prePull is what the pod's goroutine keeps of the background pull of the
// defer containers' images (images.go, maybePrePull): begun once per
// worker, once the pod runs, so that at termination they start without a
// pull. started and pulled are owned by run; done is made at creation and
// closed by the pre-pull's goroutine once it handed its result to the
// inbox (tests wait on it).
type prePull struct {
	// started: the pre-pull was started (once per worker).
	started bool
	// pulled names the defer containers whose image it brought.
	pulled map[string]bool
	done   chan struct{}
}

func newPrePull() prePull {
	return prePull{pulled: map[string]bool{}, done: make(chan struct{})}
}

// add records the defer containers whose image the pre-pull brought
// (inputPrePulled).
func (p *prePull) add(names []string) {
	for _, name := range names {
		p.pulled[name] = true
	}
}

// policy is the container's effective pull policy: a defer container
// whose image was pre-pulled starts without pulling again, whatever its
// policy.
func (p *prePull) policy(c *ctr, spec *v1.Container) v1.PullPolicy {
	policy := spec.ImagePullPolicy // set by model.Default
	if c.ref.Role == model.RoleDefer && p.pulled[c.ref.Name] && policy == v1.PullAlways {
		policy = v1.PullIfNotPresent
	}
	return policy
}
