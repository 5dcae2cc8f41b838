package ptytest

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/creack/pty"
)

// Terminal is a command running on a pty: what it writes to the terminal
// is collected, and Expect waits for it from a cursor that each match
// moves on. Its methods fail the test they were started for (t.Fatalf),
// so they are called from that test's goroutine only.
type Terminal struct {
	t      *testing.T
	cmd    *exec.Cmd
	pty    *os.File
	within time.Duration

	out    output
	copied chan struct{}
	// done is closed once the command was waited for; err is then
	// cmd.Wait's.
	done chan struct{}
	err  error
	// at is where the next Expect looks from.
	at int
}

// Start starts cmd on a new pty of rows x cols (its stdin, stdout and
// stderr, and its controlling terminal): each wait of the Terminal lasts
// at most within. A cleanup of t kills the command if it still runs (as a
// closed terminal window does) and closes the pty.
func Start(t *testing.T, cmd *exec.Cmd, rows, cols uint16, within time.Duration) *Terminal {
	t.Helper()
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 5 * time.Second
	}
	f, err := pty.StartWithSize(cmd, &pty.Winsize{Rows: rows, Cols: cols})
	if err != nil {
		t.Fatalf("start %s on a pty: %v", strings.Join(cmd.Args, " "), err)
	}
	tm := &Terminal{t: t, cmd: cmd, pty: f, within: within, copied: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(tm.copied)
		// The read ends with EIO once no process holds the slave end,
		// or when Leave closes the master.
		_, _ = io.Copy(&tm.out, f)
	}()
	go func() {
		tm.err = cmd.Wait()
		close(tm.done)
	}()
	t.Cleanup(tm.Leave)
	return tm
}

// Type writes s to the terminal, as typed keys: a line ends with "\r".
// A command that has gone no longer reads it; that shows in what the
// test then expects.
func (tm *Terminal) Type(s string) {
	_, _ = io.WriteString(tm.pty, s)
}

// Expect waits until the terminal shows s after the cursor, moves the
// cursor past it and returns what the terminal showed from the cursor's
// old place up to the end of s. It fails the test if s does not show in
// time. A marker split by empty quotes in what is typed keeps the
// terminal's echo of the typed line from matching it: Expect("AB") after
//
//	echo A''B
func (tm *Terminal) Expect(s string) string {
	tm.t.Helper()
	from := tm.at
	text, ok := tm.out.wait(from, s, tm.within)
	if !ok {
		tm.t.Fatalf("%s: no %q on the terminal within %v; after what was expected before, it shows:\n%q", tm.name(), s, tm.within, text[from:])
	}
	tm.at = from + strings.Index(text[from:], s) + len(s)
	return text[from:tm.at]
}

// TypeUntil types line again and again, each time waiting for end (a
// marker the line prints last, split in line so that the echo of the line
// does not match it), until what it printed contains want: for what
// changes asynchronously, as a new terminal size reaching the container's
// pty. It fails the test if want does not show in time.
func (tm *Terminal) TypeUntil(line, end, want string) {
	tm.t.Helper()
	deadline := time.Now().Add(tm.within)
	for {
		tm.Type(line)
		seen := tm.Expect(end)
		if strings.Contains(seen, want) {
			return
		}
		if time.Now().After(deadline) {
			tm.t.Fatalf("%s: typing %q never showed %q within %v; last %q", tm.name(), line, want, tm.within, seen)
		}
	}
}

// Resize sets the terminal's size, as resizing its window does: the
// command gets a SIGWINCH.
func (tm *Terminal) Resize(rows, cols uint16) {
	tm.t.Helper()
	if err := pty.Setsize(tm.pty, &pty.Winsize{Rows: rows, Cols: cols}); err != nil {
		tm.t.Fatalf("%s: resize the terminal to %dx%d: %v", tm.name(), rows, cols, err)
	}
}

// Wait waits for the command to end on its own, and for the terminal to
// have shown all it wrote (Output has it all then), and returns cmd.Wait's
// error (an *exec.ExitError for a non-zero exit code). It fails the test
// if the command still runs after within, or a process it left still
// holds the terminal.
func (tm *Terminal) Wait() error {
	tm.t.Helper()
	timer := time.NewTimer(tm.within)
	defer timer.Stop()
	for _, ch := range []chan struct{}{tm.done, tm.copied} {
		select {
		case <-ch:
		case <-timer.C:
			tm.Leave()
			tm.t.Fatalf("%s did not end within %v, or left the terminal open; it shows:\n%q", tm.name(), tm.within, tm.Output())
		}
	}
	return tm.err
}

// Leave ends the session as closing the terminal window does: it kills the
// command if it still runs, waits for it and closes the pty. It is
// idempotent.
func (tm *Terminal) Leave() {
	_ = tm.cmd.Process.Kill()
	<-tm.done
	_ = tm.pty.Close()
	<-tm.copied
}

// Output is everything the terminal showed so far.
func (tm *Terminal) Output() string { return tm.out.String() }

func (tm *Terminal) name() string { return strings.Join(tm.cmd.Args, " ") }

// output collects what the pty's master end gives.
type output struct {
	mu sync.Mutex
	b  bytes.Buffer
	// changed is closed at the next Write; nil while no one waits.
	changed chan struct{}
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.Write(b)
	if o.changed != nil {
		close(o.changed)
		o.changed = nil
	}
	return len(b), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// wait waits at most within until the output has s after from; it returns
// the output then and whether it has.
func (o *output) wait(from int, s string, within time.Duration) (string, bool) {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		o.mu.Lock()
		text := o.b.String()
		if strings.Contains(text[from:], s) {
			o.mu.Unlock()
			return text, true
		}
		if o.changed == nil {
			o.changed = make(chan struct{})
		}
		changed := o.changed
		o.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return text, false
		}
	}
}
