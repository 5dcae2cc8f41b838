// Package daemon assembles podward's daemons from their parts — a container
// runtime, the agent, the store, the pod sources and the servers — so that
// the command line only parses flags, prints and picks exit codes:
//
//	NewForeground   podward run    runtime + agent in memory (no store); every
//	                               line the containers write goes to a callback;
//	                               the file's ConfigMaps and Secrets in memory
//	NewAgent        podward serve  store + runtime + agent (recovered) + static
//	                               pods + the API server on a unix socket + the
//	                               ConfigMaps and Secrets (objects/local, stored)
//	NewClusterNode  podward node   store + runtime + agent (recovered) +
//	                               cluster.Node, cluster.Pods, the kubelet API
//	                               (+ the node shutdown on --socket)
//
// Both long-running daemons run the node shutdown manager (internal/shutdown)
// over their agent and store, loaded before the agent recovers its pods.
//
// One Options holds what the three share: the state directory, the
// planner's timings (the planner's configuration is built from them here,
// once), the events kept per pod, logging, and the runtime with its CRI
// settings. DefaultOptions has the defaults the flags show.
//
// Each constructor sets its daemon up and returns before anything is served,
// so that the caller can say it is ready; Serve or Run then serves until its
// context ends, and Close releases what is left. Stopping a daemon never
// stops a container.
//
// Errors of options that cannot work match ErrBadOptions; errors that are
// podward's own fault match ErrInternal; any other error is the environment
// refusing (the state or the socket in use, the API server unreachable).
// The errors name an option by its flag (--kubeconfig, --runtime).
//
// It may import every internal package below the command line — agent,
// store, the runtimes, staticpods, apiserver, cluster, planner, model,
// events — and must not import internal/cli or internal/client: the CLI
// imports it, never the other way round.
package daemon
