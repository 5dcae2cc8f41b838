// Package logindtest is the other side of internal/logind's protocol, for
// tests: a private dbus-daemon (Bus), a stand-in org.freedesktop.login1
// service written in Go (StandIn: Inhibit hands out a real fd, whose
// release it sees; PrepareForShutdown signals; the InhibitDelayMaxUSec
// and PreparingForShutdown properties; and org.freedesktop.systemd1's
// KillUnit, which reloads the stand-in from the drop-in directory as a
// SIGHUP makes logind read its drop-ins), and the line protocol of the
// stand-in as a program of its own (test/internal/login1standin), with
// Proc, the side of the test that drives it.
//
// There is one stand-in: internal/logind's unit tests use StandIn in their
// own process, the binary-level suites (test/crash, test/cluster) run the
// program beside the real `podward serve` or `podward node`, with
// DBUS_SYSTEM_BUS_ADDRESS pointing at the Bus.
//
// The daemon comes from Debian's dbus package, which .ci/run installs:
// without it StartBus skips the test, but fails it in CI (CI=true) or with
// PODWARD_REQUIRE_DBUS=1, which .ci/run sets.
//
// It imports nothing of podward: it speaks logind's protocol from its
// public names, as logind itself does (internal/logind's own tests import
// it, so it cannot import that package).
package logindtest
