package shim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/podward/podward/internal/crilog"
	"github.com/podward/podward/internal/runtime/exitstatus"
	"github.com/podward/podward/internal/runtime/process/launch"
)

// Env names the instance directory when the binary runs as a shim.
const Env = "_PODWARD_PROCESS_SHIM"

// statusFD is the shim's end of the socket on which it reports to Start.
const statusFD = 3

// drainTimeout bounds how long the shim waits for a container's pipes to
// close once its process group was killed: a grandchild that left the
// group (setsid) may hold them open for ever.
const drainTimeout = 2 * time.Second

// goAhead and abortStart are what Start answers to a successful report:
// go on, or give up (the agent no longer wants the container). When the
// answer never comes because the agent died, the shim goes on: the
// container runs, its instance is on disk, and the next agent adopts it —
// killing it would lose a container that already ran.
const (
	goAhead    = 'g'
	abortStart = 'a'
)

// forwarded are the signals the shim passes on to the container's process
// group instead of dying of them (in its pod's order, for a stop request
// while no agent runs: order.go).
var forwarded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// report is the shim's one message to Start.
type report struct {
	Started *Started `json:"started,omitempty"`
	Error   string   `json:"error,omitempty"`
}

// MaybeRun turns the process into a shim when Start started it as one, and
// returns at once otherwise. The binary's main must call it first, before
// any other work. The shim supervises its instance until the container
// exited and exit.json is written, then exits.
func MaybeRun() {
	dir, ok := os.LookupEnv(Env)
	if !ok {
		if _, spare := os.LookupEnv(SpareEnv); !spare {
			return
		}
		// Until it is given its instance a spare holds nothing: a signal
		// ends it as it would any process.
		dir = awaitInstance()
		redirectStderr(dir)
	}
	// Before anything else: from now on these signals are the container's.
	sigs := make(chan os.Signal, 32)
	signal.Notify(sigs, forwarded...)
	// The container must not inherit the socket to the agent.
	unix.CloseOnExec(statusFD)
	clk := realClock{}
	notices := newNotifier(dir, clk)
	s := &supervisor{
		dir:     dir,
		clock:   clk,
		log:     slog.New(noticeHandler{next: slog.NewTextHandler(os.Stderr, nil), n: notices}).With("dir", dir),
		notices: notices,
		status:  os.NewFile(statusFD, "shim-status"),
		exited:  make(chan struct{}),
	}
	err := s.run(sigs)
	if err != nil {
		s.log.Error("shim failed", "err", err)
	}
	notices.flush()
	if err != nil {
		os.Exit(1)
	}
	os.Exit(0)
}

// supervisor is the shim's state: one container instance.
type supervisor struct {
	dir   string
	clock shimClock // the real one: the shim has its own process
	// log is the shim's own log: shim.log, and its warnings and errors
	// also to the agent, through notices.
	log     *slog.Logger
	notices *notifier
	status  *os.File

	spec *Spec
	cmd  *exec.Cmd
	pgid int
	// order is the instance's place in its pod's stop order, nil when its
	// spec has none (order.go).
	order    *podOrder
	stopOnce sync.Once
	// exited is closed once the container's main process exited.
	exited chan struct{}

	mu sync.Mutex
	// reaped is set just before the main process is reaped: from then on
	// its PID, and so the group ID, may belong to someone else.
	reaped bool
}

