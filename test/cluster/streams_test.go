package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/podward/podward/test/internal/bintest"
	"github.com/podward/podward/test/internal/ptytest"
)

// streamsPod runs app until deleted, serving {{.Dir}}/www over HTTP on the
// loopback's port {{.Port}} (the pod is on the host's network on both
// runtimes here); its container done exits at once and stays terminated.
const streamsPod = `
apiVersion: v1
kind: Pod
metadata:
  name: {{.Name}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: bash
    command: ["{{.Bash}}", "-c"]
    args: ["echo made-by-app > {{.Dir}}/data/f; mkdir -p {{.Dir}}/www; echo hello-from-pod > {{.Dir}}/www/index.html; exec busybox httpd -f -p 127.0.0.1:{{.Port}} -h {{.Dir}}/www"]
    env: [{name: GREETING, value: hello}]
    volumeMounts: [{name: data, mountPath: "{{.Dir}}/data"}]
  - name: done
    image: bash
    command: ["{{.Bash}}", "-c", "true"]
  volumes: [{name: data, emptyDir: {}}]
`

// kubectlCmd is `kubectl ARGS...` on the control plane, not started, for
// a test that drives it itself (on a terminal).
func (c *controlPlane) kubectlCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(c.env["KUBECTL"], append([]string{"--kubeconfig", c.env["KUBECONFIG"]}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// kubectlRun runs kubectl with stdin and returns its outputs and exit code.
func (c *controlPlane) kubectlRun(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.env["KUBECTL"], append([]string{"--kubeconfig", c.env["KUBECONFIG"]}, args...)...)
	cmd.WaitDelay = 5 * time.Second
	cmd.Stdin = strings.NewReader(stdin)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	if ctx.Err() != nil {
		t.Fatalf("kubectl %s did not end within %v; stderr: %s", strings.Join(args, " "), waitTimeout, errOut.String())
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

// TestKubectlStreams: kubectl exec, port-forward and cp (attach:
// TestKubectlAttach) against a podward
// node, through the real API server, which reaches the node's kubelet port
// (/exec, /portForward) as it reaches a kubelet's, on both runtimes: the
// exec's output, stdin and exit code (kubectl exits with the command's),
// the kubelet's refusal of a terminated container, a port-forward to the
// container's loopback, and a copy both ways.
func TestKubectlStreams(t *testing.T) {
	c := needControlPlane(t)
	bintest.EachRuntime(t, func(t *testing.T, rt bintest.Runtime) {
		n := startNode(t, c, nodeName(t, "n"), rt.Args...)
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "data"), 0o755); err != nil {
			t.Fatal(err)
		}
		pod := "streams-" + rt.Name
		port := freePort(t)
		manifest := strings.NewReplacer("{{.Name}}", pod, "{{.Bash}}", rt.Bash, "{{.Dir}}", dir, "{{.Port}}", fmt.Sprint(port)).Replace(streamsPod)
		n.apply(t, manifest)
		c.waitPod(t, "default", pod, "app running, done terminated", waitTimeout, func(p *v1.Pod) bool {
			return p != nil && len(p.Status.ContainerStatuses) == 2 &&
				p.Status.ContainerStatuses[0].State.Running != nil && p.Status.ContainerStatuses[1].State.Terminated != nil
		})

		out, errOut, code := c.kubectlRun(t, "", "exec", pod, "-c", "app", "--", rt.Bash, "-c", "echo $GREETING; cat "+dir+"/data/f; exit 3")
		t.Logf("kubectl exec %s -c app -- bash -c '...; exit 3': exit code %d, stdout %q, stderr %q", pod, code, out, errOut)
		if out != "hello\nmade-by-app\n" || code != 3 || !strings.Contains(errOut, "command terminated with exit code 3") {
			t.Errorf("kubectl exec: stdout %q, stderr %q, exit code %d; want the command's output and exit code 3", out, errOut, code)
		}
		out, errOut, code = c.kubectlRun(t, "some input\n", "exec", "-i", pod, "-c", "app", "--", "cat")
		t.Logf("kubectl exec -i %s -c app -- cat: exit code %d, stdout %q, stderr %q", pod, code, out, errOut)
		if out != "some input\n" || code != 0 {
			t.Errorf("kubectl exec -i cat: stdout %q, stderr %q, exit code %d", out, errOut, code)
		}
		_, errOut, code = c.kubectlRun(t, "", "exec", pod, "-c", "done", "--", "true")
		t.Logf("kubectl exec %s -c done -- true: exit code %d, stderr %q", pod, code, errOut)
		if code != 1 || !strings.Contains(errOut, `container not found ("done")`) {
			t.Errorf("kubectl exec in a terminated container: stderr %q, exit code %d", errOut, code)
		}

		kubectlExecTTY(t, c, pod, rt.Bash)
		if rt.Name == "process" {
			kubeletStreamsAuthorized(t, c, n, pod)
		}

		kubectlPortForward(t, c, pod, port)

		src := filepath.Join(t.TempDir(), "in.txt")
		if err := os.WriteFile(src, []byte("copied in\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out, errOut, code = c.kubectlRun(t, "", "cp", src, pod+":"+dir+"/data/in.txt", "-c", "app")
		t.Logf("kubectl cp in.txt %s:.../data/in.txt -c app: exit code %d, stdout %q, stderr %q", pod, code, out, errOut)
		if code != 0 {
			t.Errorf("kubectl cp in: exit code %d, stderr %q", code, errOut)
		}
		if out, _, _ := c.kubectlRun(t, "", "exec", pod, "-c", "app", "--", "cat", dir+"/data/in.txt"); out != "copied in\n" {
			t.Errorf("the file kubectl cp copied in: %q", out)
		}
		back := filepath.Join(t.TempDir(), "back")
		out, errOut, code = c.kubectlRun(t, "", "cp", pod+":"+dir+"/data", back, "-c", "app")
		t.Logf("kubectl cp %s:.../data back -c app: exit code %d, stdout %q, stderr %q", pod, code, out, errOut)
		for name, want := range map[string]string{"f": "made-by-app\n", "in.txt": "copied in\n"} {
			if b, err := os.ReadFile(filepath.Join(back, name)); err != nil || string(b) != want {
				t.Errorf("kubectl cp out: %s is %q, %v; want %q", name, b, err, want)
			}
		}
	})
}

// kubectlPortForward runs `kubectl port-forward POD :PORT`, GETs the page
// through it and interrupts it.
func kubectlPortForward(t *testing.T, c *controlPlane, pod string, port int) {
	t.Helper()
	cmd := exec.Command(c.env["KUBECTL"], "--kubeconfig", c.env["KUBECONFIG"], "port-forward", pod, fmt.Sprintf(":%d", port))
	f := bintest.StartForward(t, cmd, waitTimeout)
	if f.Remote != port {
		t.Errorf("kubectl forwards to port %d, want %d", f.Remote, port)
	}
	if body := bintest.GetPage(t, fmt.Sprintf("http://127.0.0.1:%d/", f.Local), waitTimeout); body != "hello-from-pod\n" {
		t.Errorf("GET through kubectl port-forward: %q", body)
	}
	_ = f.Stop(waitTimeout)
}

// kubeletStreamsAuthorized: the node's streaming paths are authorized as
// its log path is, as the kubelet's (pkg/kubelet/server/auth.go): nodes/proxy
// through a SubjectAccessReview. A user without it gets the kubelet's 403;
// one with it reaches the exec (here refused for want of an upgrade).
func kubeletStreamsAuthorized(t *testing.T, c *controlPlane, n *node, pod string) {
	t.Helper()
	ca := loadClusterCA(t, c)
	suffix := randomSuffix(t)
	reader, stranger := "podward-exec-reader-"+suffix, "podward-exec-stranger-"+suffix
	c.bindNodesRole(t, reader, "proxy")
	path := "/exec/default/" + pod + "/app?command=true&output=1"
	code, body := n.kubeletGet(t, path, ca.clientCert(t, stranger), "")
	if want := fmt.Sprintf("Forbidden (user=%s, verb=get, resource=nodes, subresource(s)=[proxy])\n", stranger); code != http.StatusForbidden || body != want {
		t.Errorf("GET %s as %s: %d %q, want 403 %q", path, stranger, code, body, want)
	}
	code, body = n.kubeletGet(t, path, ca.clientCert(t, reader), "")
	t.Logf("GET %s (no upgrade) as a user allowed nodes/proxy: %d %q", path, code, body)
	if code == http.StatusForbidden || code == http.StatusUnauthorized || code == http.StatusNotFound {
		t.Errorf("GET %s as %s: %d %q, want the exec reached", path, reader, code, body)
	}
}

// kubectlExecTTY runs `kubectl exec -it POD -- bash` on a real terminal
// (a pty of 40x100): the shell has a terminal of that size, sees it
// change to 50x120, and kubectl exits with its code.
func kubectlExecTTY(t *testing.T, c *controlPlane, pod, bash string) {
	t.Helper()
	cmd := c.kubectlCmd("exec", "-it", pod, "-c", "app", "--", bash, "--norc", "--noprofile")
	cmd.Env = append(cmd.Environ(), "TERM=dumb")
	term := ptytest.Start(t, cmd, 40, 100, waitTimeout)
	defer term.Leave()
	// The markers are split so that the echo of the typed line does not
	// match them.
	term.Type("tty >/dev/null && echo IS''TTY\r")
	term.Expect("ISTTY")
	// kubectl sends the first size on the resize stream too, which may
	// reach the container after the shell started: ask until it shows.
	term.TypeUntil("echo SIZE $(stty size 2>/dev/null)E''ND\r", "END", "SIZE 40 100END")
	term.Resize(50, 120)
	// The new size reaches the container's terminal asynchronously: ask
	// until it shows.
	term.TypeUntil("echo SIZE $(stty size) E''ND\r", "END", "SIZE 50 120 END")
	term.Type("exit 4\r")
	err := term.Wait()
	var ee *exec.ExitError
	t.Logf("kubectl exec -it %s -c app -- bash (stty size, a resize, exit 4): %v", pod, err)
	if !errors.As(err, &ee) || ee.ExitCode() != 4 {
		t.Errorf("kubectl exec -it: %v, want exit code 4", err)
	}
}
