package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"text/template"
	"time"

	"github.com/podward/podward/test/internal/bintest"
)

// podwardBin is the binary built once by TestMain.
var podwardBin string

// probeServerBin is test/internal/probeserver, built by TestMain next to
// podward: the HTTP server that the probe tests' containers run.
var probeServerBin string

func TestMain(m *testing.M) {
	os.Exit(bintest.Main(m, "e2e", &podwardBin,
		bintest.Program{Pkg: "github.com/podward/podward/test/internal/probeserver", Bin: &probeServerBin}))
}

// Deadlines. They only bound waits on conditions: a passing test never
// waits for one to expire.
const (
	// lineTimeout bounds the wait for one expected output line.
	lineTimeout = 15 * time.Second
	// exitTimeout bounds the wait for podward to exit once it should.
	exitTimeout = 30 * time.Second
)

func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root: pods with volumeMounts run in a private mount namespace")
	}
}

// line is one line of podward's stdout and when the test read it.
type line struct {
	text string
	at   time.Time
}

// result is how a podward run ended.
type result struct {
	code   int // exit code; -1 if killed by a signal
	stdout string
	stderr string
	lines  []line
	exited time.Time
}

// podward is one running `podward run`. Its stdout is read line by line as
// it comes; stderr is kept whole for the end.
type podward struct {
	cmd     *exec.Cmd
	started time.Time
	stderr  bytes.Buffer // written by exec's copier; read only after done

	mu      sync.Mutex
	lines   []line
	changed chan struct{} // closed and replaced on every new line and at exit

	done chan struct{} // closed once the process exited and stdout is read
	res  result        // set before done is closed
}

// startPodward starts `podward run --color never ARGS...`. The test's
// cleanup makes sure the process is gone: interrupt, interrupt again (kill
// with grace period 0), then SIGKILL.
func startPodward(t *testing.T, args ...string) *podward {
	t.Helper()
	return startPodwardEnv(t, nil, args...)
}

// startPodwardEnv is startPodward with env added to podward's environment.
func startPodwardEnv(t *testing.T, env []string, args ...string) *podward {
	t.Helper()
	p := &podward{changed: make(chan struct{}), done: make(chan struct{})}
	p.cmd = exec.Command(podwardBin, append([]string{"run", "--color", "never"}, args...)...)
	if env != nil {
		p.cmd.Env = append(os.Environ(), env...)
	}
	pr, pw := io.Pipe()
	p.cmd.Stdout = pw
	p.cmd.Stderr = &p.stderr
	// A container's leftover that held podward's stdout must not hang Wait.
	p.cmd.WaitDelay = 5 * time.Second
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start podward: %v", err)
	}
	p.started = time.Now()
	t.Logf("started podward %s (pid %d)", strings.Join(p.cmd.Args[1:], " "), p.cmd.Process.Pid)

	read := make(chan struct{})
	go func() {
		defer close(read)
		bintest.ScanLines(pr, io.Discard, func(text string) {
			p.add(line{text: text, at: time.Now()})
		})
	}()
	go func() {
		err := p.cmd.Wait()
		exited := time.Now()
		pw.Close()
		<-read
		code := 0
		var ee *exec.ExitError
		switch {
		case errors.As(err, &ee):
			code = ee.ExitCode()
		case err != nil:
			code = -1
		}
		p.mu.Lock()
		p.res = result{code: code, stderr: p.stderr.String(), lines: p.lines, exited: exited}
		p.res.stdout = joinLines(p.lines)
		close(p.changed)
		p.changed = make(chan struct{})
		p.mu.Unlock()
		close(p.done)
	}()

	t.Cleanup(func() { p.stop(t) })
	return p
}

func (p *podward) add(l line) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lines = append(p.lines, l)
	close(p.changed)
	p.changed = make(chan struct{})
}

// stop ends a podward that is still running, as a user would: Ctrl-C,
// Ctrl-C again, and only then SIGKILL (which would leave its containers
// behind).
func (p *podward) stop(t *testing.T) {
	for _, sig := range []os.Signal{os.Interrupt, os.Interrupt, os.Kill} {
		select {
		case <-p.done:
			return
		default:
		}
		_ = p.cmd.Process.Signal(sig)
		timer := time.NewTimer(10 * time.Second)
		select {
		case <-p.done:
			timer.Stop()
			t.Logf("podward stopped by the test's cleanup with %v; output:\n%s", sig, p.stdoutSoFar())
			return
		case <-timer.C:
		}
	}
	<-p.done
}

// signal sends sig to podward.
func (p *podward) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("send %v to podward: %v", sig, err)
	}
	t.Logf("sent %v", sig)
}

// signalAndWait sends sig to podward and waits for it to exit; it returns
// how podward ended and how long after sig it exited.
func (p *podward) signalAndWait(t *testing.T, sig syscall.Signal) (result, time.Duration) {
	t.Helper()
	p.signal(t, sig)
	sent := time.Now()
	r := p.wait(t, exitTimeout)
	return r, r.exited.Sub(sent)
}

// matcher selects lines: a *regexp.Regexp or a contains.
type matcher interface {
	MatchString(s string) bool
	String() string
}

// contains matches lines that contain it.
type contains string

func (c contains) MatchString(s string) bool { return strings.Contains(s, string(c)) }
func (c contains) String() string            { return fmt.Sprintf("%q", string(c)) }

