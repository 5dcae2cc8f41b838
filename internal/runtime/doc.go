// Package runtime is the contract between podward's container runtimes and
// their consumers (the pod worker, the agent, the cluster node): the core
// Runtime interface, each optional ability as an interface of its own,
// checked with a type assertion where it is used —
//
//   - what runs: ContainerLister (a pod's instances), PodLister (every pod
//     the runtime holds), PodLogRemover (a removed pod's logs),
//     ConcurrentStarter (starts that may run at once);
//   - how it stops and changes: GracefulStopper (a stop with a grace
//     period of the runtime's own), ResourceUpdater (an in-place resize),
//     VolumeRefresher (configMap, secret, downwardAPI and projected
//     volumes rewritten while the pod runs);
//   - what it tells: PodAddresser (a pod's IPs), Info (its name and
//     version), Warner (its warnings), StatsProvider (usage for the
//     summary API);
//   - images: ImageService (pulls, pre-pulls, image status);
//   - streams: StreamExecer (exec with the client's streams),
//     StreamAttacher (attach), AttachLocator and StreamLocator (the URL of
//     a runtime that serves its own streams), PortForwarder (port-forward)
//
// — and the vocabulary they share —
// container handles, exit statuses and typed exit reasons, the events and
// warnings a runtime reports, the errors ErrNotFound and ErrUnsupported.
//
// The runtimes live in sub-packages: process (host processes under a shim,
// the embedded default), cri (containers through a CRI v1 runtime) and fake
// (for tests); podspec holds the pod-spec rules both real runtimes share
// (Check's common refusals, env, $(VAR) expansion, volumeMount sources),
// hostfs the host-filesystem ones (root lock, volumes, subPaths, logs).
// Each runtime asserts `var _ runtime.X = (*Runtime)(nil)` beside its type.
//
// The exit vocabulary is package exitstatus's (a leaf the process runtime's
// shim binary links without the Kubernetes types), re-exported here under
// its usual names. It imports only the model, exitstatus and the
// Kubernetes API types; no runtime
// package imports the pod worker, the agent or anything above them.
package runtime
