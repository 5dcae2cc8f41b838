// Package ptytest drives a client (podward, kubectl) on a real terminal
// for the binary-level suites, test/e2e and test/cluster: it starts the
// command on the slave end of a pty of a given size, types into the master
// end, waits for text on it, resizes it, and waits for the command's end.
// One copy for both suites, so that `podward attach -it` and `kubectl
// attach -it` are driven the same way.
//
// It imports only the standard library and github.com/creack/pty, and
// nothing of podward.
package ptytest
