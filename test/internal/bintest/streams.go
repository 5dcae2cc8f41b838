package bintest

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// AttachPod is the pod the attach tests of the agent and of the cluster
// node run: a bash on a terminal (stdin, tty) and a cat whose stdin is
// closed at the end of its first attach (stdinOnce). {{.Name}} is its
// name, {{.Bash}} the runtime's bash (Runtime.Bash).
const AttachPod = `
apiVersion: v1
kind: Pod
metadata:
  name: {{.Name}}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: sh
    image: bash
    command: ["{{.Bash}}", "--norc", "--noprofile"]
    env: [{name: TERM, value: dumb}]
    stdin: true
    tty: true
  - name: once
    image: bash
    command: ["{{.Bash}}", "-c", "cat; echo cat-done"]
    stdin: true
    stdinOnce: true
`

// Forward is a running port-forward command (podward's or kubectl's).
type Forward struct {
	// Local and Remote are the ports of its "Forwarding from
	// 127.0.0.1:LOCAL -> REMOTE" line.
	Local, Remote int

	cmd  *exec.Cmd
	done chan error
}

// StartForward starts cmd, a port-forward, and waits within for its
// "Forwarding from 127.0.0.1:LOCAL -> REMOTE" line; every line it prints
// is logged. The test's cleanup interrupts it if Stop did not.
func StartForward(t *testing.T, cmd *exec.Cmd, within time.Duration) *Forward {
	t.Helper()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = pw, pw
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		t.Fatal(err)
	}
	pw.Close()
	f := &Forward{cmd: cmd, done: make(chan error, 1)}
	go func() { f.done <- cmd.Wait() }()
	forwarding := make(chan [2]int, 1)
	read := make(chan struct{})
	t.Cleanup(func() {
		_ = f.Stop(within)
		// No line is logged once the test is over.
		pr.Close()
		<-read
	})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			t.Logf("%s: %s", cmd.Args[0], sc.Text())
			var ports [2]int
			if _, err := fmt.Sscanf(sc.Text(), "Forwarding from 127.0.0.1:%d -> %d", &ports[0], &ports[1]); err == nil {
				select {
				case forwarding <- ports:
				default:
				}
			}
		}
	}()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case ports := <-forwarding:
		f.Local, f.Remote = ports[0], ports[1]
	case err := <-f.done:
		f.done <- err
		t.Fatalf("%s exited before it forwarded: %v", cmd.Args[0], err)
	case <-timer.C:
		t.Fatalf("%s printed no Forwarding line within %v", cmd.Args[0], within)
	}
	return f
}

// Stop interrupts the port-forward, as ^C does, and returns how it
// exited (nil for exit code 0); it is killed if it did not end within.
// Stop may be called more than once.
func (f *Forward) Stop(within time.Duration) error {
	_ = f.cmd.Process.Signal(syscall.SIGINT)
	timer := time.NewTimer(within)
	defer timer.Stop()
	var err error
	select {
	case err = <-f.done:
	case <-timer.C:
		_ = f.cmd.Process.Kill()
		err = fmt.Errorf("%s did not end within %v of SIGINT: %w", f.cmd.Args[0], within, <-f.done)
	}
	f.done <- err
	return err
}

// GetPage GETs url until it answers 200 OK or within is over (a server in
// a pod may come up a little after the pod runs) and returns the body.
func GetPage(t *testing.T, url string, within time.Duration) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	deadline := time.Now().Add(within)
	for {
		resp, err := client.Get(url)
		if err == nil {
			b, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && rerr == nil {
				return string(b)
			}
			err = fmt.Errorf("%s: %q (%v)", resp.Status, b, rerr)
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
}
