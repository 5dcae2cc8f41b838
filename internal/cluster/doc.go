// Package cluster makes a podward agent a node of a Kubernetes cluster
// (`podward node`), with the API server as one more source of pods:
//
//   - Node registers the Node object (the capacity and system info of the
//     Machine it runs on, machine.go; addresses, labels, the runtime's
//     version, taints: podward's own, such as the process
//     runtime's ProcessRuntimeTaint, kept on it, node_taints.go), keeps its
//     Ready condition in step with the runtime's Status and renews its
//     Lease in kube-node-lease;
//   - Pods watches the pods bound to the node and hands them to the agent
//     (PodAgent), hands a running pod's updates to it (conditions, active
//     deadline, ephemeral containers, resizes, and labels and annotations
//     for its downwardAPI volumes, pods_metadata.go), kills those deleted
//     or gone, writes their status and defer statuses back as coalesced
//     patches, posts events, and deletes a pod's object once its worker
//     terminated it;
//   - KubeletServer serves the kubelet's log API (`kubectl logs`) and its
//     streaming paths (`kubectl exec`, `port-forward`, `cp`, through
//     internal/streaming) over TLS, authenticating clients by the cluster
//     CA (or a TokenReview) and authorizing each request with a
//     SubjectAccessReview, as the kubelet.
//
// It imports the agent (the engine it drives), the pod worker's phases, the
// model, crilog, the streaming server's types and the runtime contract
// (runtime.Info); it never imports a concrete runtime.
// Where it differs from the kubelet is in docs/lifecycle.md.
package cluster
