package e2e

import (
	"path/filepath"
	"testing"
)

// heldReadyPod's container is ready while the file ready exists; an
// attempt of its exec readiness probe does not end while the file hold
// exists.
const heldReadyPod = `
apiVersion: v1
kind: Pod
metadata:
  name: held-ready
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: web
    image: probeserver
    command: ["{{.Server}}", "-port", "{{.Port}}", "-ready-file", "{{.Dir}}/ready"]
    readinessProbe:
      exec: {command: ["/bin/sh", "-c", "while [ -e {{.Dir}}/hold ]; do sleep 0.1; done; test -e {{.Dir}}/ready"]}
      periodSeconds: 1
      timeoutSeconds: 60
      failureThreshold: 1
`

// TestReadinessKeptAcrossAgentKill: on the process runtime, a ready
// container stays ready across a kill -9 of the agent and its start on the
// same state: the next agent, which adopted the container, publishes it
// ready before any readiness attempt of its own ended (each is held), as
// the kubelet since 1.35 keeps a running container's readiness across its
// own restart (KEP-4781); the probe goes on from there and turns it not
// ready when it fails. An agent that started readiness over published it
// not ready until its first attempt succeeded.
func TestReadinessKeptAcrossAgentKill(t *testing.T) {
	t.Parallel()
	dir, state := t.TempDir(), t.TempDir()
	ready, hold := filepath.Join(dir, "ready"), filepath.Join(dir, "hold")
	touch(t, ready)
	a := startAgentIn(t, state)
	a.apply("held-ready", writeManifest(t, dir, heldReadyPod, map[string]any{"Server": probeServerBin, "Port": freePort(t), "Dir": dir}))
	a.waitPod("held-ready", "condition=Ready", lineTimeout)

	touch(t, hold)
	_ = a.cmd.Process.Kill()
	<-a.done
	b := startAgentIn(t, state)
	b.pods = append(b.pods, "held-ready")
	p := b.getPod("held-ready")
	assertReady(t, p, true)
	if st := p.container(t, "web"); st.RestartCount != 0 || !deref(st.Started) {
		t.Errorf("container web after the restart: restartCount %d, started %v; want 0, started", st.RestartCount, deref(st.Started))
	}

	// The probe decides from its first result on.
	remove(t, ready)
	remove(t, hold)
	b.waitPod("held-ready", "condition=Ready=false", lineTimeout)
	assertReady(t, b.getPod("held-ready"), false)
}
