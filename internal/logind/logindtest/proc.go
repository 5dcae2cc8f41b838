package logindtest

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The stand-in as a program (test/internal/login1standin) speaks a line
// protocol: it reads commands on stdin and writes events on stdout, one
// JSON Event a line.
//
//	command         answer
//	emit true|false PrepareForShutdown(true|false) is broadcast; no answer
//	drop N          the stand-in closes its copy of lock N's fd, then writes
//	                "released" once every copy is closed
//	held N          "held", Held: whether lock N is held now
//
// Unasked, it writes "ready" once it owns logind's name, "inhibit" for
// each lock Inhibit hands out (numbered from 1) and "error" when a command
// fails.

// EventKind is what an Event says.
type EventKind string

// The kinds of Event.
const (
	EventReady    EventKind = "ready"
	EventInhibit  EventKind = "inhibit"
	EventReleased EventKind = "released"
	EventHeld     EventKind = "held"
	EventError    EventKind = "error"
)

// Event is one line the program writes.
type Event struct {
	Kind EventKind `json:"kind"`
	// Lock numbers the lock of an inhibit, released or held event.
	Lock int `json:"lock,omitempty"`
	// Args and Sender are an inhibit's: Inhibit's arguments (what, who,
	// why, mode) and the caller's unique name.
	Args   []string `json:"args,omitempty"`
	Sender string   `json:"sender,omitempty"`
	// Held is a held event's answer.
	Held bool `json:"held,omitempty"`
	// Error is an error event's message.
	Error string `json:"error,omitempty"`
}

// Serve runs the protocol for s until commands end: it reads commands
// from commands and writes events to events. It returns the error reading
// the commands, if any.
func Serve(s *StandIn, commands io.Reader, events io.Writer) error {
	sv := &server{s: s, enc: json.NewEncoder(events)}
	stop := make(chan struct{})
	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		sv.relay(stop)
	}()
	defer func() {
		close(stop)
		<-relayed
	}()
	sv.write(Event{Kind: EventReady})
	sc := bufio.NewScanner(commands)
	for sc.Scan() {
		if err := sv.command(strings.TrimSpace(sc.Text())); err != nil {
			sv.write(Event{Kind: EventError, Error: fmt.Sprintf("%s: %v", sc.Text(), err)})
		}
	}
	return sc.Err()
}

// server is Serve's state: the locks handed out so far, numbered from 1,
// and the encoder of the events, under mu.
type server struct {
	s     *StandIn
	mu    sync.Mutex
	enc   *json.Encoder
	locks []*Lock
}

// write writes one event; an error writing is the test's end.
func (sv *server) write(e Event) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	_ = sv.enc.Encode(e)
}

// relay numbers and reports the locks Inhibit hands out, and drains the
// reloads, until stop is closed.
func (sv *server) relay(stop <-chan struct{}) {
	for {
		select {
		case l := <-sv.s.Inhibits:
			sv.mu.Lock()
			sv.locks = append(sv.locks, l)
			n := len(sv.locks)
			sv.mu.Unlock()
			sv.write(Event{Kind: EventInhibit, Lock: n, Args: l.Args, Sender: l.Sender})
		case <-sv.s.Reloads:
		case <-stop:
			return
		}
	}
}

// lock is the lock numbered arg.
func (sv *server) lock(arg string) (*Lock, int, error) {
	n, err := strconv.Atoi(arg)
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if err != nil || n < 1 || n > len(sv.locks) {
		return nil, 0, fmt.Errorf("no lock %q", arg)
	}
	return sv.locks[n-1], n, nil
}

// command carries one command out.
func (sv *server) command(line string) error {
	verb, arg, _ := strings.Cut(line, " ")
	switch verb {
	case "emit":
		active, err := strconv.ParseBool(arg)
		if err != nil {
			return err
		}
		return sv.s.Emit(active)
	case "drop":
		l, n, err := sv.lock(arg)
		if err == nil {
			err = l.Drop()
		}
		if err != nil {
			return err
		}
		go func() {
			// Until the lock is released, or Close ends the wait.
			if l.WaitReleased(0) == nil {
				sv.write(Event{Kind: EventReleased, Lock: n})
			}
		}()
		return nil
	case "held":
		l, n, err := sv.lock(arg)
		if err != nil {
			return err
		}
		held, err := l.Held()
		if err != nil {
			return err
		}
		sv.write(Event{Kind: EventHeld, Lock: n, Held: held})
		return nil
	default:
		return fmt.Errorf("unknown command %q", line)
	}
}

