// Package streaming serves the interactive streams of a node's pods —
// exec, port-forward, and (refused for now) attach — on the kubelet's own
// streaming library, k8s.io/cri-streaming, which speaks the protocols
// kubectl does (SPDY and WebSocket, through the API server or straight
// to the agent's socket).
//
// It is the one streaming server of both of podward's servers: the agent's
// API (internal/apiserver, the pods' exec and portforward subresources) and
// the kubelet port of `podward node` (internal/cluster, /exec, /portForward,
// /run). Those resolve and authorize the request; a Server finds the pod
// and its container, checks that the container runs, and serves the stream
// the way the runtime can:
//
//   - a runtime.StreamExecer / runtime.PortForwarder (the process runtime)
//     runs the command or dials the port itself, and the Server serves the
//     client's streams with cri-streaming's ServeExec / ServePortForward;
//   - a runtime.StreamLocator (the CRI runtime) returns the URL of its own
//     streaming server, and the Server proxies the client's upgrade there,
//     as the kubelet does (pkg/kubelet/server/server.go: getExec,
//     getPortForward, proxyStream).
//
// It imports the runtime contract and the model, never a concrete runtime,
// the agent or the servers; the agent is the Pods interface it declares.
package streaming
