package bintest

import (
	"os"
	"testing"
)

// CRIEndpointEnv names the CRI endpoint the CRI variants of the suites use,
// as hack/cri-up.sh prints it. RequireCRIEnv=1 (make test sets it) turns
// "not set" from a skip into a failure, so that CI never passes without
// them.
const (
	CRIEndpointEnv = "PODWARD_CRI_ENDPOINT"
	RequireCRIEnv  = "PODWARD_REQUIRE_CRI"
)

// Runtime is a container runtime a suite runs podward on.
type Runtime struct {
	Name string
	// Args select it on the command line of `podward run` and `serve`;
	// nil for the CRI runtime when no endpoint is set.
	Args []string
	// Bash is where bash is in the containers of `image: bash`: the host's
	// bash on the process runtime, /usr/local/bin/bash in the image (as in
	// the official image) on the CRI runtime.
	Bash string
}

// Process is the process runtime.
func Process() Runtime {
	return Runtime{Name: "process", Args: []string{"--runtime", "process"}, Bash: "/bin/bash"}
}

// CRI is the CRI runtime on the endpoint of CRIEndpointEnv.
func CRI() Runtime {
	rt := Runtime{Name: "cri", Bash: "/usr/local/bin/bash"}
	if ep := os.Getenv(CRIEndpointEnv); ep != "" {
		rt.Args = []string{"--runtime", "cri", "--cri-endpoint", ep}
	}
	return rt
}

// IsCRI says whether rt runs real containers.
func (rt Runtime) IsCRI() bool { return rt.Name == "cri" }

// EachRuntime runs fn as a parallel subtest per runtime; the CRI one is
// skipped (or fails, see RequireCRIEnv) without an endpoint.
func EachRuntime(t *testing.T, fn func(t *testing.T, rt Runtime)) {
	t.Helper()
	for _, rt := range []Runtime{Process(), CRI()} {
		t.Run(rt.Name, func(t *testing.T) {
			rt.Need(t)
			t.Parallel()
			fn(t, rt)
		})
	}
}

// Need skips (or fails) the test when rt cannot be used here.
func (rt Runtime) Need(t *testing.T) {
	t.Helper()
	if rt.Args != nil {
		return
	}
	msg := CRIEndpointEnv + " is not set: run `sudo hack/cri-up.sh` and export the CRI_ENDPOINT it prints as " + CRIEndpointEnv + " (make test does both)"
	if os.Getenv(RequireCRIEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
