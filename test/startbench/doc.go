// Package startbench is a narrow benchmark of the process runtime's start
// and stop path, to guide work on it (issue 14's first target): a pod of
// one sidecar and two regular containers, each an `sh` loop whose first
// act is to write a line, from the API call that creates it to the last
// container's first line, and from the API call that deletes it to its
// DELETED watch event; beside it, the floor: the same three processes
// forked and execed directly, and stopped with SIGTERM (the regular
// containers, then the sidecar, as the pod stops) and waited for.
//
// The agent is the real `podward serve`, built once by TestMain, talked to
// through package client as the CLI does; with -startbench.inproc it is the
// same assembly (package node) in the benchmark's own process, so that
// -cpuprofile, -blockprofile, -mutexprofile and -trace see it (its shims
// are then the test binary re-executed, which TestMain turns into one).
// -startbench.podward BIN serves with another build, to compare two builds
// back to back on the same machine.
//
//	go test -run '^$' -bench BenchmarkPodStart -benchtime 40x ./test/startbench/
//
// Each container writes "<pod> <container>" to a FIFO the benchmark holds
// open; the benchmark stamps each line as it reads it. The figures are
// medians (ms) reported as metrics: start-ms and floor-start-ms, stop-ms
// and floor-stop-ms, and their differences. It needs no root, but runs as
// the caller: as root the containers get their termination-message mounts
// and host names, as a user's pods would.
//
// Nothing imports this package.
package startbench
