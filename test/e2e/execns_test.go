package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/podward/podward/test/internal/bintest"
)

// execNSPod's container mounts a tmpfs of its own over a directory of its
// emptyDir (so it runs in a mount namespace of its own, as root), writes a
// file there and renames its host; its readiness probe (an exec, which the
// kubelet runs through the runtime's exec as it runs exec hooks) is ready
// only where that file shows.
const execNSPod = `
apiVersion: v1
kind: Pod
metadata:
  name: ns
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["mkdir -p {{.Dir}}/data/own && mount -t tmpfs none {{.Dir}}/data/own && echo mounted-by-app > {{.Dir}}/data/own/f && hostname renamed-by-app && exec sleep {{.Marker}}"]
    # it mounts and names its host: CAP_SYS_ADMIN
    securityContext: {privileged: true}
    volumeMounts: [{name: data, mountPath: "{{.Dir}}/data"}]
    readinessProbe:
      exec: {command: [cat, "{{.Dir}}/data/own/f"]}
      periodSeconds: 1
  volumes: [{name: data, emptyDir: {}}]
`

// TestExecInTheContainersNamespaces: on the process runtime, `podward
// exec` (and `podward cp`, tar over exec, and an exec probe) run in the
// running container's own mount and UTS namespaces, as runc's exec joins
// its container's: they see a tmpfs the container mounted itself (which
// is not on the host, nor in a copy of its volumes) and the host name it
// set with hostname(1); the exit code is still the command's. After a
// kill -9 of the agent, the next one, which adopted the container, does
// the same.
func TestExecInTheContainersNamespaces(t *testing.T) {
	needRoot(t)
	rt := runtimeEnv{bintest.Process()}
	dir, state := t.TempDir(), t.TempDir()
	mkdirs(t, filepath.Join(dir, "data"))
	a := startAgentIn(t, state, rt.Args...)
	a.apply("ns", rt.manifest(t, dir, execNSPod, map[string]string{"Dir": dir, "Marker": newSleepMarker()}))
	// Ready: the probe saw the container's own mount.
	a.waitPod("ns", "condition=Ready", exitTimeout)

	check := func(a *agent) {
		t.Helper()
		out, errOut, code := a.runPodward(t, "", "exec", "ns", "--", rt.Bash, "-c", "cat "+dir+"/data/own/f; hostname; exit 3")
		if want := "mounted-by-app\nrenamed-by-app\n"; out != want || code != 3 {
			t.Errorf("exec: stdout %q, exit code %d; want %q, 3 (stderr %q)", out, code, want, errOut)
		}
		back := filepath.Join(t.TempDir(), "back")
		if _, errOut, code := a.runPodward(t, "", "cp", "ns:"+dir+"/data/own", back); code != 0 {
			t.Errorf("cp out of the container's own mount: exit code %d, stderr %q", code, errOut)
		} else if b, err := os.ReadFile(filepath.Join(back, "f")); err != nil || string(b) != "mounted-by-app\n" {
			t.Errorf("cp out of the container's own mount: %q, %v", b, err)
		}
	}
	check(a)
	if _, err := os.Stat(filepath.Join(dir, "data", "own", "f")); err == nil {
		t.Fatal("the container's tmpfs shows on the host: the test proves nothing")
	}
	if host, _ := os.Hostname(); strings.Contains(host, "renamed-by-app") {
		t.Fatalf("the host was renamed %q", host)
	}

	_ = a.cmd.Process.Kill()
	<-a.done
	b := startAgentIn(t, state, rt.Args...)
	b.pods = append(b.pods, "ns")
	b.waitPod("ns", "condition=Ready", exitTimeout)
	check(b)
}
