package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
	"github.com/podward/podward/test/internal/ptytest"
)

// startAttach runs `podward attach ARGS...` in a 30x90 terminal.
func startAttach(t *testing.T, a *agent, args ...string) *ptytest.Terminal {
	t.Helper()
	return startAttachCmd(t, a, append([]string{"attach"}, args...)...)
}

// startAttachCmd runs `podward ARGS...` in a 30x90 terminal.
func startAttachCmd(t *testing.T, a *agent, args ...string) *ptytest.Terminal {
	t.Helper()
	return ptytest.Start(t, a.podwardCmd(args...), 30, 90, lineTimeout)
}

// TestAttach: a container with stdin and tty runs bash on a pty its shim
// holds. `podward attach -it` in a real terminal types a command and sees
// its output; leaving does not stop the shell, a second attach reaches the
// same one (its variable kept); an agent killed with SIGKILL while attached
// is replaced and a third attach still reaches it. stdinOnce: the first
// attach's end closes the container's stdin (cat ends), and an attach to a
// terminated container is refused as the kubelet refuses it.
func TestAttach(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		needRoot(t)
		dir := t.TempDir()
		a := startAgentIn(t, dir, rt.Args...)
		a.apply("term", rt.manifest(t, t.TempDir(), bintest.AttachPod, map[string]string{"Name": "term"}))
		a.waitPod("term", "jsonpath={.status.containerStatuses[0].started}=true", exitTimeout)

		s := startAttach(t, a, "-it", "term", "-c", "sh")
		s.Expect("If you don't see a command prompt, try pressing enter.")
		// Split markers: the echo of what is typed does not match them.
		s.Type(`V=kept; while [ "$(stty size)" != "30 90" ]; do :; done; echo A''B$((40+2)) $(stty size)` + "\r")
		s.Expect("AB42 30 90")
		s.Leave()

		s = startAttach(t, a, "-it", "term", "-c", "sh")
		s.Type("echo [$V]''END\r")
		s.Expect("[kept]END")

		// The agent dies under the attach; the shim holds the pty.
		_ = a.cmd.Process.Kill()
		<-a.done
		s.Leave()
		b := startAgentIn(t, dir, rt.Args...)
		b.pods = append(b.pods, "term")
		b.waitPod("term", "jsonpath={.status.containerStatuses[0].started}=true", exitTimeout)
		s = startAttach(t, b, "-it", "term", "-c", "sh")
		s.Type("echo again [$V]''END\r")
		s.Expect("again [kept]END")
		s.Leave()

		// stdinOnce, and kubectl's words for -t on a container without a
		// tty (stdin is not a terminal here: no raw mode either).
		out, errOut, code := b.runPodward(t, "hello-once\n", "attach", "-it", "term", "-c", "once")
		if code != 0 || !strings.Contains(out, "hello-once\ncat-done") {
			t.Errorf("attach -i to a stdinOnce cat: code %d, stdout %q, stderr %q", code, out, errOut)
		}
		for _, want := range []string{"Unable to use a TTY - container once did not allocate one", "If you don't see a command prompt, try pressing enter."} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr %q lacks %q", errOut, want)
			}
		}
		b.waitPod("term", "jsonpath={.status.containerStatuses[1].state.terminated.reason}=Completed", exitTimeout)
		_, errOut, code = b.runPodward(t, "", "attach", "term", "-c", "once")
		if code != 1 || !strings.Contains(errOut, `container not found ("once")`) {
			t.Errorf("attach to a terminated container: code %d, stderr %q", code, errOut)
		}
		_, errOut, code = b.runPodward(t, "", "attach", "term", "-c", "nope")
		if code != 1 || !strings.Contains(errOut, "error: container nope not found in pod term") {
			t.Errorf("attach to an unknown container: code %d, stderr %q", code, errOut)
		}
	})
}

// TestDebugInteractive: podward debug -it adds an ephemeral container with
// stdin and a tty and attaches to it once it runs, as kubectl debug -it
// does: what is typed in the terminal reaches its shell, whose exit ends
// the session.
func TestDebugInteractive(t *testing.T) {
	needRoot(t)
	a := startAgent(t)
	a.apply("debugged", writeManifest(t, t.TempDir(), debugPod, map[string]string{"Bash": "/bin/bash"}))
	a.waitPod("debugged", "condition=Ready", lineTimeout)
	s := startAttachCmd(t, a, "debug", "-it", "debugged", "--image=busybox", "-c", "shell", "--", "/bin/bash", "--norc", "--noprofile")
	s.Expect("If you don't see a command prompt, try pressing enter.")
	s.Type("echo C''D$((6*7))\r")
	s.Expect("CD42")
	s.Type("exit 0\r")
	if err := s.Wait(); err != nil {
		t.Errorf("podward debug -it after exit 0: %v", err)
	}
	a.waitPod("debugged", "jsonpath={.status.ephemeralContainerStatuses[0].state.terminated.exitCode}=0", lineTimeout)
}

// tickerPod's container prints lines as bintest.TickerScript does.
const tickerPod = `
apiVersion: v1
kind: Pod
metadata:
  name: ticker
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: ticker
    image: bash
    command: ["{{.Bash}}", "-c", "{{.Script}}"]
    # Burstable: a BestEffort pod's 2 CPU shares starve on a busy machine.
    resources: {requests: {cpu: 100m}}
`

// TestAttachOutput: `podward attach POD` without -i or -t, to a container
// without stdin or tty, streams what it prints from then on as it comes,
// as kubectl attach does: each line within a few seconds of being printed,
// in order, none lost, stdout on stdout and stderr on stderr, nothing from
// before the attach replayed; the attach runs until it is left.
func TestAttachOutput(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		needRoot(t)
		a := startAgent(t, rt.Args...)
		a.apply("ticker", rt.manifest(t, t.TempDir(), tickerPod, map[string]string{"Script": bintest.TickerScript}))
		a.waitPod("ticker", "jsonpath={.status.containerStatuses[0].started}=true", exitTimeout)
		// Three lines are printed before the attach.
		logs := a.podwardCmd("logs", "-f", "ticker")
		logged := &bintest.Ticks{}
		logs.Stdout = logged
		if err := logs.Start(); err != nil {
			t.Fatal(err)
		}
		ok := logged.Wait("out-", 3, lineTimeout)
		_ = logs.Process.Kill()
		_ = logs.Wait()
		if !ok {
			t.Fatalf("podward logs -f ticker: %q, want 3 lines", logged.String())
		}

		stderr := bintest.FollowTicks(t, "podward attach ticker", a.podwardCmd("attach", "ticker"), lineTimeout, 5*time.Second)
		if !strings.Contains(stderr, "If you don't see a command prompt, try pressing enter.") {
			t.Errorf("podward attach's stderr %q lacks kubectl's hint", stderr)
		}
	})
}
