package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/podward/podward/internal/client"
)

// readyLine is the line `podward serve` prints once it serves its API.
const readyLine = "podward: agent serving on "

// agentStartTimeout bounds the wait for the agent to serve.
const agentStartTimeout = 30 * time.Second

// agent is the `podward serve` the bench started: its own root, socket and
// log, under the bench's directory.
type agent struct {
	cmd    *exec.Cmd
	pid    int
	root   string
	socket string
	log    string
	client *client.Client
	done   chan struct{} // closed once the process exited
}

// startAgent starts `bin serve` on a root and socket of dir, with args
// added, and returns once it serves (or fails, with its log's tail).
func startAgent(ctx context.Context, bin, dir string, args []string) (*agent, error) {
	a := &agent{
		root:   filepath.Join(dir, "root"),
		socket: filepath.Join(dir, "agent.sock"),
		log:    filepath.Join(dir, "agent.log"),
		done:   make(chan struct{}),
	}
	logf, err := os.Create(a.log)
	if err != nil {
		return nil, fmt.Errorf("agent log: %w", err)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		logf.Close()
		return nil, err
	}
	a.cmd = exec.Command(bin, append([]string{"serve", "--root", a.root, "--socket", a.socket}, args...)...)
	a.cmd.Stdout, a.cmd.Stderr = pw, pw
	// Its own process group: a Ctrl-C of the bench reaches the bench,
	// which stops the agent in order.
	a.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := a.cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		logf.Close()
		return nil, fmt.Errorf("start %s serve: %w", bin, err)
	}
	pw.Close()
	a.pid = a.cmd.Process.Pid
	ready := make(chan struct{})
	go func() {
		defer logf.Close()
		defer pr.Close()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		seen := false
		for sc.Scan() {
			fmt.Fprintln(logf, sc.Text())
			if !seen && strings.HasPrefix(sc.Text(), readyLine) {
				seen = true
				close(ready)
			}
		}
		// Whatever is left (a line too long) still goes to the log.
		_, _ = io.Copy(logf, pr)
	}()
	go func() {
		_ = a.cmd.Wait()
		close(a.done)
	}()
	timer := time.NewTimer(agentStartTimeout)
	defer timer.Stop()
	select {
	case <-ready:
	case <-a.done:
		return nil, fmt.Errorf("podward serve exited before it served: %s", a.logTail())
	case <-timer.C:
		a.kill()
		return nil, fmt.Errorf("podward serve did not serve within %v: %s", agentStartTimeout, a.logTail())
	case <-ctx.Done():
		a.kill()
		return nil, ctx.Err()
	}
	a.client = client.New(a.socket)
	return a, nil
}

// stop ends the agent with SIGTERM, as systemd would; its containers
// outlive it, so the bench deletes its pods first.
func (a *agent) stop(within time.Duration) error {
	a.client.Close()
	_ = a.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case <-a.done:
		return nil
	case <-timer.C:
		a.kill()
		return fmt.Errorf("the agent did not stop within %v of SIGTERM: killed", within)
	}
}

func (a *agent) kill() {
	_ = a.cmd.Process.Kill()
	<-a.done
}

// logTail is the end of the agent's log, for an error message.
func (a *agent) logTail() string {
	b, _ := os.ReadFile(a.log)
	const keep = 2000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return fmt.Sprintf("its log (%s) ends:\n%s", a.log, b)
}

// Goroutine counts as the agent may serve them: the Prometheus Go
// collector's gauge on /metrics, or the goroutine profile of pprof.
var (
	goGoroutines   = regexp.MustCompile(`(?m)^go_goroutines (\d+)`)
	pprofGoroutine = regexp.MustCompile(`^goroutine profile: total (\d+)`)
)

// goroutines asks the agent how many goroutines it runs, through /metrics
// or /debug/pprof when it serves either on its socket; ok is false when it
// serves neither (the count is not in /proc).
func (a *agent) goroutines(ctx context.Context) (n int, ok bool) {
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", a.socket)
		},
	}, Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	for _, try := range []struct {
		path string
		re   *regexp.Regexp
	}{{"/metrics", goGoroutines}, {"/debug/pprof/goroutine?debug=1", pprofGoroutine}} {
		if n, ok := scrape(ctx, hc, try.path, try.re); ok {
			return n, true
		}
	}
	return 0, false
}

func scrape(ctx context.Context, hc *http.Client, path string, re *regexp.Regexp) (int, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://podward"+path, nil)
	if err != nil {
		return 0, false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return 0, false
	}
	m := re.FindSubmatch(body)
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(string(m[1]))
	return n, err == nil
}

// errAgentGone is returned by waits once the agent's watch ended.
var errAgentGone = errors.New("the agent's watch ended (did the agent exit?)")
