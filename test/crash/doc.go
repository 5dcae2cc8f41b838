// Package crash holds podward's crash-recovery tests: they build the real
// binary once, run `podward serve` as a subprocess, kill it with SIGKILL at
// the worst moments of a pod's lifecycle (during an init container, while
// containers run, during the defer containers, during the sidecars'
// shutdown, during an exec hook or probe), change the world while it is
// down (a container exits, the store forgets a pod), start it again on the
// same state and check, with real processes, that the lifecycle rules
// still hold: nothing starts twice, exits that happened meanwhile are
// recorded with their real exit codes, running containers are adopted, a
// termination keeps its original deadline, orphans are killed (an exec's
// too), and no process is left behind.
//
// Containers record what they do by appending lines ("start NAME PID",
// "stop NAME", "exit NAME", "defer NAME") to a file whose path is in their
// command; they need no volumes, so the tests need no root. The tests wait
// on conditions with deadlines (inotify on the record file, pidfds for
// process exits, `podward wait` for pod states, the agent's readiness
// line); they never sleep.
//
// Every process a test starts (agent, shims, containers) has the test's own
// temporary directory in its command line; the tests check that none is
// left at the end, and their cleanup kills leftovers by that marker.
//
// The tests talk to podward through its command line, with two white-box
// exceptions: the orphan test deletes a pod from the agent's store while
// the agent is down (package store), and the start-handshake test pins the
// moment between a container's start and the agent's confirmation of it
// through the process runtime's layout under --root (package shim's file
// names). PODWARD_CRASH_LOGS=1 prints every test's diagnostics (the agents'
// -v logs, the record file), which failing tests always print.
//
// The node shutdown tests drive it through `podward shutdown`, and once
// through systemd-logind: a private dbus-daemon and the stand-in
// org.freedesktop.login1 of internal/logind/logindtest, run as a program
// (test/internal/login1standin, built next to podward), with the agent's
// DBUS_SYSTEM_BUS_ADDRESS pointing at that bus; without dbus-daemon that
// test skips, but fails in CI (PODWARD_REQUIRE_DBUS=1, CI=true).
//
// The build of the binary, the reading of the agent's output and the /proc
// helpers are shared with test/e2e, in test/internal/bintest. Nothing
// imports this package.
package crash
