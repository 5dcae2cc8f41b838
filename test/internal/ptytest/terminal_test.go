package ptytest

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestTerminal drives a shell on a pty: its terminal has the size asked
// for, sees a resize, reads what is typed, and its exit code comes back.
func TestTerminal(t *testing.T) {
	cmd := exec.Command("/bin/sh")
	cmd.Env = []string{"TERM=dumb", "PS1=$ "}
	tm := Start(t, cmd, 30, 90, 20*time.Second)
	tm.Type("echo SIZE $(stty size) E''ND\r")
	if got := tm.Expect("END"); !strings.Contains(got, "SIZE 30 90 END") {
		t.Errorf("the terminal showed %q, want its size 30 90", got)
	}
	tm.Resize(40, 100)
	tm.TypeUntil("echo SIZE $(stty size) E''ND\r", "END", "SIZE 40 100 END")
	tm.Type("exit 3\r")
	var ee *exec.ExitError
	if err := tm.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("sh after exit 3: %v", err)
	}
	tm.Leave()
	tm.Leave()
}
