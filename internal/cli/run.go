package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/podward/podward/internal/daemon"
	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
)

type runOptions struct {
	file        string
	timeout     time.Duration
	gracePeriod int64
	color       string
	daemon      daemon.Options
}

func newRunCommand(s Streams) *cobra.Command {
	o := runOptions{gracePeriod: -1}
	cmd := &cobra.Command{
		Use:   "run -f FILE",
		Short: "Run the pods of a manifest in the foreground until they have terminated",
		Long: `Run starts an in-process agent with a throw-away state directory, creates the
pods of FILE, prints each event and each container's output as it happens, and
exits once every pod has finished terminating.

Exit code: 0 if every pod Succeeded, 1 if one Failed, 2 for bad input.
Ctrl-C or SIGTERM asks for a graceful termination (defer containers run); a
second one kills with grace period 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runPods(cmd.Context(), s, o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.file, "filename", "f", "", "manifest with one or more Pods (YAML or JSON; - for stdin)")
	f.DurationVar(&o.timeout, "timeout", 0, "delete the pods gracefully after this long (0: never)")
	f.Int64Var(&o.gracePeriod, "grace-period", -1, "override the pods' terminationGracePeriodSeconds (-1: keep)")
	f.StringVar(&o.color, "color", "auto", "colour container output: auto, always, never")
	addDaemonFlags(f, &o.daemon, daemon.DefaultOptions(), "state directory (default: a temporary directory removed at exit)")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

// readManifest reads the manifest file, or stdin for "-", refusing one
// larger than model.MaxManifestBytes (the agent's limit on a request, the
// API server's) before decoding any of it: the error then names the file
// and the limit.
func readManifest(s Streams, file string) ([]byte, error) {
	r, name := s.In, "stdin"
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r, name = f, file
	}
	data, err := model.ReadManifest(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return data, nil
}

// runPods runs the pods of the manifest in the foreground: it admits them
// all before it starts any, prints their events and output until every pod
// has terminated, and exits 0 when every pod Succeeded, 1 otherwise, 2 for
// bad input.
func runPods(ctx context.Context, s Streams, o runOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	pods, objs, err := readPods(s, o)
	if err != nil {
		return &ExitError{Code: ExitBadInput, Err: err}
	}

	// Signals are taken over before anything starts, so that an interrupt
	// at any moment ends the pods gracefully instead of leaving their
	// containers running without an agent. SIGHUP (the terminal went away)
	// counts as an interrupt.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	pr := newPrinter(s.Out, useColor(o.color, s.Out), pods)
	o.daemon.LogOutput = s.Err
	f, err := daemon.NewForeground(ctx, o.daemon, pr.output)
	if err != nil {
		// An option that cannot work is bad input; otherwise the state
		// directory or the runtime could not be set up: podward's fault
		// for run, whatever the cause (--runtime included).
		code := ExitInternal
		if errors.Is(err, daemon.ErrBadOptions) {
			code = ExitBadInput
		}
		return &ExitError{Code: code, Err: err}
	}
	defer f.Close()
	for _, note := range f.Leftovers() {
		pr.note(note)
	}
	watcher := f.Watch()

	if err := f.ApplyObjects(objs); err != nil {
		watcher.Stop()
		f.Stop()
		return &ExitError{Code: ExitBadInput, Err: err}
	}
	if err := admitAll(f, pods); err != nil {
		watcher.Stop()
		f.Stop()
		return &ExitError{Code: ExitBadInput, Err: err}
	}
	feed := printEvents(ctx, watcher, pr)
	defer feed.stop()
	uids, err := createAll(f, pods)
	if err != nil {
		return &ExitError{Code: ExitBadInput, Err: err}
	}
	waitPods(ctx, f, uids, sigs, o.timeout, pr)

	f.Stop()
	feed.finish()
	watcher.Stop()
	return outcome(f, uids, pr)
}

// readPods reads and decodes the manifest, with --grace-period applied:
// its pods, and the ConfigMaps and Secrets they read. A manifest without a
// pod is refused.
func readPods(s Streams, o runOptions) ([]*model.Pod, []model.Object, error) {
	data, err := readManifest(s, o.file)
	if err != nil {
		return nil, nil, err
	}
	m, err := model.DecodeManifest(data)
	if err != nil {
		return nil, nil, fmt.Errorf("%s:\n%w", o.file, err)
	}
	if len(m.Pods) == 0 {
		return nil, nil, fmt.Errorf("%s: %w: podward run runs the pods of the file; its ConfigMaps and Secrets are for them (podward apply keeps them in the agent)", o.file, model.ErrNoPods)
	}
	pods := make([]*model.Pod, len(m.Pods))
	for i, d := range m.Pods {
		pods[i] = d.Pod
		if o.gracePeriod >= 0 {
			g := o.gracePeriod
			d.Pod.Spec.TerminationGracePeriodSeconds = &g
		}
	}
	return pods, m.Objects, nil
}

// admitAll admits every pod before any starts, so that bad input starts
// nothing: a manifest of more pods than --max-pods included. Its error
// lists every problem, one per line, each naming its pod (and, for a
// manifest of several pods, its document), so that the problems of several
// pods can be told apart.
func admitAll(f *daemon.Foreground, pods []*model.Pod) error {
	var bad []string
	seen := map[string]int{}
	for i, p := range pods {
		prefix := fmt.Sprintf("pod %q: ", p.Name)
		if len(pods) > 1 {
			prefix = fmt.Sprintf("document %d: pod %q: ", i+1, p.Name)
		}
		msg := admissionProblems(f, p)
		if first, dup := seen[p.Key()]; dup {
			msg = strings.TrimPrefix(msg+"\n", "\n") + fmt.Sprintf("metadata.name: Duplicate value: %q (document %d has it too)", p.Name, first)
		} else {
			seen[p.Key()] = i + 1
		}
		if err := f.Room(i); err != nil {
			msg = strings.TrimPrefix(msg+"\n", "\n") + err.Error() + " (--max-pods)"
		}
		for _, line := range strings.Split(msg, "\n") {
			if line != "" {
				bad = append(bad, prefix+line)
			}
		}
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "\n"))
	}
	return nil
}

// admissionProblems is what keeps a pod from running here, one problem per
// line, or "".
func admissionProblems(f *daemon.Foreground, p *model.Pod) string {
	err := f.Admit(withDefaults(p))
	var invalid *daemon.InvalidError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &invalid):
		return invalid.Problems()
	default:
		return err.Error()
	}
}

// withDefaults returns the pod defaulted as Create will default it, so that
// admission sees what will run.
func withDefaults(p *model.Pod) *model.Pod {
	model.Default(p)
	return p
}

// createAll starts the pods, which admission passed; when one cannot be
// created (a name clash inside the file), the ones started are deleted.
func createAll(f *daemon.Foreground, pods []*model.Pod) ([]types.UID, error) {
	var uids []types.UID
	for _, p := range pods {
		uid, err := f.Create(p)
		if err != nil {
			for _, started := range uids {
				_ = f.Delete(started, nil, daemon.TerminationAborted)
			}
			return nil, err
		}
		uids = append(uids, uid)
	}
	return uids, nil
}

// waitPods waits until every pod has terminated (or ctx ends). The
// timeout and the first interrupt delete the pods gracefully; the next
// interrupt kills them with grace period 0.
func waitPods(ctx context.Context, f *daemon.Foreground, uids []types.UID, sigs <-chan os.Signal, timeout time.Duration, pr *printer) {
	var timedOut <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timedOut = t.C
	}
	all := make(chan struct{})
	go func() {
		defer close(all)
		for _, uid := range uids {
			_ = f.WaitTerminated(ctx, uid)
		}
	}()
	deleteAll := func(grace *int64, reason daemon.TerminationReason) {
		for _, uid := range uids {
			_ = f.Delete(uid, grace, reason)
		}
	}
	interrupts := 0
	for {
		select {
		case <-all:
			return
		case <-timedOut:
			pr.note("timeout: deleting the pods gracefully")
			deleteAll(nil, daemon.TerminationTimeout)
		case <-sigs:
			interrupts++
			if interrupts == 1 {
				pr.note("interrupted: terminating gracefully (defer containers run); interrupt again to kill at once")
				deleteAll(nil, daemon.TerminationInterrupted)
			} else {
				pr.note("interrupted again: killing with grace period 0")
				zero := int64(0)
				deleteAll(&zero, daemon.TerminationInterrupted)
			}
		}
	}
}

// outcome prints each pod's phase and returns the exit error: none when
// every pod Succeeded, else exit code 1.
func outcome(f *daemon.Foreground, uids []types.UID, pr *printer) error {
	code := ExitSucceeded
	for _, uid := range uids {
		pod, err := f.Pod(uid)
		if err != nil {
			return &ExitError{Code: ExitInternal, Err: err}
		}
		pr.note(fmt.Sprintf("pod/%s %s", pod.Name, pod.Status.Phase))
		if pod.Status.Phase != v1.PodSucceeded {
			code = ExitFailed
		}
	}
	if code != ExitSucceeded {
		return &ExitError{Code: code}
	}
	return nil
}

// eventFeed prints the agent's events as they are recorded, from a
// goroutine of its own.
type eventFeed struct {
	w       *events.Watcher
	pr      *printer
	ctx     context.Context
	cancel  context.CancelFunc
	printed sync.WaitGroup
}

// printEvents starts printing w's events with pr. The feed does not end
// with ctx (whose values it keeps): finish or stop ends it.
func printEvents(ctx context.Context, w *events.Watcher, pr *printer) *eventFeed {
	e := &eventFeed{w: w, pr: pr}
	e.ctx, e.cancel = context.WithCancel(context.WithoutCancel(ctx))
	e.printed.Add(1)
	go func() {
		defer e.printed.Done()
		for {
			ev, err := w.Next(e.ctx)
			if err != nil {
				return
			}
			pr.event(ev)
		}
	}()
	return e
}

// stop ends the feed's goroutine and waits for it. It is idempotent.
func (e *eventFeed) stop() {
	e.cancel()
	e.printed.Wait()
}

// finish stops the feed, then prints what it had not reached yet (Next
// returns queued events even with a done context), so that every event
// recorded is printed before the outcome.
func (e *eventFeed) finish() {
	e.stop()
	for {
		ev, err := e.w.Next(e.ctx)
		if err != nil {
			return
		}
		e.pr.event(ev)
	}
}
