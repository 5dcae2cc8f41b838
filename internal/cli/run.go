package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/events"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/planner"
)

type runOptions struct {
	file        string
	timeout     time.Duration
	gracePeriod int64
	root        string
	backoffBase time.Duration
	promptKill  time.Duration
	color       string
	verbose     bool
	runtime     runtimeOptions
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
	f.StringVar(&o.root, "root", "", "state directory (default: a temporary directory removed at exit)")
	f.DurationVar(&o.backoffBase, "backoff-base", planner.DefaultConfig().BackoffBase, "crash-loop backoff after the second quick exit (doubles up to 5m)")
	f.DurationVar(&o.promptKill, "prompt-kill", planner.DefaultConfig().PromptKill, "once defer containers completed, SIGKILL this long after the stop signal")
	f.StringVar(&o.color, "color", "auto", "colour container output: auto, always, never")
	f.BoolVarP(&o.verbose, "verbose", "v", false, "log the agent's decisions to stderr")
	o.runtime.addFlags(f)
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func readManifest(s Streams, file string) ([]byte, error) {
	if file == "-" {
		return io.ReadAll(s.In)
	}
	return os.ReadFile(file)
}

func runPods(ctx context.Context, s Streams, o runOptions) error {
	if ctx == nil {
		ctx = context.Background()
	}
	data, err := readManifest(s, o.file)
	if err != nil {
		return &ExitError{Code: ExitBadInput, Err: err}
	}
	pods, err := model.Decode(data)
	if err != nil {
		return &ExitError{Code: ExitBadInput, Err: fmt.Errorf("%s:\n%w", o.file, err)}
	}
	if o.gracePeriod >= 0 {
		for _, p := range pods {
			g := o.gracePeriod
			p.Spec.TerminationGracePeriodSeconds = &g
		}
	}

	// Signals are taken over before anything starts, so that an interrupt
	// at any moment ends the pods gracefully instead of leaving their
	// containers running without an agent. SIGHUP (the terminal went away)
	// counts as an interrupt.
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	defer signal.Stop(sigs)

	root := o.root
	if root == "" {
		dir, err := os.MkdirTemp("", "podward-run-")
		if err != nil {
			return &ExitError{Code: ExitInternal, Err: err}
		}
		defer os.RemoveAll(dir)
		root = dir
	}
	root, _ = filepath.Abs(root)

	clk := clock.RealClock{}
	log := newLogger(s.Err, o.verbose)
	pr := newPrinter(s.Out, useColor(o.color, s.Out), pods)
	rt, err := o.runtime.open(ctx, root, clk, log, pr.output)
	if err != nil {
		return &ExitError{Code: ExitInternal, Err: err}
	}
	defer rt.Close()

	cfg := planner.DefaultConfig()
	cfg.BackoffBase = o.backoffBase
	cfg.PromptKill = o.promptKill

	agentCtx, stopAgent := context.WithCancel(ctx)
	defer stopAgent()
	a := agent.New(agentCtx, agent.Config{Runtime: rt, Clock: clk, Planner: cfg, Logger: log})
	watcher := a.Recorder().Watch()

	// Admit every pod before starting any: bad input starts nothing.
	var bad []string
	seen := map[string]int{}
	for i, p := range pods {
		prefix := fmt.Sprintf("pod %q: ", p.Name)
		if len(pods) > 1 {
			prefix = fmt.Sprintf("document %d: pod %q: ", i+1, p.Name)
		}
		msg := ""
		if err := a.Admit(withDefaults(p)); err != nil {
			msg = strings.TrimPrefix(err.Error(), agent.ErrInvalid.Error()+": ")
		}
		if first, dup := seen[p.Key()]; dup {
			msg = strings.TrimPrefix(msg+"\n", "\n") + fmt.Sprintf("metadata.name: Duplicate value: %q (document %d has it too)", p.Name, first)
		} else {
			seen[p.Key()] = i + 1
		}
		// Every line names its pod, so that errors of several pods can be
		// told apart.
		for _, line := range strings.Split(msg, "\n") {
			if line != "" {
				bad = append(bad, prefix+line)
			}
		}
	}
	if len(bad) > 0 {
		watcher.Stop()
		stopAgent()
		a.Wait()
		return &ExitError{Code: ExitBadInput, Err: errors.New(strings.Join(bad, "\n"))}
	}

	var printed sync.WaitGroup
	printCtx, stopPrinting := context.WithCancel(context.Background())
	defer func() {
		stopPrinting()
		printed.Wait()
	}()
	printed.Add(1)
	go func() {
		defer printed.Done()
		for {
			e, err := watcher.Next(printCtx)
			if err != nil {
				return
			}
			pr.event(e)
		}
	}()

	var uids []types.UID
	for _, p := range pods {
		created, err := a.Create(p)
		if err != nil {
			// Admission passed, so this is a name clash inside the file.
			for _, uid := range uids {
				_ = a.Delete(uid, nil, "Aborted")
			}
			return &ExitError{Code: ExitBadInput, Err: err}
		}
		uids = append(uids, created.UID)
	}

	var timeout <-chan time.Time
	if o.timeout > 0 {
		t := time.NewTimer(o.timeout)
		defer t.Stop()
		timeout = t.C
	}
	all := make(chan struct{})
	go func() {
		defer close(all)
		for _, uid := range uids {
			_ = a.WaitTerminated(agentCtx, uid)
		}
	}()
	deleteAll := func(grace *int64, reason string) {
		for _, uid := range uids {
			_ = a.Delete(uid, grace, reason)
		}
	}
	interrupts := 0
wait:
	for {
		select {
		case <-all:
			break wait
		case <-timeout:
			pr.note("timeout: deleting the pods gracefully")
			deleteAll(nil, "Timeout")
		case <-sigs:
			interrupts++
			if interrupts == 1 {
				pr.note("interrupted: terminating gracefully (defer containers run); interrupt again to kill at once")
				deleteAll(nil, "Interrupted")
			} else {
				pr.note("interrupted again: killing with grace period 0")
				zero := int64(0)
				deleteAll(&zero, "Interrupted")
			}
		}
	}

	stopAgent()
	a.Wait()
	// Every event recorded is printed before the outcome: stop the printer,
	// then print what it had not reached yet (Next returns queued events
	// even with a done context).
	stopPrinting()
	printed.Wait()
	for {
		e, err := watcher.Next(printCtx)
		if err != nil {
			break
		}
		pr.event(e)
	}
	watcher.Stop()

	code := ExitSucceeded
	for _, uid := range uids {
		pod, _, err := a.Get(uid)
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

// withDefaults returns the pod defaulted as Create will default it, so that
// admission sees what will run.
func withDefaults(p *model.Pod) *model.Pod {
	model.Default(p)
	return p
}

// printer serialises event lines and container output on one writer.
type printer struct {
	mu     sync.Mutex
	w      io.Writer
	color  bool
	width  int
	multi  bool
	colors map[string]string
}

var palette = []string{"\x1b[36m", "\x1b[33m", "\x1b[32m", "\x1b[35m", "\x1b[34m", "\x1b[31m"}

func newPrinter(w io.Writer, color bool, pods []*model.Pod) *printer {
	p := &printer{w: w, color: color, multi: len(pods) > 1, colors: map[string]string{}}
	for _, pod := range pods {
		for _, ref := range pod.Containers() {
			name := p.label(pod.Name, ref.Name)
			if len(name) > p.width {
				p.width = len(name)
			}
			if _, ok := p.colors[name]; !ok {
				p.colors[name] = palette[len(p.colors)%len(palette)]
			}
		}
	}
	return p
}

func (p *printer) label(pod, container string) string {
	if p.multi {
		return pod + "/" + container
	}
	return container
}

func (p *printer) output(pod *model.Pod, container, stream string, line []byte) {
	name := p.label(pod.Name, container)
	prefix := fmt.Sprintf("%-*s | ", p.width, name)
	if p.color {
		prefix = p.colors[name] + prefix + "\x1b[0m"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, "%s%s\n", prefix, strings.TrimRight(string(line), "\n"))
}

func (p *printer) event(e events.Event) {
	line := e.Line()
	if p.multi {
		line = strings.Replace(line, " "+e.FieldPath+" ", " pod/"+e.Pod+"/"+e.FieldPath+" ", 1)
	}
	if p.color && e.Type == events.Warning {
		line = "\x1b[1;31m" + line + "\x1b[0m"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, line)
}

func (p *printer) note(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintln(p.w, "podward:", msg)
}
