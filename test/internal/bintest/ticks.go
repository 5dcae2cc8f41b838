package bintest

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// TickerScript is a bash script for a container whose output an attach
// follows: every 100 ms it prints "out-N TIME" on stdout, and every tenth
// time "err-N TIME" on stderr, N counting from 1 and TIME when it was
// printed ($EPOCHREALTIME, seconds); SIGTERM ends it with exit code 0.
const TickerScript = `trap 'exit 0' TERM; for ((i = 1; ; i++)); do echo out-$i $EPOCHREALTIME; if ((i % 10 == 0)); then echo err-$i $EPOCHREALTIME >&2; fi; sleep 0.1; done`

// Ticks is an output (a client's stdout or stderr) that notes when each
// of its lines arrived, to check that a stream of TickerScript's lines
// came as they were printed. It is safe for concurrent use.
type Ticks struct {
	mu    sync.Mutex
	text  strings.Builder
	lines []tick
	part  []byte // the line being written, without its end
	// changed is closed at the next Write; nil while no one waits.
	changed chan struct{}
}

type tick struct {
	line string
	at   time.Time
}

func (k *Ticks) Write(p []byte) (int, error) {
	now := time.Now()
	k.mu.Lock()
	defer k.mu.Unlock()
	k.text.Write(p)
	rest := append(k.part, p...)
	for {
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		k.lines = append(k.lines, tick{line: string(rest[:i]), at: now})
		rest = rest[i+1:]
	}
	k.part = append([]byte(nil), rest...)
	if k.changed != nil {
		close(k.changed)
		k.changed = nil
	}
	return len(p), nil
}

// String is everything written so far.
func (k *Ticks) String() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.text.String()
}

// Wait waits at most within until n lines starting with prefix arrived,
// and says whether they did.
func (k *Ticks) Wait(prefix string, n int, within time.Duration) bool {
	timer := time.NewTimer(within)
	defer timer.Stop()
	for {
		k.mu.Lock()
		count := 0
		for _, l := range k.lines {
			if strings.HasPrefix(l.line, prefix) {
				count++
			}
		}
		if count >= n {
			k.mu.Unlock()
			return true
		}
		if k.changed == nil {
			k.changed = make(chan struct{})
		}
		changed := k.changed
		k.mu.Unlock()
		select {
		case <-changed:
		case <-timer.C:
			return false
		}
	}
}

// Check checks the lines that start with prefix ("PREFIX-N TIME", as
// TickerScript prints them; prefix is "out-" or "err-"): the first one's N
// is above after (what was printed before the stream began is not
// replayed), each next one's N is the last's plus step (none lost, none
// twice, in order), and each arrived at most lag after it was printed (a
// stream that buffers its lines delivers them late: a kilobyte of
// TickerScript's takes some ten seconds to print). There must be at least
// one such line.
func (k *Ticks) Check(prefix string, after, step int, lag time.Duration) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	var errs []error
	last := 0
	for _, l := range k.lines {
		var n int
		var printed float64
		if _, err := fmt.Sscanf(l.line, prefix+"%d %f", &n, &printed); err != nil {
			continue
		}
		switch {
		case last == 0 && n <= after:
			errs = append(errs, fmt.Errorf("%q was printed before the stream began: replayed", l.line))
		case last != 0 && n != last+step:
			errs = append(errs, fmt.Errorf("%q after %s%d, want %s%d", l.line, prefix, last, prefix, last+step))
		}
		if d := l.at.Sub(time.Unix(0, int64(printed*1e9))); d > lag {
			errs = append(errs, fmt.Errorf("%q arrived %v after it was printed", l.line, d.Round(time.Millisecond)))
		}
		last = n
	}
	if last == 0 {
		errs = append(errs, fmt.Errorf("no %s line", prefix))
	}
	return errors.Join(errs...)
}

// FollowTicks runs cmd, a client that follows the output of a
// TickerScript container (an attach without stdin), until the test ends,
// and checks that it streams: 30 lines on stdout and 2 on stderr within
// wait, each as Check has it with lag, and the client still running. It
// returns what cmd wrote on stderr so far, for the caller's own checks.
func FollowTicks(t *testing.T, what string, cmd *exec.Cmd, wait, lag time.Duration) (stderr string) {
	t.Helper()
	out, errs := &Ticks{}, &Ticks{}
	cmd.Stdout, cmd.Stderr = out, errs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	const lines = 30
	if !out.Wait("out-", lines, wait) || !errs.Wait("err-", 2, wait) {
		t.Fatalf("%s: stdout %q, stderr %q; want %d lines and 2", what, out.String(), errs.String(), lines)
	}
	t.Logf("%s: %d lines on stdout, stderr %q", what, strings.Count(out.String(), "\n"), errs.String())
	if err := out.Check("out-", 3, 1, lag); err != nil {
		t.Errorf("%s's stdout: %v", what, err)
	}
	if err := errs.Check("err-", 3, 10, lag); err != nil {
		t.Errorf("%s's stderr: %v", what, err)
	}
	select {
	case err := <-done:
		done <- err
		t.Errorf("%s ended while its container runs: %v", what, err)
	default:
	}
	return errs.String()
}