func (s *supervisor) run(sigs <-chan os.Signal) error {
	self, err := IdentOf(os.Getpid())
	if err != nil {
		return err
	}
	if err := writeJSON(s.dir, ShimFile, self); err != nil {
		return fmt.Errorf("write %s: %w", ShimFile, err)
	}
	var spec Spec
	if err := readJSON(s.dir, SpecFile, &spec); err != nil {
		return s.startFailed(err)
	}
	s.spec = &spec
	s.log = s.log.With("pod", spec.PodNamespace+"/"+spec.PodName, "podUID", spec.PodUID, "container", spec.Container, "id", spec.ID)

	logFile, pipes, err := s.openFiles()
	if err != nil {
		return s.startFailed(err)
	}
	control, err := os.OpenFile(filepath.Join(s.dir, ControlFile), os.O_RDWR, 0)
	if err != nil {
		return s.startFailed(err)
	}
	// Before the container starts, so that the pod's others never miss it.
	s.order = s.joinPod(&spec)
	defer s.order.leave()
	// stdout, stderr: read ends, then write ends.
	cmd, err := launch.Start(context.Background(), spec.Process, pipes[2], pipes[3])
	// The child has its copies; ours would keep the pipes open for ever.
	pipes[2].Close()
	pipes[3].Close()
	if err != nil {
		logFile.Close()
		pipes[0].Close()
		pipes[1].Close()
		return s.startFailed(err)
	}
	s.cmd, s.pgid = cmd, cmd.Process.Pid
	started := Started{StartedAt: s.clock.Now()}
	s.scoreContainer(s.pgid)

	sink := crilog.NewSink(logFile, s.clock, nil)
	sink.OnDrop(s.dropped)
	copied := make(chan struct{}, 2)
	go copyStream(pipes[0], crilog.NewWriter(sink, crilog.Stdout), s.log, copied)
	go copyStream(pipes[1], crilog.NewWriter(sink, crilog.Stderr), s.log, copied)
	go func() {
		for sig := range sigs {
			s.outside(sig.(syscall.Signal))
		}
	}()
	go func() {
		if err := readControl(control, s.log, s.signal); err != nil {
			s.log.Error("control FIFO", "err", err)
		}
	}()
	if spec.Tether != 0 {
		go s.tether(spec.Tether)
	}

	var abort error
	if started.Process, err = IdentOf(s.pgid); err != nil {
		abort = err
	} else if err := writeJSON(s.dir, ContainerFile, started); err != nil {
		abort = fmt.Errorf("write %s: %w", ContainerFile, err)
	} else if err := s.handshake(report{Started: &started}); err != nil {
		abort = fmt.Errorf("start aborted: %w", err)
	}
	if abort != nil {
		s.log.Warn("giving up on the container", "err", abort)
		s.signal(unix.SIGKILL)
	} else {
		s.log.Debug("container started", "pid", s.pgid)
		// Once the agent has its start: a move costs milliseconds on v1.
		s.enterCgroup()
	}
	exit := s.finish(logFile, sink, pipes[:2], copied)
	if abort != nil {
		exit = &Exit{ExitCode: 128, Reason: exitstatus.StartError, Message: abort.Error(), FinishedAt: exit.FinishedAt}
	} else {
		s.cgroupExit(exit)
		// The log is complete: the message may come from its tail.
		exit.Message = spec.TerminationMessage.Message(exit.Status(), spec.LogPath)
	}
	if err := WriteExit(s.dir, exit); err != nil {
		// A full disk: the agent records it from the notice instead.
		s.notices.send(Notice{Exit: exit})
		return fmt.Errorf("write %s: %w", ExitFile, err)
	}
	s.log.Debug("container exited", "exitCode", exit.ExitCode, "reason", exit.Reason)
	return nil
}

// dropped tells the agent of output the log could not take, once its
// marker is in the log (or the container exited first).
func (s *supervisor) dropped(d crilog.Drop) {
	s.notices.send(Notice{LogDropped: &LogDrop{Stream: d.Stream, Bytes: d.Bytes, Cause: d.Reason(), Marked: d.Marked}})
}

// openFiles opens the container's log for appending, rotated as the spec
// says, and makes its stdout and stderr pipes: read ends, then write ends.
func (s *supervisor) openFiles() (*crilog.LogFile, []*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(s.spec.LogPath), 0o750); err != nil {
		return nil, nil, err
	}
	logFile, err := crilog.OpenLogFile(s.spec.LogPath, s.spec.LogRotation, s.clock, func(msg string, err error) {
		s.log.Warn(msg, "err", err)
	})
	if err != nil {
		return nil, nil, err
	}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		logFile.Close()
		return nil, nil, err
	}
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		logFile.Close()
		stdoutR.Close()
		stdoutW.Close()
		return nil, nil, err
	}
	return logFile, []*os.File{stdoutR, stderrR, stdoutW, stderrW}, nil
}

// startFailed records and reports that the container could not start.
func (s *supervisor) startFailed(cause error) error {
	exit := &Exit{ExitCode: 128, Reason: exitstatus.StartError, Message: cause.Error(), FinishedAt: s.clock.Now()}
	if err := WriteExit(s.dir, exit); err != nil {
		s.log.Error("write exit", "err", err)
		s.notices.send(Notice{Exit: exit})
	}
	if err := s.handshake(report{Error: cause.Error()}); err != nil {
		s.log.Warn("report the start failure", "err", err)
	}
	return nil
}

