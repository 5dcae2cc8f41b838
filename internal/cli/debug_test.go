package cli

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

const debugPod = `apiVersion: v1
kind: Pod
metadata:
  name: web
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - name: data
    emptyDir: {}
  containers:
  - name: app
    image: busybox
    command: ["/bin/sh", "-c", "echo from-app > /data/marker; sleep 100 & wait"]
    volumeMounts:
    - name: data
      mountPath: /data
`

// podward debug adds an ephemeral container to a running pod, as kubectl
// debug does: it runs once (never restarted), its status is in
// status.ephemeralContainerStatuses, and with --target it sees the target's
// mounts (its emptyDir at its path), as an exec in the target would.
func TestDebug(t *testing.T) {
	e := newEnv(t)
	e.ok("apply", "-f", e.manifest("web.yaml", debugPod))
	e.ok("wait", "pod/web", "--for=condition=Ready", "--timeout", "60s")

	r := e.ok("debug", "web", "--image=busybox", "--target=app", "-c", "dbg", "--", "/bin/sh", "-c", "sleep 100 & wait")
	if r.out != "Targeting container \"app\". If you don't see processes from this container it may be because the container runtime doesn't support this feature.\n" || r.err != "" {
		t.Fatalf("debug -c dbg printed:\n%s", r)
	}
	e.waitEphemeral("dbg", func(cs v1.ContainerStatus) bool { return cs.State.Running != nil })
	e.ok("debug", "web", "--image=busybox", "--target=app", "-c", "seen", "--", "/bin/sh", "-c", "cat /data/marker")
	if cs := e.waitEphemeral("seen", func(cs v1.ContainerStatus) bool { return cs.State.Terminated != nil }); cs.State.Terminated.ExitCode != 0 {
		t.Fatalf("seen: %+v", cs.State.Terminated)
	}
	if r := e.ok("logs", "web", "-c", "seen"); r.out != "from-app\n" {
		t.Fatalf("logs of the targeted debug container:\n%s", r)
	}

	// Without a target it has its own mounts only, and its failure is not
	// restarted.
	r = e.ok("debug", "web", "--image=busybox", "--", "/bin/sh", "-c", "cat /data/marker")
	name, ok := strings.CutPrefix(strings.TrimSpace(r.out), "Defaulting debug container name to ")
	name, dot := strings.CutSuffix(name, ".")
	if !ok || !dot || !strings.HasPrefix(name, "debugger-") || len(name) != len("debugger-xxxxx") {
		t.Fatalf("debug without -c:\n%s", r)
	}
	cs := e.waitEphemeral(name, func(cs v1.ContainerStatus) bool { return cs.State.Terminated != nil })
	if cs.State.Terminated.ExitCode != 1 || cs.RestartCount != 0 {
		t.Fatalf("%s: %+v", name, cs)
	}

	r = e.ok("get", "pod", "web", "-o", "yaml")
	var pod v1.Pod
	if err := yaml.Unmarshal([]byte(r.out), &pod); err != nil {
		t.Fatal(err)
	}
	if n := len(pod.Status.EphemeralContainerStatuses); n != 3 || pod.Status.EphemeralContainerStatuses[0].Name != "dbg" || pod.Status.EphemeralContainerStatuses[0].State.Running == nil {
		t.Fatalf("get pod -o yaml: ephemeralContainerStatuses %+v", pod.Status.EphemeralContainerStatuses)
	}
	if pod.Status.Phase != v1.PodRunning || len(pod.Spec.EphemeralContainers) != 3 || pod.Spec.EphemeralContainers[0].TargetContainerName != "app" {
		t.Fatalf("get pod -o yaml: phase %s, spec.ephemeralContainers %+v", pod.Status.Phase, pod.Spec.EphemeralContainers)
	}

	// kubectl debug's refusals, with its messages; what podward cannot do
	// yet (attach) is refused too.
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"debug", "web"}, 1, "error: you must specify --image when not using --copy-to.\n"},
		{[]string{"debug", "web", "--image=busybox", "-t"}, 1, "error: -i/--stdin is required for containers with -t/--tty=true\n"},
		{[]string{"debug", "nope", "--image=busybox", "-c", "x", "--", "sh"}, 1, "Error from server (NotFound): pods \"nope\" not found\n"},
		{[]string{"debug", "web", "--image=busybox", "-c", "dbg", "--", "sh"}, 2, `existing ephemeral containers "dbg" may not be changed`},
		{[]string{"debug", "web", "--image=busybox", "-c", "app", "--", "sh"}, 2, `spec.ephemeralContainers[3].name: Duplicate value: "app"`},
		{[]string{"debug", "web", "--image=busybox", "-c", "x", "--target=nope", "--", "sh"}, 2, `spec.ephemeralContainers[3].targetContainerName: Not found: "nope"`},
	} {
		r := e.run(tc.args...)
		if r.code != tc.code || !strings.Contains(r.err, tc.err) {
			t.Errorf("podward %s: code %d, want %d with %q:\n%s", strings.Join(tc.args, " "), r.code, tc.code, tc.err, r)
		}
	}
}

// waitEphemeral waits until the ephemeral container name of pod web has a
// status that ok accepts, and returns it.
func (e *env) waitEphemeral(name string, ok func(v1.ContainerStatus) bool) v1.ContainerStatus {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(e.t.Context(), waitLimit)
	defer cancel()
	w := e.agent.WatchPods(ctx, "default")
	for {
		if p, err := e.agent.GetPod("default", "web"); err == nil {
			for _, cs := range p.Status.EphemeralContainerStatuses {
				if cs.Name == name && ok(cs) {
					return cs
				}
			}
		}
		if _, open := <-w; !open {
			e.t.Fatalf("ephemeral container %s: timed out", name)
		}
	}
}
