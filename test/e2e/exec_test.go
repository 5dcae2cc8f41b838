package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/podward/podward/test/internal/bintest"
	"github.com/podward/podward/test/internal/ptytest"
)

// execPod runs app until deleted, having written a file into its emptyDir
// (mounted at {{.Dir}}/data, which stays empty on the host) and, with
// {{.Serve}}, serving {{.Dir}}/www over HTTP on the loopback's port
// {{.Port}}; its container done exits at once and stays terminated.
const execPod = `
apiVersion: v1
kind: Pod
metadata:
  name: shell
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["echo made-by-app > {{.Dir}}/data/f; mkdir -p {{.Dir}}/www; echo hello-from-pod > {{.Dir}}/www/index.html; if [ -n '{{.Serve}}' ]; then exec busybox httpd -f -p 127.0.0.1:{{.Port}} -h {{.Dir}}/www; fi; exec sleep {{.Marker}}"]
    workingDir: {{.Dir}}
    env: [{name: GREETING, value: hello}]
    volumeMounts: [{name: data, mountPath: "{{.Dir}}/data"}]
    ports: [{name: web, containerPort: {{.Port}}}]
  - name: done
    image: bash
    command: ["{{.Bash}}", "-c", "true"]
  volumes: [{name: data, emptyDir: {}}]
`

// startExecPod starts an agent on rt with execPod running.
func startExecPod(t *testing.T, rt runtimeEnv, serve bool, port int) (*agent, string) {
	t.Helper()
	needRoot(t)
	dir := t.TempDir()
	mkdirs(t, filepath.Join(dir, "data"))
	a := startAgent(t, rt.Args...)
	s := ""
	if serve {
		s = "yes"
	}
	a.apply("shell", rt.manifest(t, dir, execPod, map[string]string{"Dir": dir, "Serve": s, "Port": fmt.Sprint(port), "Marker": newSleepMarker()}))
	a.waitPod("shell", "jsonpath={.status.containerStatuses[1].state.terminated.reason}=Completed", exitTimeout)
	a.waitPod("shell", "jsonpath={.status.containerStatuses[0].started}=true", exitTimeout)
	return a, dir
}

// podwardCmd is `podward ARGS...` against a, not started.
func (a *agent) podwardCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(podwardBin, args...)
	cmd.Env = append(os.Environ(), "PODWARD_SOCKET="+a.socket)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runPodward runs `podward ARGS...` with stdin and returns its outputs and
