// Package cli is podward's command line (cobra): it parses flags, prints
// results and picks exit codes. The client verbs (apply, get, describe,
// logs, delete, events, wait) talk to an agent through internal/client;
// the daemons (run, serve, node) are assembled by internal/node from the
// options their flags fill. Started as kubectl-podward, the binary is a
// kubectl plugin instead (plugin.go: `kubectl podward logs|describe`),
// which talks to a cluster's API server with client-go. Commands return an
// *ExitError for a non-zero exit; only main calls os.Exit.
//
// It imports internal/node, internal/client, internal/model and
// internal/events (the event lines run prints), never the daemons' parts
// (agent, store, the runtimes, the servers, the planner) directly; nothing
// imports it but main.
package cli
