package staticpods

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
)

// Annotations set on every pod created from a manifest file.
const (
	// SourceAnnotation names the file a pod came from, as
	// "file:<absolute path>". It is how the Source knows its pods.
	SourceAnnotation = "podward.io/config-source"
	// ConfigSourceAnnotation is the kubelet's annotation for where a static
	// pod came from; podward sets it to ConfigSourceFile.
	ConfigSourceAnnotation = model.ConfigSourceAnnotation
	// ConfigSourceFile is the value of ConfigSourceAnnotation.
	ConfigSourceFile = "file"

	sourcePrefix = "file:"
)

// Defaults of the Source's timings.
const (
	// DefaultResyncPeriod is how often the whole directory is rescanned,
	// as the kubelet does, so that a missed inotify event heals.
	DefaultResyncPeriod = 20 * time.Second
	// DefaultSettleDelay is how long a file that was created, had its
	// attributes changed, or disappeared is left alone before it is read
	// (every further event about it, writes included, starts the delay
	// again): long enough for an editor that renames the old file away and
	// writes a new one, or for a writer that has not closed the file yet.
	// A file closed after writing, or renamed into place, is read at once.
	DefaultSettleDelay = 500 * time.Millisecond
)

const (
	// retryDelay is how soon a file is applied again when one of its pods
	// could not be recreated yet because the old one is still terminating.
	retryDelay = time.Second
	// maxManifestBytes bounds the size of a manifest file, as the CLI
	// bounds the manifests it reads.
	maxManifestBytes = model.MaxManifestBytes
)

// ErrStopped is returned by Sync once Run has returned.
var ErrStopped = errors.New("manifest source stopped")

// Applier is what the Source needs from the agent. ApplyStatic and
// DeletePod must not block on the pods' containers: they hand the work to
// the pods' workers and return.
type Applier interface {
	// ApplyStatic creates the pod, replaces the pod of the same
	// namespace/name when its spec changed (any change: the kubelet makes
	// a changed manifest's pod another pod), or does nothing. It owns pod
	// afterwards.
	ApplyStatic(pod *model.Pod) (*v1.Pod, agent.ApplyResult, error)
	// DeletePod asks for the graceful termination of namespace/name; a
	// nil grace keeps the pod's own terminationGracePeriodSeconds. A pod
	// that does not exist is an error matching agent.ErrNotFound.
	DeletePod(ns, name string, grace *int64) (*v1.Pod, error)
	// ListPods returns every pod of namespace ns ("" for all).
	ListPods(ns string) []*v1.Pod
}

// Admitter is an optional ability of an Applier: checking a pod the way
// ApplyStatic would (validation, runtime support) without creating it. With it
// a file is applied only when all of its pods are admitted; without it the
// Source checks model.Validate itself.
type Admitter interface {
	Admit(pod *model.Pod) error
}

// Reporter is told about a manifest file that cannot be applied (it does
// not decode, a pod is invalid or unsupported, a pod name is taken). It is
// called from Run's goroutine, once per distinct problem with the file's
// content, and must neither block nor call the Source.
type Reporter interface {
	ManifestError(file string, err error)
}

var (
	_ Applier  = (*agent.Agent)(nil)
	_ Admitter = (*agent.Agent)(nil)
)

// Option changes a Source's defaults.
type Option func(*Source)

// WithClock sets the clock of the resync ticker and of the settle delays.
func WithClock(c clock.WithTicker) Option { return func(s *Source) { s.clock = c } }

// WithResyncPeriod sets how often the whole directory is rescanned; zero or
// less keeps DefaultResyncPeriod.
func WithResyncPeriod(d time.Duration) Option { return func(s *Source) { s.period = d } }

// WithSettleDelay sets the settle delay (DefaultSettleDelay); zero or less
// reads every file as soon as an event names it.
func WithSettleDelay(d time.Duration) Option { return func(s *Source) { s.settle = d } }

// WithObjects lets the files hold ConfigMaps and Secrets beside their
// pods: apply is called for each before the file's pods are applied (an
// error rejects the file, its pods left as they are). The objects stay
// when their file goes, as those of `podward apply` do. Without it a file
// with an object is rejected.
func WithObjects(apply func(model.Object) error) Option {
	return func(s *Source) { s.applyObject = apply }
}