// exit code.
func (a *agent) runPodward(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := a.podwardCmd(args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(cliTimeout)
	defer timer.Stop()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("podward %s: %v", strings.Join(args, " "), err)
		}
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("podward %s did not end within %v; stderr: %s", strings.Join(args, " "), cliTimeout, errOut.String())
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// TestExec: `podward exec` runs its command in the container's context
// (its environment, working directory and volume mounts: the file the
// container wrote into its emptyDir is at the mount path, which is empty
// on the host), passes stdin with -i, and exits with the command's code
// after kubectl's words; it refuses, as kubectl and the kubelet do, an
// unknown container (kubectl's podcmd) and one that terminated (the
// kubelet finds only running containers: pkg/kubelet/kubelet_pods.go,
// GetExec).
func TestExec(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		a, dir := startExecPod(t, rt, false, 1)

		out, errOut, code := a.runPodward(t, "", "exec", "shell", "-c", "app", "--", rt.Bash, "-c", "echo $GREETING; pwd; cat "+dir+"/data/f; echo oops >&2; exit 7")
		if want := "hello\n" + dir + "\nmade-by-app\n"; out != want || code != 7 {
			t.Errorf("exec: stdout %q, exit code %d; want %q, 7 (stderr %q)", out, code, want, errOut)
		}
		if !strings.Contains(errOut, "oops\n") || !strings.HasSuffix(errOut, "command terminated with exit code 7\n") {
			t.Errorf("exec: stderr %q, want the command's and kubectl's last line", errOut)
		}
		if _, err := os.Stat(filepath.Join(dir, "data", "f")); err == nil {
			t.Errorf("the volume's file is on the host at its mount path: the test proves nothing")
		}

		out, errOut, code = a.runPodward(t, "line one\nline two\n", "exec", "-i", "shell", "-c", "app", "--", "cat")
		if out != "line one\nline two\n" || code != 0 {
			t.Errorf("exec -i cat: stdout %q, exit code %d (stderr %q)", out, code, errOut)
		}

		// Without -c: the first container, said as kubectl says it.
		out, errOut, code = a.runPodward(t, "", "exec", "shell", "--", "echo", "default")
		if out != "default\n" || code != 0 || !strings.Contains(errOut, `Defaulted container "app" out of: app, done`) {
			t.Errorf("exec without -c: stdout %q, stderr %q, exit code %d", out, errOut, code)
		}

		_, errOut, code = a.runPodward(t, "", "exec", "shell", "-c", "nope", "--", "true")
		if code != 1 || !strings.Contains(errOut, "error: container nope is not valid for pod shell out of: app, done") {
			t.Errorf("exec -c nope: stderr %q, exit code %d", errOut, code)
		}
		_, errOut, code = a.runPodward(t, "", "exec", "shell", "-c", "done", "--", "true")
		if code != 1 || !strings.Contains(errOut, `unable to upgrade connection: container not found ("done")`) {
			t.Errorf("exec in a terminated container: stderr %q, exit code %d", errOut, code)
		}
		_, errOut, code = a.runPodward(t, "", "exec", "-it", "shell", "-c", "app", "--", "true")
		if code != 0 || !strings.Contains(errOut, "Unable to use a TTY - input is not a terminal or the right kind of file") {
			t.Errorf("exec -it without a terminal: stderr %q, exit code %d", errOut, code)
		}
	})
}

// TestExecTTY: `podward exec -it` on a real terminal gives the command a
// terminal of its own (a pty), the size of the client's, and passes a size
// change on (stty size reads it again); what is typed goes to the command,
// and the exit code is the command's.
func TestExecTTY(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		a, _ := startExecPod(t, rt, false, 1)
		cmd := a.podwardCmd("exec", "-it", "shell", "-c", "app", "--", rt.Bash, "--norc", "--noprofile")
		cmd.Env = append(cmd.Env, "TERM=dumb")
		term := ptytest.Start(t, cmd, 40, 100, lineTimeout)
		// The markers are split so that the echo of what is typed does not
		// match them.
		term.Type("tty >/dev/null && echo IS''TTY\r")
		term.Expect("ISTTY")
		// The first size, like every change of it, reaches the container's
		// pty through the exec's resize stream (kubectl sends it there
		// too), which on CRI may come after the command started: until it
		// does, the pty has no size (stty says so with an error).
		term.TypeUntil("echo SIZE $(stty size 2>/dev/null)E''ND\r", "END", "SIZE 40 100END")
		term.Resize(50, 120)
		// The new size reaches the container's pty asynchronously: ask
		// until it shows.
		term.TypeUntil("echo SIZE $(stty size) E''ND\r", "END", "SIZE 50 120 END")
		term.Type("exit 3\r")
		var ee *exec.ExitError
		if err := term.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Errorf("podward exec -it: %v, want exit code 3", err)
		}
	})
}

// TestPortForward: `podward port-forward POD LOCAL:NAME` forwards a local
// port to the container's port, found by its name, on the pod's network
// (on the process runtime, the host's loopback, where the container
// listens), printing kubectl's lines, until it is interrupted.
func TestPortForward(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		remote := freePort(t)
		a, _ := startExecPod(t, rt, true, remote)
		local := freePort(t)
		f := bintest.StartForward(t, a.podwardCmd("port-forward", "shell", fmt.Sprintf("%d:web", local)), lineTimeout)
		if f.Local != local || f.Remote != remote {
			t.Errorf("Forwarding from 127.0.0.1:%d -> %d, want %d -> %d", f.Local, f.Remote, local, remote)
		}
		if body := bintest.GetPage(t, fmt.Sprintf("http://127.0.0.1:%d/", local), lineTimeout); body != "hello-from-pod\n" {
			t.Errorf("GET through the forward: %q", body)
		}
		if err := f.Stop(cliTimeout); err != nil {
			t.Errorf("port-forward after SIGINT: %v, want exit code 0", err)
		}
	})
}

