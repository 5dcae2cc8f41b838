// Package e2e holds podward's end-to-end tests: they build the real binary
// once, run `podward run` on manifests whose containers are real host
// processes, and check what a user sees: the printed events and container
// output, the exit code, error messages, and files the containers write.
//
// What `podward run` does not print — conditions, ready flags, restart
// counts — the tests read from `podward serve` through the CLI (apply,
// wait, get -o json, events -o json). The probe tests' containers run
// test/internal/probeserver, an HTTP server built next to podward whose
// health and readiness the tests flip with files.
//
// The tests wait on output lines with a deadline; they never sleep. Tests
// whose pods mount volumes need root (a private mount namespace) and are
// skipped otherwise.
//
// Nothing imports this package; it imports only the standard library,
// test/internal/bintest (the build, line reading and /proc helpers it
// shares with test/crash) and bbolt, with which the churn test counts the
// keys of a stopped agent's state file, and talks to podward through its
// command line.
package e2e
