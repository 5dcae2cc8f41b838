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
	"strconv"
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

	logFile, io, err := s.openFiles()
	if err != nil {
		return s.startFailed(err)
	}
	control, err := os.OpenFile(filepath.Join(s.dir, ControlFile), os.O_RDWR, 0)
	if err != nil {
		io.closeAll()
		logFile.Close()
		return s.startFailed(err)
	}
	// Before the container starts, so that the pod's others never miss it.
	s.order = s.joinPod(&spec)
	defer s.order.leave()
	if err := s.launch(&spec, io); err != nil {
		logFile.Close()
		return s.startFailed(err)
	}
	started := Started{StartedAt: s.clock.Now()}
	s.scoreContainer(s.pgid)
	sink, con, copied := s.supervise(&spec, io, logFile, control, sigs)
	abort := s.report(&started)
	exit := s.finish(logFile, sink, io.outputs, copied)
	con.close()
	return s.recordExit(&spec, exit, abort)
}

// launch starts the container of spec with io's child ends (package
// launch), which it then closes: the child has its copies, and ours would
// keep the pipes open for ever. On failure it closes every stream.
func (s *supervisor) launch(spec *Spec, io *stdio) error {
	proc := spec.Process
	proc.Stdin, proc.Terminal, proc.OOMScoreAdj = io.childIn, spec.TTY, spec.OOMScoreAdj
	var err error
	if proc.Join, err = joined(spec.Join); err != nil {
		io.closeAll()
		return err
	}
	cmd, err := launch.Start(context.Background(), proc, io.childOut, io.childErr)
	proc.Join.Close()
	io.closeChild()
	if err != nil {
		io.closeOurs()
		return err
	}
	s.cmd, s.pgid = cmd, cmd.Process.Pid
	return nil
}

// supervise serves the running container: its output into the log
// (copied gets a value as each stream ends) and to attaches (the
// console), the signals the shim gets, its control FIFO and its tether.
func (s *supervisor) supervise(spec *Spec, io *stdio, logFile *crilog.LogFile, control *os.File, sigs <-chan os.Signal) (*crilog.Sink, *console, chan struct{}) {
	sink := crilog.NewSink(logFile, s.clock, nil)
	sink.OnDrop(s.dropped)
	// Once the container runs: an attach before would find nothing.
	con := newConsole(s.log, s.dir, io.in, spec.TTY, spec.StdinOnce)
	copied := make(chan struct{}, 2)
	go copyStream(io.outputs[0], crilog.NewWriter(sink, crilog.Stdout), s.log, copied, func(p []byte) { con.output(frameStdout, p) })
	if len(io.outputs) > 1 {
		go copyStream(io.outputs[1], crilog.NewWriter(sink, crilog.Stderr), s.log, copied, func(p []byte) { con.output(frameStderr, p) })
	}
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
	return sink, con, copied
}

// report records the running container (container.json) and reports it to
// the agent that started it; when either fails, or the agent gave up, the
// container is killed and the reason returned.
func (s *supervisor) report(started *Started) error {
	var abort error
	var err error
	if started.Process, err = IdentOf(s.pgid); err != nil {
		abort = err
	} else if err := writeJSON(s.dir, ContainerFile, started); err != nil {
		abort = fmt.Errorf("write %s: %w", ContainerFile, err)
	} else if err := s.handshake(report{Started: started}); err != nil {
		abort = fmt.Errorf("start aborted: %w", err)
	}
	if abort != nil {
		s.log.Warn("giving up on the container", "err", abort)
		s.signal(unix.SIGKILL)
		return abort
	}
	s.log.Debug("container started", "pid", s.pgid)
	// Once the agent has its start: a move costs milliseconds on v1.
	s.enterCgroup()
	return nil
}

// recordExit completes how the container ended (a start the shim gave up
// on is a StartError; else its cgroup's OOM kills and its termination
// message, once the log is complete) and writes it, or sends it as a
// notice when the disk cannot take it.
func (s *supervisor) recordExit(spec *Spec, exit *Exit, abort error) error {
	if abort != nil {
		exit = &Exit{ExitCode: 128, Reason: exitstatus.StartError, Message: abort.Error(), FinishedAt: exit.FinishedAt}
	} else {
		s.cgroupExit(exit)
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

// stdio are the container's standard streams: the ends the child gets,
// the ones the shim reads its output from, and the one it writes its
// stdin to (nil without stdin or tty).
type stdio struct {
	childIn, childOut, childErr *os.File
	outputs                     []*os.File
	in                          *os.File
}

// closeChild closes the child's ends once it has them.
func (io *stdio) closeChild() {
	for _, f := range []*os.File{io.childIn, io.childOut, io.childErr} {
		if f != nil {
			f.Close()
		}
	}
}

// closeOurs closes the shim's ends.
func (io *stdio) closeOurs() {
	for _, f := range io.outputs {
		f.Close()
	}
	if io.in != nil {
		io.in.Close()
	}
}

func (io *stdio) closeAll() {
	io.closeChild()
	io.closeOurs()
}

// openFiles opens the container's log for appending, rotated as the spec
// says, and makes its standard streams: with a tty one pty for all three
// (the shim holds its master), else pipes for stdout and stderr, and one
// for stdin when the spec asks for it.
func (s *supervisor) openFiles() (*crilog.LogFile, *stdio, error) {
	if err := os.MkdirAll(filepath.Dir(s.spec.LogPath), 0o750); err != nil {
		return nil, nil, err
	}
	logFile, err := crilog.OpenLogFile(s.spec.LogPath, s.spec.LogRotation, s.clock, func(msg string, err error) {
		s.log.Warn(msg, "err", err)
	})
	if err != nil {
		return nil, nil, err
	}
	io, err := s.openStdio()
	if err != nil {
		logFile.Close()
		return nil, nil, err
	}
	return logFile, io, nil
}

func (s *supervisor) openStdio() (*stdio, error) {
	if s.spec.TTY {
		master, slave, err := openPTY()
		if err != nil {
			return nil, fmt.Errorf("open a pty: %w", err)
		}
		return &stdio{childIn: slave, childOut: slave, childErr: slave, outputs: []*os.File{master}, in: master}, nil
	}
	io := &stdio{}
	stdoutR, stdoutW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	io.childOut, io.outputs = stdoutW, append(io.outputs, stdoutR)
	stderrR, stderrW, err := os.Pipe()
	if err != nil {
		io.closeAll()
		return nil, err
	}
	io.childErr, io.outputs = stderrW, append(io.outputs, stderrR)
	if s.spec.Stdin {
		stdinR, stdinW, err := os.Pipe()
		if err != nil {
			io.closeAll()
			return nil, err
		}
		io.childIn, io.in = stdinR, stdinW
	}
	return io, nil
}

// openPTY opens a pty: its master, and its slave end for the container.
func openPTY() (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	rc, err := master.SyscallConn()
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	var n uint32
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		if ierr = unix.IoctlSetPointerInt(int(fd), unix.TIOCSPTLCK, 0); ierr == nil {
			n, ierr = unix.IoctlGetUint32(int(fd), unix.TIOCGPTN)
		}
	}); err != nil {
		ierr = err
	}
	if ierr != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock the pty: %w", ierr)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.FormatUint(uint64(n), 10), os.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	return master, slave, nil
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
// tee gets each read too (the attaches).
func copyStream(src *os.File, w *crilog.Writer, log *slog.Logger, done chan<- struct{}, tee func([]byte)) {
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
			tee(buf[:n])
		}
		if err != nil {
			break
		}
	}
	note(w.Close())
}
