// Package e2e holds podward's end-to-end tests: they build the real binary
// once, run `podward run` on manifests whose containers are real host
// processes, and check what a user sees: the printed events and container
// output, the exit code, error messages, and files the containers write.
//
// The tests wait on output lines with a deadline; they never sleep. Tests
// whose pods mount volumes need root (a private mount namespace) and are
// skipped otherwise.
//
// Nothing imports this package; it imports only the standard library and
// test/internal/bintest (the build, line reading and /proc helpers it
// shares with test/crash), and talks to podward through its command line.
package e2e
