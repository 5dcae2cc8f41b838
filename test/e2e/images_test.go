package e2e

import (
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// Image pulls are real only on the CRI runtime: these tests run there.

const missingImagePod = `
apiVersion: v1
kind: Pod
metadata:
  name: missing-image
spec:
  containers:
  - name: app
    image: podward-test/does-not-exist:1
    command: ["sh", "-c", "echo started"]
`

// TestMissingImageBacksOff: a pull that fails shows ErrImagePull, then
// ImagePullBackOff while podward waits, then is tried again; nothing starts.
func TestMissingImageBacksOff(t *testing.T) {
	rt := bintest.CRI()
	rt.Need(t)
	t.Parallel()
	a := startAgent(t, append([]string{"--backoff-base", "2s"}, rt.Args...)...)
	a.apply("missing-image", writeManifest(t, t.TempDir(), missingImagePod, nil))

	const app = "spec.containers{app}"
	evs := a.watchEvents("missing-image", "two failed pulls and a back-off", func(evs []event) bool {
		return countEvents(evs, "Warning Failed "+app+" Failed to pull image") >= 2
	}, 60*time.Second)
	t.Logf("events:\n%s", eventList(evs))
	order := []string{
		"Normal Pulling " + app + ` Pulling image "podward-test/does-not-exist:1"`,
		"Warning Failed " + app + ` Failed to pull image "podward-test/does-not-exist:1"`,
		"Warning Failed " + app + " Error: ErrImagePull",
		"Normal BackOff " + app + ` Back-off pulling image "podward-test/does-not-exist:1"`,
		"Warning Failed " + app + " Error: ImagePullBackOff",
		"Normal Pulling " + app,
	}
	i := 0
	for _, e := range evs {
		if i < len(order) && strings.HasPrefix(e.String(), order[i]) {
			i++
		}
	}
	if i < len(order) {
		t.Fatalf("no event %q in order; events:\n%s", order[i], eventList(evs))
	}
	for _, prefix := range []string{"Normal Created", "Normal Started"} {
		if n := countEvents(evs, prefix); n > 0 {
			t.Errorf("%d %q events for a container whose image never came", n, prefix)
		}
	}
	// Between two pulls the container waits in ImagePullBackOff.
	a.waitPod("missing-image", "jsonpath={.status.containerStatuses[0].state.waiting.reason}=ImagePullBackOff", 30*time.Second)
}

const slowPullPod = `
apiVersion: v1
kind: Pod
metadata:
  name: slow-pull
  annotations:
    pod.alpha.kubernetes.io/defer-containers: |
      [{"name": "flush", "image": "busybox", "command": ["touch", "{{.Dir}}/flush.ran"],
        "volumeMounts": [{"name": "dir", "mountPath": "{{.Dir}}"}]}]
spec:
  terminationGracePeriodSeconds: 30
  containers:
  - name: app
    image: {{.Registry}}/hang/app:1
    command: ["sh", "-c", "touch {{.Dir}}/app.ran"]
    volumeMounts: [{name: dir, mountPath: "{{.Dir}}"}]
  volumes:
  - name: dir
    hostPath: {path: "{{.Dir}}", type: Directory}
`

// TestDeleteDuringPullStartsNothing: a pod deleted while its image is being
// pulled (from a registry that never answers) is gone at once, and nothing
// of it ever starts: not the container, not its defer container.
func TestDeleteDuringPullStartsNothing(t *testing.T) {
	needRoot(t)
	rt := bintest.CRI()
	rt.Need(t)
	t.Parallel()
	// A "registry" that accepts connections and never says a word.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan struct{})
	go func() {
		defer close(accepted)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-accepted
	})
	a := startAgent(t, rt.Args...)
	dir := t.TempDir()
	a.apply("slow-pull", writeManifest(t, dir, slowPullPod, map[string]string{"Dir": dir, "Registry": l.Addr().String()}))
	a.waitEvent("slow-pull", "Normal Pulling spec.containers{app}", lineTimeout)

	deleted := time.Now()
	a.mustCLI("delete", "pod", "slow-pull", "--wait", "--timeout", "30s")
	took := time.Since(deleted)
	t.Logf("deleted %v after the delete began, during the pull (grace period 30 s)", took.Round(time.Millisecond))
	if took > 10*time.Second {
		t.Errorf("the delete took %v: the pull should have been cancelled", took)
	}
	for _, f := range []string{"app.ran", "flush.ran"} {
		if fileExists(filepath.Join(dir, f)) {
			t.Errorf("%s exists: a container of a pod deleted during its pull ran", f)
		}
	}
}
