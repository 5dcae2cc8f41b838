// Package client is a small Go client of the API that internal/apiserver
// serves on the agent's unix socket (docs/api.md): pods, logs and events,
// with list, watch, create, apply and delete. The CLI uses it.
//
// Errors: a call made while no agent listens (no socket, or nothing
// accepting on it) fails with a *NoAgentError matching ErrNoAgent; a
// failure the agent reports is an *apierrors.StatusError carrying its
// metav1.Status, so k8s.io/apimachinery/pkg/api/errors' IsNotFound,
// IsInvalid, ... apply. Every call that is not a stream has its own
// timeout (DefaultTimeout); streams (watches, followed logs) last until
// their ctx ends or the agent ends them.
//
// It imports only the Kubernetes API types and the standard library, not
// the server or the agent.
package client