// handshake sends r to Start and, for a successful start, waits for its
// answer. It returns nil only when Start said to go on. The socket is
// closed after it: the shim never writes to anything the agent holds once
// it started.
func (s *supervisor) handshake(r report) error {
	defer s.status.Close()
	msg, err := json.Marshal(r)
	if err != nil {
		return err
	}
	// A closed socket is EPIPE here, not a signal: Go ignores SIGPIPE for
	// descriptors other than stdout and stderr.
	if _, err := s.status.Write(append(msg, '\n')); err != nil {
		if r.Error != "" {
			return fmt.Errorf("report: %w", err)
		}
		// Start closed its end before the report came: it gave up on the
		// start, and its abort is there to read, or it died, and nothing
		// is. Only a dead agent leaves the container to the next one: the
		// one that gave up removes the instance, and nobody would stop it.
		if s.answerLeft() == abortStart {
			return errors.New("the agent cancelled the start before it had the report")
		}
		s.log.Warn("the agent vanished before reading the start report; the container goes on for the next agent to adopt", "err", err)
		return nil
	}
	if r.Error != "" {
		return nil
	}
	var answer [1]byte
	n, err := s.status.Read(answer[:])
	switch {
	case n == 1 && answer[0] == goAhead:
		return nil
	case n == 1 && answer[0] == abortStart:
		return errors.New("the agent cancelled the start")
	case n == 1:
		return fmt.Errorf("the agent answered %q to the start", answer[:n])
	}
	s.log.Warn("the agent vanished before confirming the start; the container goes on for the next agent to adopt", "err", err)
	return nil
}

// answerLeft returns, without waiting, the answer Start wrote on the
// status socket before it closed its end, or 0 when there is none.
func (s *supervisor) answerLeft() byte {
	var answer [1]byte
	n, _, err := unix.Recvfrom(int(s.status.Fd()), answer[:], unix.MSG_DONTWAIT)
	if err != nil || n != 1 {
		return 0
	}
	return answer[0]
}

// signal sends sig to the container's process group unless its leader was
// reaped. A group that is gone is not an error.
func (s *supervisor) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.reaped {
		return
	}
	if err := unix.Kill(-s.pgid, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		s.log.Warn("signal the container's process group", "signal", sig, "err", err)
	}
}

// finish waits for the container's main process to exit and finishes the
// instance as the package documentation says, up to exit.json, which it
// returns for the caller to write. Output the log could not take until the
// end is reported to the agent.
func (s *supervisor) finish(logFile *crilog.LogFile, sink *crilog.Sink, pipes []*os.File, copied <-chan struct{}) *Exit {
	if err := launch.WaitExited(s.pgid); err != nil {
		s.log.Error("wait for the container", "err", err)
	}
	finishedAt := s.clock.Now()
	close(s.exited)
	// Orphans die with their container. The leader is a zombie until it is
	// reaped below, so its group ID is still the container's.
	s.signal(unix.SIGKILL)
	s.killCgroup()
	// Gone: those of the pod that stop after it may go on.
	s.order.leave()
	launch.DrainPipes(s.clock, drainTimeout, s.log, pipes, copied)
	for _, d := range sink.Unmarked() {
		s.dropped(d)
	}
	if err := logFile.Sync(); err != nil {
		s.log.Warn("sync the container log", "err", err)
	}
	if err := logFile.Close(); err != nil {
		s.log.Warn("close the container log", "err", err)
	}
	s.mu.Lock()
	s.reaped = true
	s.mu.Unlock()
	werr := s.cmd.Wait()
	return exitOf(s.cmd.ProcessState, werr, finishedAt)
}

// exitOf turns a reaped process's state into an Exit.
func exitOf(ps *os.ProcessState, waitErr error, finishedAt time.Time) *Exit {
	e := &Exit{FinishedAt: finishedAt}
	if ps == nil {
		e.ExitCode = 128
		e.Reason = exitstatus.Error
		e.Message = fmt.Sprintf("wait for the process: %v", waitErr)
		return e
	}
	e.ExitCode = int32(launch.ExitCode(ps))
	e.Reason = exitstatus.Completed
	if e.ExitCode != 0 {
		e.Reason = exitstatus.Error
	}
	return e
}

// copyStream copies a container's stream into its log until the pipe
// closes. A failing log does not stop the copy: the container must never
// block on a full pipe. What the log cannot take is dropped and counted by
// the Sink, which marks the gap once the log takes records again (a full
// disk that got room); the first failure of a run of them is logged, and
// the recovery.
func copyStream(src *os.File, w *crilog.Writer, log *slog.Logger, done chan<- struct{}) {
	defer func() { done <- struct{}{} }()
	buf := make([]byte, 32*1024)
	failing := false
	note := func(err error) {
		switch {
		case err != nil && !failing:
			log.Warn("cannot write the container log; dropping its output until it can", "err", err)
		case err == nil && failing:
			log.Info("the container log is written again")
		}
		failing = err != nil
	}
	for {
		n, err := src.Read(buf)
		if n > 0 {
			_, werr := w.Write(buf[:n])
			note(werr)
		}
		if err != nil {
			break
		}
	}
	note(w.Close())
}
