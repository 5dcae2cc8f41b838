package daemon

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
)

// --pprof serves the profiles on --metrics-bind-address only when that
// address is loopback: the address has no authentication (issue 22, item 6).
func TestProfilingOnlyOnLoopbackMetrics(t *testing.T) {
	for _, tc := range []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:9090", true},
		{"127.0.0.2:9090", true},
		{"[::1]:9090", true},
		{"localhost:9090", true},
		{"", true}, // no TCP address: the socket only
		{":9090", false},
		{"0.0.0.0:9090", false},
		{"[::]:9090", false},
		{"10.0.0.5:9090", false},
		{"node.example:9090", false},
		{"127.0.0.1", false}, // no port: not an address
	} {
		t.Run(tc.addr, func(t *testing.T) {
			o := options(t.TempDir())
			o.Profiling, o.MetricsBindAddress = true, tc.addr
			err := o.check()
			if tc.ok && err != nil {
				t.Fatalf("--pprof --metrics-bind-address %q refused: %v", tc.addr, err)
			}
			if !tc.ok && (!errors.Is(err, ErrProfilingNotLoopback) || !errors.Is(err, ErrBadOptions) ||
				!strings.Contains(err.Error(), "--metrics-bind-address") || !strings.Contains(err.Error(), "--pprof")) {
				t.Fatalf("--pprof --metrics-bind-address %q: %v, want ErrProfilingNotLoopback naming both flags", tc.addr, err)
			}
			o.Profiling = false
			if err := o.check(); err != nil {
				t.Errorf("metrics alone on %q refused: %v", tc.addr, err)
			}
		})
	}
}

// The agent refuses the combination before it opens anything: nothing
// listens on the metrics address.
func TestAgentRefusesProfilingOnExposedMetrics(t *testing.T) {
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	o := options(t.TempDir())
	o.Profiling, o.MetricsBindAddress = true, addr
	_, err = NewAgent(context.Background(), AgentOptions{Options: o, Socket: filepath.Join(shortDir(t), "pw.sock")})
	if !errors.Is(err, ErrProfilingNotLoopback) {
		t.Fatalf("agent with --pprof on %s: %v, want ErrProfilingNotLoopback", addr, err)
	}
	if c, err := net.Dial("tcp", addr); err == nil {
		_ = c.Close()
		t.Errorf("something listens on %s after the refusal", addr)
	}
}