// Source keeps the pods of a manifest directory applied. Create it with
// New and start it with Run; Sync may be called from any goroutine.
type Source struct {
	dir      string
	applier  Applier
	reporter Reporter
	log      *slog.Logger
	clock    clock.WithTicker
	period   time.Duration // of the resync
	settle   time.Duration
	// applyObject applies a file's ConfigMaps and Secrets (WithObjects).
	applyObject func(model.Object) error

	started atomic.Bool
	syncReq chan chan error
	stopped chan struct{}

	// onDeferred, set by tests before Run, is called on Run's goroutine
	// whenever the processing of a file was put off, once the timer for
	// it is armed: a test may then move a fake clock.
	onDeferred func(path string)
	deferred   []string // for onDeferred

	// Everything below is owned by Run's goroutine.
	absDir  string
	files   map[string]*fileState // by absolute path
	pending map[string]time.Time  // files to process at the given time
	timerC  <-chan time.Time      // fires at timerAt, for pending
	timerAt time.Time
	w       *watcher // nil while the directory is not watched
}

// fileState is what the Source knows about one manifest file.
type fileState struct {
	// pods are the pods this file created that have not been deleted.
	pods map[podKey]struct{}
	// sum is the SHA-256 of the content last read; reported is the
	// problem reported about that content ("" when it was applied), so
	// that the same problem is reported once.
	sum      [32]byte
	reported string
}

// New returns a Source for the manifests of dir. A nil reporter only logs
// bad files; a nil log uses slog.Default().
func New(dir string, a Applier, r Reporter, log *slog.Logger, opts ...Option) *Source {
	if log == nil {
		log = slog.Default()
	}
	s := &Source{
		dir:      dir,
		applier:  a,
		reporter: r,
		log:      log,
		clock:    clock.RealClock{},
		period:   DefaultResyncPeriod,
		settle:   DefaultSettleDelay,
		syncReq:  make(chan chan error),
		stopped:  make(chan struct{}),
		files:    map[string]*fileState{},
		pending:  map[string]time.Time{},
	}
	for _, opt := range opts {
		opt(s)
	}
	if s.period <= 0 {
		s.period = DefaultResyncPeriod
	}
	return s
}

// Run creates the directory if it is missing (0755), watches it, applies
// every manifest in it and deletes the pods whose file is gone, then keeps
// the pods in step with the files until ctx is done. It returns nil then,
// after every goroutine it started has returned. ctx ending does not touch
// any pod. Run may be called once.
//
// The directory is rescanned every resync period, on Sync, and when its
// watch is lost (the directory was removed or moved: it is created again,
// and an empty directory means no pods). When inotify cannot be used, Run
// logs it and relies on the rescans.
func (s *Source) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("manifest source: Run called more than once")
	}
	defer close(s.stopped)

	abs, err := filepath.Abs(s.dir)
	if err != nil {
		return fmt.Errorf("manifest directory %q: %w", s.dir, err)
	}
	s.absDir = abs
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return fmt.Errorf("create manifest directory: %w", err)
	}

	ticker := s.clock.NewTicker(s.period)
	defer ticker.Stop()
	// Watch first, then scan: nothing written in between is missed.
	s.watch()
	defer s.unwatch()
	s.logSync(s.fullSync())

	for {
		s.runDue()
		s.armTimer()
		for _, path := range s.deferred {
			s.onDeferred(path)
		}
		s.deferred = s.deferred[:0]
		var events <-chan []fsEvent
		if s.w != nil {
			events = s.w.events
		}
		select {
		case <-ctx.Done():
			return nil
		case batch, ok := <-events:
			if !ok {
				s.rewatch()
				continue
			}
			s.handle(batch)
		case <-s.timerC:
			s.timerC = nil // runDue at the top of the loop does the work
		case <-ticker.C():
			s.logSync(s.resync())
		case reply := <-s.syncReq:
			reply <- s.resync()
		}
	}
}

// resync watches the directory again if its watch was lost, and rescans.
func (s *Source) resync() error {
	if s.w == nil {
		s.watch()
	}
	return s.fullSync()
}

