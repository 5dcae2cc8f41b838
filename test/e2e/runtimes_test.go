package e2e

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// criEndpointEnv names the CRI endpoint the CRI variants of the tests use,
// as hack/cri-up.sh prints it. requireCRIEnv=1 (make test sets it) turns
// "not set" from a skip into a failure, so that CI never passes without
// them.
const (
	criEndpointEnv = "PODWARD_CRI_ENDPOINT"
	requireCRIEnv  = "PODWARD_REQUIRE_CRI"
)

// runtimeEnv is a container runtime the suite runs on.
type runtimeEnv struct {
	name string
	// args select it on podward's command line.
	args []string
	// bash is where bash is in the containers of `image: bash`: the host's
	// bash on the process runtime, /usr/local/bin/bash in the image (as in
	// the official image).
	bash string
}

func processRuntime() runtimeEnv {
	return runtimeEnv{name: "process", args: []string{"--runtime", "process"}, bash: "/bin/bash"}
}

// eachRuntime runs fn as a subtest per runtime, in parallel.
func eachRuntime(t *testing.T, fn func(t *testing.T, rt runtimeEnv)) {
	t.Helper()
	for _, rt := range []runtimeEnv{processRuntime(), criRuntime(t)} {
		t.Run(rt.name, func(t *testing.T) {
			if rt.args == nil {
				skipCRI(t)
			}
			t.Parallel()
			fn(t, rt)
		})
	}
}

// criRuntime is the CRI runtime, with nil args when no endpoint is set.
func criRuntime(t *testing.T) runtimeEnv {
	rt := runtimeEnv{name: "cri", bash: "/usr/local/bin/bash"}
	if ep := os.Getenv(criEndpointEnv); ep != "" {
		rt.args = []string{"--runtime", "cri", "--cri-endpoint", ep}
	}
	return rt
}

func skipCRI(t *testing.T) {
	t.Helper()
	msg := criEndpointEnv + " is not set: run `sudo hack/cri-up.sh` and export the CRI_ENDPOINT it prints as " + criEndpointEnv + " (make test does both)"
	if os.Getenv(requireCRIEnv) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

// manifest renders a pod template for this runtime: data gains Bash.
func (rt runtimeEnv) manifest(t *testing.T, dir, text string, data map[string]string) string {
	t.Helper()
	d := map[string]string{"Bash": rt.bash}
	for k, v := range data {
		d[k] = v
	}
	return writeManifest(t, dir, text, d)
}

// start is startPodward on this runtime.
func (rt runtimeEnv) start(t *testing.T, args ...string) *podward {
	t.Helper()
	return startPodward(t, append(append([]string(nil), rt.args...), args...)...)
}

// run is run on this runtime.
func (rt runtimeEnv) run(t *testing.T, args ...string) result {
	t.Helper()
	return rt.start(t, args...).wait(t, exitTimeout)
}

// sleepMarkers hands out distinct sleep durations: a container that runs
// `sleep <marker>` can be looked for among the host's processes whichever
// runtime started it.
var sleepMarkers atomic.Int64

func newSleepMarker() string {
	return fmt.Sprint(100000 + sleepMarkers.Add(1)*7 + int64(os.Getpid()%1000)*1000)
}

// assertNoProcess fails if a process whose command line contains s still
// runs (its container outlived the pod). A container's last process may
// still be on its way out when podward exits: the check waits, a bounded
// time, for each such process's exit through a pidfd.
func assertNoProcess(t *testing.T, s string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range bintest.ProcessesRunning(s) {
		if !bintest.WaitExit(pid, time.Until(deadline)) && bintest.ProcessRuns(pid, s) {
			t.Errorf("process %d (%q) still runs after podward exited", pid, s)
		}
	}
}
