// Login1standin is a stand-in org.freedesktop.login1 (and the
// org.freedesktop.systemd1 that reloads it) on a private bus, for the
// binary-level suites that run the real agent with DBUS_SYSTEM_BUS_ADDRESS
// pointing at that bus:
//
//	login1standin -address unix:path=SOCKET [-max-delay D]
//
// It is internal/logind/logindtest's StandIn — the one the logind unit
// tests use in their own process — serving that package's line protocol
// (logindtest.Serve): commands on stdin, JSON events on stdout. It exits
// when stdin closes.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/godbus/dbus/v5"

	"github.com/podward/podward/internal/logind/logindtest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "login1standin:", err)
		os.Exit(1)
	}
}

func run() error {
	address := flag.String("address", "", "the bus's address (required)")
	maxDelay := flag.Duration("max-delay", 5*time.Minute, "logind's InhibitDelayMaxUSec")
	flag.Parse()
	if *address == "" {
		return fmt.Errorf("-address is required")
	}
	conn, err := dbus.Connect(*address)
	if err != nil {
		return err
	}
	defer conn.Close()
	s, err := logindtest.New(conn, *maxDelay, "")
	if err != nil {
		return err
	}
	defer s.Close()
	return logindtest.Serve(s, os.Stdin, os.Stdout)
}