// Sync rescans the directory now, as the periodic resync does, and returns
// once that is done: every file is applied again and the pods of vanished
// files are deleted. It returns the error of reading the directory (bad
// files are reported, not returned), ctx.Err() when ctx ends first, or
// ErrStopped once Run has returned. Before Run starts, Sync waits for it.
func (s *Source) Sync(ctx context.Context) error {
	reply := make(chan error, 1)
	select {
	case s.syncReq <- reply:
	case <-s.stopped:
		return ErrStopped
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-reply:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Source) logSync(err error) {
	if err != nil {
		s.log.Error("rescan manifest directory", "dir", s.absDir, "err", err)
	}
}

// watch starts watching the directory, creating it first if needed. On
// failure it logs and leaves s.w nil; the next resync tries again.
func (s *Source) watch() bool {
	if err := os.MkdirAll(s.absDir, 0o755); err != nil {
		s.log.Warn("create manifest directory; relying on the periodic rescan", "dir", s.absDir, "err", err)
		return false
	}
	w, err := newWatcher(s.absDir)
	if err != nil {
		s.log.Warn("watch manifest directory; relying on the periodic rescan", "dir", s.absDir, "err", err)
		return false
	}
	s.w = w
	return true
}

func (s *Source) unwatch() {
	if s.w != nil {
		s.w.close()
		s.w = nil
	}
}

// rewatch replaces a watch that ended (the directory went away, or reading
// events failed) and rescans.
func (s *Source) rewatch() {
	if s.w != nil {
		if err := s.w.err(); err != nil {
			s.log.Warn("manifest directory watch failed", "dir", s.absDir, "err", err)
		}
	}
	s.unwatch()
	if s.watch() {
		s.logSync(s.fullSync())
	}
}

// handle processes one batch of inotify events: files closed after writing
// or renamed into place at once, other changes once the file settled (no
// event about it for the settle delay).
func (s *Source) handle(batch []fsEvent) {
	var (
		order []string
		now   = map[string]bool{}
	)
	for _, ev := range batch {
		switch ev.kind {
		case evOverflow:
			s.log.Warn("inotify queue overflowed; rescanning", "dir", s.absDir)
			s.logSync(s.fullSync())
			return
		case evDirLost:
			s.log.Warn("manifest directory was removed or moved; watching it again", "dir", s.absDir)
			s.rewatch()
			return
		case evModified:
			path := filepath.Join(s.absDir, ev.name)
			if _, waiting := s.pending[path]; waiting && isManifestName(ev.name) {
				s.deferFile(path, s.settle, true)
			}
		case evWritten, evChanged:
			if !isManifestName(ev.name) {
				continue
			}
			path := filepath.Join(s.absDir, ev.name)
			if _, seen := now[path]; !seen {
				order = append(order, path)
			}
			if ev.kind == evWritten || s.settle <= 0 {
				delete(s.pending, path)
				now[path] = true
			} else {
				now[path] = false
				s.deferFile(path, s.settle, true)
			}
		}
	}
	var existing map[podKey]*v1.Pod
	for _, path := range order {
		if !now[path] {
			continue
		}
		if existing == nil {
			existing = s.existing()
		}
		s.syncFile(path, existing)
	}
}

// deferFile puts off the processing of path by d. With reset, a file that
// is already pending waits d again (debounce); without, it keeps its time.
func (s *Source) deferFile(path string, d time.Duration, reset bool) {
	if _, ok := s.pending[path]; ok && !reset {
		return
	}
	s.pending[path] = s.clock.Now().Add(d)
	if s.onDeferred != nil {
		s.deferred = append(s.deferred, path)
	}
}

// runDue processes the pending files whose time has come.
func (s *Source) runDue() {
	now := s.clock.Now()
	var due []string
	for path, at := range s.pending {
		if !at.After(now) {
			due = append(due, path)
		}
	}
	if len(due) == 0 {
		return
	}
	sort.Strings(due)
	existing := s.existing()
	for _, path := range due {
		s.syncFile(path, existing)
	}
}

// armTimer makes timerC fire by the earliest pending time.
func (s *Source) armTimer() {
	if len(s.pending) == 0 {
		s.timerC = nil
		return
	}
	var earliest time.Time
	for _, at := range s.pending {
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	if s.timerC != nil && !earliest.Before(s.timerAt) {
		return
	}
	s.timerAt = earliest
	now := s.clock.Now()
	if !earliest.After(now) {
		// Due already (time moved since runDue): wake up at once rather
		// than rely on a timer of zero length.
		ready := make(chan time.Time, 1)
		ready <- now
		s.timerC = ready
		return
	}
	s.timerC = s.clock.After(earliest.Sub(now))
}
