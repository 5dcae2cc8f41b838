package bench

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// profileChunk is the length of each CPU profile a phase is cut into: the
// agent's pprof serves a CPU profile of a length given ahead, and a phase
// (an apply, a delete of all) lasts as long as it lasts. `go tool pprof`
// merges the chunks of a phase given together.
const profileChunk = 5 * time.Second

// profiler fetches the agent's pprof profiles into a directory (the agent
// runs with --pprof when Options.ProfileDir is set). A nil profiler does
// nothing, so that the scenarios need not check.
type profiler struct {
	dir string
	hc  *http.Client
}

func newProfiler(dir, socket string) (*profiler, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("profile directory: %w", err)
	}
	return &profiler{dir: dir, hc: &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}}}, nil
}

// fetch writes the agent's path (a pprof URL path) to the file name.
func (p *profiler) fetch(ctx context.Context, path, name string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://podward"+path, nil)
	if err != nil {
		return err
	}
	resp, err := p.hc.Do(req)
	if err != nil {
		return fmt.Errorf("profile %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("profile %s: %s (is the agent serving --pprof?)", path, resp.Status)
	}
	f, err := os.Create(filepath.Join(p.dir, name))
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("profile %s: %w", path, err)
	}
	return f.Close()
}

// snapshot writes the heap profile, the same as text (with the Go
// runtime's MemStats at its end: the stacks, the heap's spans, what was
// returned to the OS) and the goroutines (grouped by stack, with counts) as
// prefix-heap.pprof, prefix-heap.txt and prefix-goroutines.txt.
func (p *profiler) snapshot(ctx context.Context, prefix string) error {
	if p == nil {
		return nil
	}
	if err := p.fetch(ctx, "/debug/pprof/heap?gc=1", prefix+"-heap.pprof"); err != nil {
		return err
	}
	if err := p.fetch(ctx, "/debug/pprof/heap?debug=1", prefix+"-heap.txt"); err != nil {
		return err
	}
	return p.fetch(ctx, "/debug/pprof/goroutine?debug=1", prefix+"-goroutines.txt")
}

// cpu starts CPU profiles of profileChunk, one after another, written as
// prefix-cpu-NNN.pprof, until the returned stop is called; stop waits for
// the chunk under way and returns the error that ended the chunks, if any.
func (p *profiler) cpu(ctx context.Context, prefix string) (stop func() error) {
	if p == nil {
		return func() error { return nil }
	}
	done := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				result <- nil
				return
			default:
			}
			path := fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(profileChunk/time.Second))
			if err := p.fetch(ctx, path, fmt.Sprintf("%s-cpu-%03d.pprof", prefix, i)); err != nil {
				// No more chunks: the next would fail the same way.
				<-done
				result <- err
				return
			}
		}
	}()
	return func() error {
		close(done)
		return <-result
	}
}
