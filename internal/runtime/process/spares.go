package process

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"

	"github.com/podward/podward/internal/runtime/process/shim"
)

// DefaultSpareShims is how many spare shims an agent keeps ready
// (Config.SpareShims): enough for a pod of a sidecar and two regular
// containers to start without waiting for a shim's exec.
const DefaultSpareShims = 3

// isSpare: this process was started as a spare shim (shim.SpareEnv) and
// is not one, since its main does not turn it into one: it must not start
// spares of its own, which would be the same again.
var isSpare = os.Getenv(shim.SpareEnv) != ""

// spareShims keeps up to want spare shims started ahead of the containers
// they will hold (shim.Spare): a start takes one, and one more is started
// in the background, off the start's path. The first start fills it: a
// process that never starts a container never starts a spare (this binary
// re-executed can only be a shim where MaybeRunInit is called first, as a
// start needs), and a spare never starts spares itself, whatever binary it
// is. Its methods are safe for concurrent use; no lock is held across a
// fork.
type spareShims struct {
	want   int
	marker string // in the spares' command lines: the runtime's root
	bin    string // the shim binary (Runtime.shimBinary)
	log    *slog.Logger

	mu      sync.Mutex
	ready   []*shim.Spare
	filling bool
	closed  bool
	fills   sync.WaitGroup
}

// startShim starts the shim of the instance directory dir on a spare when
// one is ready (and starts another in its place), else as shim.Start does.
func (r *Runtime) startShim(ctx context.Context, dir string) (*shim.Proc, shim.Started, error) {
	s := &r.spares
	for {
		spare := s.take()
		if spare == nil {
			return shim.Start(ctx, r.shimBinary, dir)
		}
		p, started, err := shim.StartOn(ctx, dir, spare)
		if !errors.Is(err, shim.ErrSpareGone) {
			return p, started, err
		}
		s.log.Warn("a spare shim died before it was used", "pid", spare.Pid())
	}
}

// take returns a ready spare, or nil, and starts filling up again.
func (s *spareShims) take() *shim.Spare {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.want <= 0 || s.closed || isSpare {
		return nil
	}
	var spare *shim.Spare
	if len(s.ready) > 0 {
		spare = s.ready[0]
		s.ready = s.ready[1:]
	}
	s.fillLocked()
	return spare
}

// fillLocked starts the goroutine that starts spares until want are
// ready, unless it runs. s.mu must be held.
func (s *spareShims) fillLocked() {
	if s.filling || s.closed || len(s.ready) >= s.want {
		return
	}
	s.filling = true
	s.fills.Add(1)
	go s.fill()
}

func (s *spareShims) fill() {
	defer s.fills.Done()
	for {
		s.mu.Lock()
		if s.closed || len(s.ready) >= s.want {
			s.filling = false
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		spare, err := shim.StartSpare(s.bin, s.marker)
		s.mu.Lock()
		if err != nil || s.closed {
			s.filling = false
			s.mu.Unlock()
			if err != nil {
				// The next take tries again.
				s.log.Error("start a spare shim", "err", err)
			} else {
				spare.Close()
			}
			return
		}
		s.ready = append(s.ready, spare)
		s.mu.Unlock()
	}
}

// close ends the spares: those ready exit, and no more are started.
func (s *spareShims) close() {
	s.mu.Lock()
	s.closed = true
	ready := s.ready
	s.ready = nil
	s.mu.Unlock()
	s.fills.Wait()
	for _, spare := range ready {
		spare.Close()
	}
}