// waitLine waits until podward printed a line that m matches (at any time
// since it started) and returns the first such line. The test fails if
// podward exits without printing it, or if it does not come within.
func (p *podward) waitLine(t *testing.T, m matcher, within time.Duration) line {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	seen := 0
	for {
		p.mu.Lock()
		lines, changed := p.lines, p.changed
		p.mu.Unlock()
		for ; seen < len(lines); seen++ {
			if m.MatchString(lines[seen].text) {
				return lines[seen]
			}
		}
		select {
		case <-p.done:
			p.mu.Lock()
			n := len(p.lines)
			p.mu.Unlock()
			if seen < n {
				continue // lines that came with the exit
			}
			t.Fatalf("podward exited (code %d) without printing a line matching %v; stdout:\n%s\nstderr:\n%s",
				p.res.code, m, p.res.stdout, p.res.stderr)
		case <-changed:
		case <-timer.C:
			t.Fatalf("no line matching %v within %v; stdout so far:\n%s", m, within, p.stdoutSoFar())
		}
	}
}

// wait waits for podward to exit and returns how it ended.
func (p *podward) wait(t *testing.T, within time.Duration) result {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.res
	case <-timer.C:
		t.Fatalf("podward did not exit within %v; stdout so far:\n%s", within, p.stdoutSoFar())
		return result{}
	}
}

// stdoutSoFar is the stdout read so far.
func (p *podward) stdoutSoFar() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return joinLines(p.lines)
}

func joinLines(lines []line) string {
	var b strings.Builder
	for _, l := range lines {
		b.WriteString(l.text)
		b.WriteByte('\n')
	}
	return b.String()
}

// run starts podward and waits for its exit.
func run(t *testing.T, args ...string) result {
	t.Helper()
	return startPodward(t, args...).wait(t, exitTimeout)
}

// runEnv is run with env added to podward's environment.
func runEnv(t *testing.T, env []string, args ...string) result {
	t.Helper()
	return startPodwardEnv(t, env, args...).wait(t, exitTimeout)
}

// index returns the index of the first line that m matches, or -1.
func (r result) index(m matcher) int {
	for i, l := range r.lines {
		if m.MatchString(l.text) {
			return i
		}
	}
	return -1
}

// count returns how many lines m matches.
func (r result) count(m matcher) int {
	n := 0
	for _, l := range r.lines {
		if m.MatchString(l.text) {
			n++
		}
	}
	return n
}

// mustFind returns the first line that m matches, failing the test if there
// is none.
func (r result) mustFind(t *testing.T, m matcher) line {
	t.Helper()
	i := r.index(m)
	if i < 0 {
		t.Fatalf("no line matching %v; stdout:\n%s\nstderr:\n%s", m, r.stdout, r.stderr)
	}
	return r.lines[i]
}

// assertBefore checks, for each pair, that a line matching the first comes
// before the first line matching the second, and that both exist.
func (r result) assertBefore(t *testing.T, pairs ...[2]matcher) {
	t.Helper()
	for _, pair := range pairs {
		a, b := r.index(pair[0]), r.index(pair[1])
		switch {
		case a < 0:
			t.Errorf("no line matching %v", pair[0])
		case b < 0:
			t.Errorf("no line matching %v", pair[1])
		case a > b:
			t.Errorf("line %d %q (matching %v) comes after line %d %q (matching %v)",
				a, r.lines[a].text, pair[0], b, r.lines[b].text, pair[1])
		}
	}
	if t.Failed() {
		t.Logf("stdout:\n%s", r.stdout)
	}
}

func (r result) assertCode(t *testing.T, want int) {
	t.Helper()
	if r.code != want {
		t.Fatalf("exit code %d, want %d; stdout:\n%s\nstderr:\n%s", r.code, want, r.stdout, r.stderr)
	}
}

// writeManifest renders text as a text/template with data into a file in
// dir and returns its path.
func writeManifest(t *testing.T, dir, text string, data any) string {
	t.Helper()
	tmpl, err := template.New("manifest").Option("missingkey=error").Parse(text)
	if err != nil {
		t.Fatalf("parse manifest template: %v", err)
	}
	var b bytes.Buffer
	if err := tmpl.Execute(&b, data); err != nil {
		t.Fatalf("render manifest: %v", err)
	}
	path := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// mkdirs creates the directories and fails the test on error.
func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// readPID reads a process ID that a container writes to a file, waiting up
// to lineTimeout for it (on inotify events in its directory): a container
// counts as started (and Ready, without a probe) once its process exists,
// which can be before its script wrote the file.
func readPID(t *testing.T, file string) int {
	t.Helper()
	var data []byte
	written := func() bool {
		var err error
		data, err = os.ReadFile(file)
		return err == nil && strings.HasSuffix(string(data), "\n")
	}
	ok, err := bintest.WaitInDir(filepath.Dir(file), written, lineTimeout)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("read the container's pid: %s holds %q after %v", file, data, lineTimeout)
	}
	var pid int
	if _, err := fmt.Sscan(string(data), &pid); err != nil || pid <= 0 {
		t.Fatalf("read the container's pid from %q: %v", data, err)
	}
	return pid
}

// fileLines returns the lines of a file a container wrote.
func fileLines(t *testing.T, file string) []string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("read %s: %v", file, err)
	}
	return strings.Split(strings.TrimRight(string(data), "\n"), "\n")
}

// re is regexp.MustCompile, short for tables.
func re(expr string) *regexp.Regexp { return regexp.MustCompile(expr) }

// fileExists reports whether path exists.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// output matches the line a container's output line is printed as:
// "NAME | text", the name padded to the longest in the manifest.
func output(container, text string) *regexp.Regexp {
	return regexp.MustCompile("^" + regexp.QuoteMeta(container) + ` *\| ` + regexp.QuoteMeta(text) + "$")
}
