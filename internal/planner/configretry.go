package planner

// configRetries implements start rule 10 of docs/lifecycle.md, over the
// starts the other stages planned, syncing or terminating: a container
// whose last start failed because its configuration could not be made
// (Observed.ConfigErrorAt: a ConfigMap, Secret or key its environment needs
// is missing) is started again only once Config.BackoffBase has passed
// since, as the kubelet's pod worker retries a failed sync after its
// backoff period — or at once when the objects changed since the failure
// (Input.ObjectChanges past Observed.ConfigErrorChanges), which podward
// learns of as soon as they change. A start held back is dropped from the
// plan, which wakes when it is due; the container keeps its state (and is
// no Backoff: it does not crash-loop).
//
//	start ──▶ CreateContainerConfigError ──▶ BackoffBase ──▶ start
//	                                  └── an object changes ──▶ start
func (p *Plan) configRetries(in *Input) {
	kept := p.Actions[:0]
	for _, a := range p.Actions {
		if a.Kind == Start {
			o := in.Containers[a.Container.Name]
			if at := o.ConfigErrorAt.Add(in.Config.BackoffBase); !o.ConfigErrorAt.IsZero() &&
				in.ObjectChanges <= o.ConfigErrorChanges && in.Now.Before(at) {
				p.wake(at)
				continue
			}
		}
		kept = append(kept, a)
	}
	p.Actions = kept
}
