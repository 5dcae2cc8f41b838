// Package store is podward's durable state: one bbolt file that outlives the
// agent. It holds
//
//   - the pods the agent runs (the v1.Pod plus its defer containers), keyed
//     by UID;
//   - one opaque checkpoint per pod, written by the pod worker before the
//     action it guards (write-ahead), so a restarted agent knows what it was
//     doing;
//   - the newest events of each pod, bounded per pod and in all (the oldest
//     go first), and only while the pod is stored: DeletePod takes them
//     along, an event that comes in later is not kept, and Open drops what
//     an older podward stored after its pods' removal;
//   - one opaque timeline per pod (its container instances and marks, kept
//     bounded by the agent's timeline.History), only while the pod is
//     stored, as its events;
//   - the ConfigMaps and Secrets applied to a standalone agent
//     (internal/objects/local), in a file only root reads (0600);
//   - a few small meta values, such as the boot ID the agent last ran under.
//
// The file is locked while open: a second agent on the same file fails fast
// with ErrLocked instead of sharing it. Every write is committed with fsync
// before the call returns, but not in a transaction of its own: one
// goroutine commits the writes queued meanwhile together (group commit,
// commit.go), and the writes that guard nothing (events, timelines, a
// deferred checkpoint) wait up to Options.DeferredDelay to share the commit
// of one that does, so that they add no fsync to the pod workers' path.
//
// It imports only the model, the events, the Kubernetes API types and
// bbolt. Nothing in it knows how a pod is run. The agent declares what it
// needs of a store (agent.Store) and uses its errors; the daemons' assembly
// opens it; the pod worker never sees it (its checkpoints go through the
// agent).
package store
