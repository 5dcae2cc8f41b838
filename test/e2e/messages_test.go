package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// messagePod's containers leave termination messages: in the default file,
// in a file at a path of their own, from their log (FallbackToLogsOnError),
// and one per try of a container that fails once (restartPolicy OnFailure),
// so that lastState has one too. The markers of the tries are in a hostPath
// directory.
const messagePod = `
apiVersion: v1
kind: Pod
metadata:
  name: messages
spec:
  restartPolicy: OnFailure
  terminationGracePeriodSeconds: 5
  containers:
  - name: file
    image: bash
    command: ["{{.Bash}}", "-c", "echo all done > /dev/termination-log"]
  - name: custom
    image: bash
    terminationMessagePath: {{.Msg}}
    command: ["{{.Bash}}", "-c", "printf 'at a path of its own' > {{.Msg}}"]
  - name: fallback
    image: bash
    terminationMessagePolicy: FallbackToLogsOnError
    command: ["{{.Bash}}", "-c", "if [ -e {{.Dir}}/fallback.ran ]; then echo fine now; exit 0; fi; touch {{.Dir}}/fallback.ran; echo it failed >&2; exit 1"]
    volumeMounts: [{name: dir, mountPath: "{{.Dir}}"}]
  - name: retry
    image: bash
    command: ["{{.Bash}}", "-c", "if [ -e {{.Dir}}/retry.ran ]; then echo second try > /dev/termination-log; exit 0; fi; touch {{.Dir}}/retry.ran; echo first try > /dev/termination-log; exit 1"]
    volumeMounts: [{name: dir, mountPath: "{{.Dir}}"}]
  volumes:
  - name: dir
    hostPath: {path: "{{.Dir}}", type: Directory}
`

// TestTerminationMessages: what a container writes to its
// terminationMessagePath, or with FallbackToLogsOnError the tail of its
// log when it failed, is its state.terminated.message, and the previous
// instance's is lastState.terminated.message, as the kubelet reports them
// (kuberuntime_container.go: makeMounts, getTerminationMessage,
// convertToKubeContainerStatus). On the process runtime the paths are in
// each container's private mount namespace: the host's stay empty.
func TestTerminationMessages(t *testing.T) {
	t.Parallel()
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		if !rt.IsCRI() {
			needRoot(t)
		}
		dir := t.TempDir()
		msg := filepath.Join(t.TempDir(), "msg")
		a := startAgent(t, append([]string{"--backoff-base", "1s"}, rt.Args...)...)
		a.apply("messages", rt.manifest(t, dir, messagePod, map[string]string{"Dir": dir, "Msg": msg}))
		a.waitPod("messages", "jsonpath={.status.phase}=Succeeded", 60*time.Second)

		p := a.getPod("messages")
		for name, want := range map[string][2]string{ // state, lastState
			"file":     {"all done\n", ""},
			"custom":   {"at a path of its own", ""},
			"fallback": {"", "it failed\n"},
			"retry":    {"second try\n", "first try\n"},
		} {
			st := p.container(t, name)
			if st.State.Terminated == nil || st.State.Terminated.Message != want[0] {
				t.Errorf("%s's state is %s, want terminated with message %q", name, st, want[0])
			}
			if want[1] == "" {
				continue
			}
			if st.LastState.Terminated == nil || st.LastState.Terminated.Message != want[1] {
				t.Errorf("%s's lastState is %s, want terminated with message %q", name, st, want[1])
			}
		}
		if !rt.IsCRI() {
			for _, host := range []string{"/dev/termination-log", msg} {
				if data, err := os.ReadFile(host); err != nil || len(data) != 0 {
					t.Errorf("the host's %s: %q, %v; want an empty file (the containers wrote their own)", host, data, err)
				}
			}
		}
	})
}
