package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

const shimBinaryPod = `apiVersion: v1
kind: Pod
metadata:
  name: shim-binary
spec:
  containers:
  - name: a
    image: busybox
    command: ["sh", "-c", "sleep 3600; echo {{.Marker}}"]
    readinessProbe:
      exec: {command: ["true"]}
      periodSeconds: 1
  - name: b
    image: busybox
    command: ["sh", "-c", "sleep 3600; echo {{.Marker}}"]
`

// The shims of a running pod execute podward-shim, the small binary built
// beside podward, and not podward re-executed (the fallback for a podward
// without it): that would cost every container several MB more (issue
// 14). The exec readiness probe, which must pass, goes through the same
// binary as its init helper.
func TestShimsAreTheShimBinary(t *testing.T) {
	t.Parallel()
	a := startAgent(t)
	marker := fmt.Sprintf("shim-binary-%d-%d", os.Getpid(), time.Now().UnixNano())
	a.apply("shim-binary", writeManifest(t, t.TempDir(), shimBinaryPod, map[string]string{"Marker": marker}))
	a.waitPod("shim-binary", "condition=Ready", lineTimeout)
	want, err := filepath.EvalSymlinks(bintest.ShimBin)
	if err != nil {
		t.Fatal(err)
	}
	pids := bintest.ProcessesRunning(marker)
	if len(pids) != 2 {
		t.Fatalf("%d processes of the pod's containers (%v), want 2", len(pids), pids)
	}
	for _, pid := range pids {
		_, shim, ok := bintest.ProcStat(pid)
		if !ok {
			t.Fatalf("container process %d is gone", pid)
		}
		exe, err := os.Readlink("/proc/" + strconv.Itoa(shim) + "/exe")
		if err != nil {
			t.Fatalf("the shim %d of container process %d: %v", shim, pid, err)
		}
		if exe != want {
			t.Errorf("the shim %d (%s) of container process %d executes %s, want %s", shim, bintest.Cmdline(shim), pid, exe, want)
		}
	}
}
