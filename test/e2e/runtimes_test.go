package e2e

import (
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// runtimeEnv is a container runtime the suite runs on.
type runtimeEnv struct{ bintest.Runtime }

// eachRuntime runs fn as a parallel subtest per runtime.
func eachRuntime(t *testing.T, fn func(t *testing.T, rt runtimeEnv)) {
	t.Helper()
	bintest.EachRuntime(t, func(t *testing.T, rt bintest.Runtime) { fn(t, runtimeEnv{rt}) })
}

// manifest renders a pod template for this runtime: data gains Bash.
func (rt runtimeEnv) manifest(t *testing.T, dir, text string, data map[string]string) string {
	t.Helper()
	d := map[string]string{"Bash": rt.Bash}
	for k, v := range data {
		d[k] = v
	}
	return writeManifest(t, dir, text, d)
}

// start is startPodward on this runtime.
func (rt runtimeEnv) start(t *testing.T, args ...string) *podward {
	t.Helper()
	return startPodward(t, append(append([]string(nil), rt.Args...), args...)...)
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
