package cli

import (
	"strings"
	"testing"
)

const resizeCLIPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "sleep 100 & wait"]
    resources:
      requests:
        cpu: 100m
      limits:
        memory: 32Mi
`

// podward resize goes through the agent's resize subresource: the new
// limits reach the running container's status without a restart; a
// resize that would change the QoS class is refused with the API server's
// message (pkg/apis/core/validation/validation.go, ValidatePodResize), and
// bad flags are kubectl set resources' usage errors.
func TestResize(t *testing.T) {
	e := newEnv(t)
	e.ok("apply", "-f", e.manifest("web.yaml", resizeCLIPod))
	e.ok("wait", "pod/web", "--for=condition=Ready", "--timeout", "60s")

	if r := e.ok("resize", "pod/web", "--containers=app", "--limits=memory=64Mi"); r.out != "pod/web resource requirements updated\n" {
		t.Errorf("resize printed:\n%s", r)
	}
	e.ok("wait", "pod/web", "--for=jsonpath={.status.containerStatuses[0].resources.limits.memory}=64Mi", "--timeout", "60s")
	if r := e.ok("get", "pod", "web", "-o", "jsonpath={.status.containerStatuses[0].restartCount}"); r.out != "0" {
		t.Errorf("restartCount after the resize = %q, want 0", r.out)
	}
	// The resize bumped metadata.generation, as the API server does; the
	// status and its conditions observe it.
	e.ok("wait", "pod/web", "--for=jsonpath={.status.observedGeneration}=2", "--timeout", "60s")
	if r := e.ok("get", "pod", "web", "-o", `jsonpath={.metadata.generation} {.status.conditions[?(@.type=="Ready")].observedGeneration}`); r.out != "2 2" {
		t.Errorf("generation and the Ready condition's observedGeneration after the resize: %q, want 2 2", r.out)
	}

	r := e.run("resize", "pod/web", "--limits=cpu=100m,memory=64Mi", "--requests=cpu=100m,memory=64Mi")
	if r.code == 0 || !strings.Contains(r.err, `Pod QOS Class may not change as a result of resizing`) {
		t.Errorf("a resize to Guaranteed:\n%s", r)
	}
	if r := e.run("resize", "pod/web", "--containers=nope", "--limits=memory=64Mi"); r.code != 1 || !strings.Contains(r.err, "unable to find container named nope") {
		t.Errorf("an unknown container:\n%s", r)
	}
	if r := e.run("resize", "pod/web"); r.code != 2 || !strings.Contains(r.err, "you must specify an update to requests or limits") {
		t.Errorf("no --limits nor --requests:\n%s", r)
	}
	if r := e.run("resize", "pod/web", "--limits=ephemeral-storage=1Gi"); r.code != 2 || !strings.Contains(r.err, "only cpu and memory resources are mutable") {
		t.Errorf("another resource:\n%s", r)
	}
	t.Logf("QoS refusal: %s", strings.TrimSpace(e.run("resize", "pod/web", "--limits=cpu=100m,memory=64Mi", "--requests=cpu=100m,memory=64Mi").err))
	e.ok("delete", "pod", "web", "--now")
}
