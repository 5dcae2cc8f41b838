package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// lingerPod's container writes its PID and runs until killed.
const lingerPod = `
apiVersion: v1
kind: Pod
metadata:
  name: linger
spec:
  # its PID is the host's, which the test looks for
  hostPID: true
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "echo $BASHPID > {{.Dir}}/app.pid; echo up; while true; do sleep 0.1; done"]
`

// quickPod ends at once.
const quickPod = `
apiVersion: v1
kind: Pod
metadata:
  name: quick
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: bash
    command: ["/bin/bash", "-c", "echo done"]
`

// killRun starts `podward run` on lingerPod with env and args, waits for
// its container, SIGKILLs the run and returns the container's PID.
func killRun(t *testing.T, dir string, env []string, args ...string) int {
	t.Helper()
	manifest := writeManifest(t, dir, lingerPod, map[string]string{"Dir": dir})
	p := startPodwardEnv(t, env, append([]string{"-f", manifest}, args...)...)
	p.waitLine(t, output("app", "up"), lineTimeout)
	pid := readPID(t, filepath.Join(dir, "app.pid"))
	p.signal(t, syscall.SIGKILL)
	p.wait(t, exitTimeout)
	return pid
}

// TestKilledRunTakesItsContainers: a `podward run` killed with SIGKILL has
// no chance to stop its pods, yet its containers die with it (each shim
// watches the run through a pidfd), and the next run removes the
// temporary state directory it left, saying so.
func TestKilledRunTakesItsContainers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	mkdirs(t, tmp)
	env := []string{"TMPDIR=" + tmp}
	pid := killRun(t, dir, env)
	if !bintest.WaitExit(pid, 10*time.Second) {
		t.Fatalf("the container (pid %d) of a killed run still runs", pid)
	}
	left, _ := filepath.Glob(filepath.Join(tmp, "podward-run-*"))
	if len(left) != 1 {
		t.Fatalf("the killed run left %v, want its one state directory", left)
	}

	r := runEnv(t, env, "-f", writeManifest(t, dir, quickPod, nil))
	r.assertCode(t, 0)
	want := "podward: removed " + left[0] + ", left by an earlier run that was killed (1 pod)"
	if r.index(contains(want)) < 0 {
		t.Errorf("the next run did not say %q; stdout:\n%s", want, r.stdout)
	}
	if _, err := os.Stat(left[0]); !os.IsNotExist(err) {
		t.Errorf("the killed run's state directory is still there: %v", err)
	}
	if rest, _ := filepath.Glob(filepath.Join(tmp, "podward-run-*")); len(rest) != 0 {
		t.Errorf("state directories left after the second run: %v", rest)
	}
}

// TestKilledRunOnARootIsCleanedUp: with --root, the next run on the same
// root removes the pods a killed run left there.
func TestKilledRunOnARootIsCleanedUp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	pid := killRun(t, dir, nil, "--root", root)
	if !bintest.WaitExit(pid, 10*time.Second) {
		t.Fatalf("the container (pid %d) of a killed run still runs", pid)
	}
	r := run(t, "-f", writeManifest(t, dir, quickPod, nil), "--root", root)
	r.assertCode(t, 0)
	want := "podward: removed what an earlier run that was killed left in " + root + " (1 pod)"
	if r.index(contains(want)) < 0 {
		t.Errorf("the next run did not say %q; stdout:\n%s", want, r.stdout)
	}
	// The pods' logs stay, as for any removed pod; their instances do not.
	if left, _ := filepath.Glob(filepath.Join(root, "process", "pods", "*", "instances", "*")); len(left) != 0 {
		t.Errorf("container instances left on the root after the second run: %s", strings.Join(left, " "))
	}
}
