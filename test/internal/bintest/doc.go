// Package bintest holds what podward's binary-level test suites, test/e2e
// and test/crash, share: building the podward binary (and any helper program
// a suite's containers run) once per test binary, reading a child process's
// output line by line, checking that a stream of a container's lines came
// as they were printed (Ticks), and looking at processes (and their
// memory) through /proc.
//
// It imports only the standard library and goleak. Being internal to test/,
// it can be imported only by those suites; it keeps no state of its own.
package bintest
