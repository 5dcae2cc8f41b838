// Package client is a small Go client of the API that internal/apiserver
// serves on the agent's unix socket (docs/api.md): pods, logs and events,
// with list, watch, create, apply and delete, and a pod's timeline. The
// CLI uses it.
//
// Errors: a call that gets no answer from the agent fails with a
// *ConnError whose Reason says why — no socket, a refused connection
// (both match ErrNoAgent), permission denied, an unsafe socket directory,
// a hang-up, the call's timeout — and whose message says it in kubectl's
// words where kubectl has some. Before each connection the client checks
// the socket's directory against its internal/sockdir rule, as the agent
// does before it listens: it never connects through a per-user directory
// that another user could have planted. A failure the agent reports is an
// *apierrors.StatusError carrying its metav1.Status, so
// k8s.io/apimachinery/pkg/api/errors' IsNotFound, IsInvalid, ... apply. A
// call the caller's ctx ended returns that ctx's error. Every call that
// is not a stream has its own timeout (DefaultTimeout); streams (watches,
// followed logs) last until their ctx ends or the agent ends them.
//
// It imports only the Kubernetes API types, the standard library,
// internal/sockdir, internal/wire (podward's own wire types: the node
// shutdown's) and internal/timeline (the timeline's wire type), not the
// server or the agent.
package client
