// Package cli is podward's command line (cobra): it parses flags, prints
// results and picks exit codes. The client verbs talk to an agent through
// internal/client: the objects' (apply, get, describe, delete, wait,
// events, resize, top), the containers' (logs, exec, attach, cp,
// port-forward, debug) and the node's (shutdown, timeline); bench drives
// an agent it starts. The daemons (run, serve, node) and stop-pods (the
// pods' ordered stop without an agent) are assembled by internal/daemon
// from the options their flags fill. Started as kubectl-podward, the binary is a
// kubectl plugin instead (plugin.go: `kubectl podward logs|describe`),
// which talks to a cluster's API server with client-go. Commands return an
// *ExitError for a non-zero exit; only main calls os.Exit.
//
// It imports internal/daemon, internal/client, internal/model and
// internal/events (the event lines run prints), never the daemons' parts
// (agent, store, the runtimes, the servers, the planner) directly; nothing
// imports it but main.
package cli
