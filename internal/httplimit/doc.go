// Package httplimit bounds the node's HTTP servers — the kubelet port, the
// agent's socket and the metrics address — as the kubelet bounds its own
// (pkg/kubelet/server/server.go, ListenAndServeKubeletServer): an idle
// keep-alive connection is closed, a client has a deadline for its header
// and a cap on its size, and a listener holds at most so many connections.
//
// It imports nothing of this module.
package httplimit