// Proc is the stand-in program run by a test, on a Bus, and the test's
// side of its protocol. The test's cleanup stops it.
type Proc struct {
	t        testing.TB
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	inhibits chan Event
	releases chan Event
	helds    chan Event
	done     chan struct{}
	stderr   syncBuffer
}

// StartProc runs the program bin (test/internal/login1standin, built by
// the suite) on b with InhibitDelayMaxUSec maxDelay, and waits until it
// owns logind's name.
func StartProc(t testing.TB, bin string, b *Bus, maxDelay time.Duration) *Proc {
	t.Helper()
	p := &Proc{t: t, inhibits: make(chan Event, 16), releases: make(chan Event, 16), helds: make(chan Event, 16), done: make(chan struct{})}
	p.cmd = exec.Command(bin, "-address", b.SystemBusAddress(), "-max-delay", maxDelay.String())
	p.cmd.Stderr = &p.stderr
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start the login1 stand-in: %v", err)
	}
	ready := make(chan struct{})
	go func() {
		defer close(p.done)
		dec := json.NewDecoder(out)
		for {
			var e Event
			if err := dec.Decode(&e); err != nil {
				_, _ = io.Copy(io.Discard, out)
				_ = p.cmd.Wait()
				return
			}
			switch e.Kind {
			case EventReady:
				close(ready)
			case EventInhibit:
				p.inhibits <- e
			case EventReleased:
				p.releases <- e
			case EventHeld:
				p.helds <- e
			case EventError:
				fmt.Fprintf(&p.stderr, "error event: %s\n", e.Error)
			}
		}
	}()
	t.Cleanup(func() {
		_ = p.stdin.Close() // the program ends with its commands
		select {
		case <-p.done:
		case <-time.After(WaitTimeout):
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("login1 stand-in's stderr:\n%s", p.stderr.String())
		}
	})
	select {
	case <-ready:
	case <-p.done:
		t.Fatalf("the login1 stand-in exited before it was ready:\n%s", p.stderr.String())
	case <-time.After(WaitTimeout):
		t.Fatalf("the login1 stand-in was not ready in time:\n%s", p.stderr.String())
	}
	return p
}

func (p *Proc) send(format string, args ...any) {
	p.t.Helper()
	if _, err := fmt.Fprintf(p.stdin, format+"\n", args...); err != nil {
		p.t.Fatalf("login1 stand-in: %v", err)
	}
}

// Emit makes the stand-in broadcast PrepareForShutdown(active).
func (p *Proc) Emit(active bool) { p.t.Helper(); p.send("emit %t", active) }

// Drop makes the stand-in close its copy of lock n (see Lock.Drop); a
// Released follows once the caller's copy is closed too.
func (p *Proc) Drop(n int) { p.t.Helper(); p.send("drop %d", n) }

// NextInhibit waits for the next lock Inhibit hands out.
func (p *Proc) NextInhibit(within time.Duration) Event {
	p.t.Helper()
	return p.wait(p.inhibits, "an Inhibit call", within)
}

// Held asks whether lock n is held now.
func (p *Proc) Held(n int) bool {
	p.t.Helper()
	p.send("held %d", n)
	e := p.wait(p.helds, fmt.Sprintf("the stand-in's answer about lock %d", n), WaitTimeout)
	if e.Lock != n {
		p.t.Fatalf("asked about lock %d, the stand-in answered about lock %d", n, e.Lock)
	}
	return e.Held
}

// WaitReleased waits until lock n (dropped) is released.
func (p *Proc) WaitReleased(n int, within time.Duration) {
	p.t.Helper()
	e := p.wait(p.releases, fmt.Sprintf("the release of lock %d", n), within)
	if e.Lock != n {
		p.t.Fatalf("lock %d was released, not lock %d", e.Lock, n)
	}
}

// Released says whether a release came, without waiting.
func (p *Proc) Released() (Event, bool) {
	select {
	case e := <-p.releases:
		return e, true
	default:
		return Event{}, false
	}
}

func (p *Proc) wait(ch <-chan Event, what string, within time.Duration) Event {
	p.t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case e := <-ch:
		return e
	case <-p.done:
		p.t.Fatalf("the login1 stand-in exited while the test waited for %s:\n%s", what, p.stderr.String())
	case <-timer.C:
		p.t.Fatalf("timed out after %v waiting for %s", within, what)
	}
	return Event{}
}

// Stderr is what the program wrote on stderr so far, and the error events.
func (p *Proc) Stderr() string { return p.stderr.String() }
