// Package apiserver serves one agent's pods, container logs and events over
// HTTP/JSON on a unix socket, with the paths, verbs, objects and errors of
// the Kubernetes core/v1 API, so that what is sent and received are real
// v1.Pod, v1.PodList, v1.Event, metav1.Status and metav1.WatchEvent objects:
//
//	GET    /api/v1/pods                                  list or watch (all namespaces)
//	GET    /api/v1/namespaces/{ns}/pods                  list or watch
//	POST   /api/v1/namespaces/{ns}/pods                  create
//	GET    /api/v1/namespaces/{ns}/pods/{name}           read
//	PATCH  /api/v1/namespaces/{ns}/pods/{name}           apply (application/apply-patch+yaml)
//	DELETE /api/v1/namespaces/{ns}/pods/{name}           graceful delete
//	GET    /api/v1/namespaces/{ns}/pods/{name}/log       container log (text/plain stream)
//	POST   /api/v1/namespaces/{ns}/pods/{name}/exec      a command in a container (SPDY/WebSocket; WithStreams)
//	POST   /api/v1/namespaces/{ns}/pods/{name}/portforward  port-forwards (SPDY/WebSocket; WithStreams)
//	GET    /api/v1/events, /api/v1/namespaces/{ns}/events list or watch
//	GET, PATCH, DELETE /api/v1/namespaces/{ns}/configmaps|secrets[/{name}]
//	                                                     the standalone ConfigMaps and Secrets (WithObjects)
//	GET    /healthz                                      health (the agent serves, its state is saved)
//
// docs/api.md is the reference. Every error is a metav1.Status built with
// k8s.io/apimachinery/pkg/api/errors and is converted and logged in one
// place, Server.fail.
//
// Each exec, attach and port-forward port served writes one "audit" line
// (audit.go), naming the client's credentials, which Serve reads from the
// socket (SO_PEERCRED).
//
// Listen opens the socket: it refuses a socket directory that breaks its
// internal/sockdir rule, refuses to take over a socket another server
// answers on, removes a stale one, and makes the socket appear with its
// final mode.
//
// The Backend the server needs is declared here as three small interfaces.
// The package imports internal/agent for that vocabulary only (its sentinel
// errors, ApplyResult and WatchEvent) and internal/model to decode
// manifests, crilog to read logs and sockdir for the socket's directory;
// it never builds an agent.
// internal/daemon wires a *agent.Agent in.
package apiserver