// TestPortForwardReachesNoHostPort: a port-forward through a pod never
// reaches a service of the host (a listener the test starts on
// 127.0.0.1, outside any pod; on the process runtime the pod shares the
// host's network), while the pod's own listener still answers through
// the same port-forward.
func TestPortForwardReachesNoHostPort(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		if rt.IsCRI() && !slices.Contains(rt.Args, "--cri-pod-network") {
			// Its sandbox is on the host's network: the host's ports are
			// the pod's, as for a kubelet's hostNetwork pod.
			t.Skip("the CRI runtime's pods share the host's network without --cri-pod-network")
		}
		var hits atomic.Int64
		host := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			hits.Add(1)
			_, _ = io.WriteString(w, "host-only\n")
		}))
		defer host.Close()
		hostPort := host.Listener.Addr().(*net.TCPAddr).Port
		if body := bintest.GetPage(t, host.URL, lineTimeout); body != "host-only\n" {
			t.Fatalf("GET the host's service directly: %q", body)
		}
		hits.Store(0)

		remote := freePort(t)
		a, _ := startExecPod(t, rt, true, remote)
		toHost, toPod := freePort(t), freePort(t)
		// The host's port first: once the pod's answers, both listen.
		f := bintest.StartForward(t, a.podwardCmd("port-forward", "shell",
			fmt.Sprintf("%d:%d", toHost, hostPort), fmt.Sprintf("%d:web", toPod)), lineTimeout)
		if body := bintest.GetPage(t, fmt.Sprintf("http://127.0.0.1:%d/", toPod), lineTimeout); body != "hello-from-pod\n" {
			t.Errorf("GET the pod's port through the forward: %q", body)
		}
		client := &http.Client{Timeout: lineTimeout}
		if resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/", toHost)); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			t.Errorf("GET the host's port %d through the pod: %s %q, want the connection refused", hostPort, resp.Status, b)
		}
		if n := hits.Load(); n != 0 {
			t.Errorf("the host's service got %d requests through the pod", n)
		}
		_ = f.Stop(cliTimeout)
	})
}

// TestCp: `podward cp` copies a directory into a container (into the
// directory named, as kubectl cp) and back out, through tar over exec.
func TestCp(t *testing.T) {
	eachRuntime(t, func(t *testing.T, rt runtimeEnv) {
		a, dir := startExecPod(t, rt, false, 1)
		src := filepath.Join(t.TempDir(), "tree")
		mkdirs(t, filepath.Join(src, "sub"))
		for name, text := range map[string]string{"a.txt": "one\n", "sub/b.txt": "two\n"} {
			if err := os.WriteFile(filepath.Join(src, name), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data := dir + "/data"
		if _, errOut, code := a.runPodward(t, "", "cp", src, "shell:"+data, "-c", "app"); code != 0 {
			t.Fatalf("cp in: exit code %d, stderr %q", code, errOut)
		}
		out, errOut, code := a.runPodward(t, "", "exec", "shell", "-c", "app", "--", "cat", data+"/tree/a.txt", data+"/tree/sub/b.txt")
		if out != "one\ntwo\n" || code != 0 {
			t.Errorf("the files copied in: %q, exit code %d, stderr %q", out, code, errOut)
		}
		back := filepath.Join(t.TempDir(), "back")
		if _, errOut, code := a.runPodward(t, "", "cp", "shell:"+data, back, "-c", "app"); code != 0 {
			t.Fatalf("cp out: exit code %d, stderr %q", code, errOut)
		}
		for name, want := range map[string]string{"f": "made-by-app\n", "tree/a.txt": "one\n", "tree/sub/b.txt": "two\n"} {
			if b, err := os.ReadFile(filepath.Join(back, name)); err != nil || string(b) != want {
				t.Errorf("copied out %s: %q, %v; want %q", name, b, err, want)
			}
		}
	})
}
