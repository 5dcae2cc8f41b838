// Package httplimit bounds the node's HTTP servers — the kubelet port, the
// agent's socket and the metrics address — as the kubelet bounds its own
// (pkg/kubelet/server/server.go, ListenAndServeKubeletServer): an idle
// keep-alive connection is closed, a client has a deadline for its header
// and a cap on its size, and a listener holds at most so many connections.
// A server that authenticates its clients (the kubelet port) also splits
// those connections in two pools (Limits.MaxUnauthenticated, pools.go):
// connections that have not authenticated are closed oldest first when
// theirs is full, so they cannot lock out clients that authenticate.
//
// It imports nothing of this module.
package httplimit
