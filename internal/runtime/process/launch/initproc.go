package launch

import (
	"errors"
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// The init helper as a parent. A process started in a PID namespace of its
// own cannot be its PID 1: the kernel gives a namespace's init no signal
// it has no handler for (a SIGTERM to a `sleep` would do nothing), and a
// fresh /proc can only be mounted from inside the namespace. So the init
// helper, born PID 1 of the container's namespace, stays: it forks the
// command as its only child, passes on the signals the child's process
// group does not get anyway, reaps whatever the namespace orphans, and
// exits as the command exits (which ends everything left in the
// namespace). It keeps its process group: the group's signals, which the
// runtimes send, reach the command directly. (An exec in such a container
// has its helper forked into the namespace, forkInto, and execs as
// elsewhere.)

// relayed are the signals the helper passes on to a command that left its
// process group.
var relayed = []os.Signal{
	unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGWINCH, unix.SIGALRM, unix.SIGCONT,
}

// runAsParent forks path (argv, env) as the helper's child, as u when set,
// reports that it runs (the status pipe closes), and then reaps every
// child of the namespace it is the init of until the command exited. It
// returns only when the command could not start; else the helper exits
// with the command's exit code (128+signal for a signal).
func runAsParent(path string, argv, env []string, u *User) error {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, relayed...)
	cmd := &exec.Cmd{
		Path: path, Args: argv, Env: env,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		// Its child dies with it anyway (the namespace ends with its
		// init).
		SysProcAttr: &syscall.SysProcAttr{Pdeathsig: unix.SIGKILL},
	}
	if u != nil {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: u.UID, Gid: u.GID, Groups: u.Groups}
	}
	if err := cmd.Start(); err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			return pe
		}
		return err
	}
	// The command runs: the pipe's close tells the starter so.
	unix.Close(helperStatusFD)
	child := cmd.Process.Pid
	go relay(sigs, child)
	os.Exit(waitChild(child))
	return nil
}

// relay passes on the signals the helper gets to child while child is in
// another process group than the helper's (a shell doing job control):
// those sent to the group reach it without the helper.
func relay(sigs <-chan os.Signal, child int) {
	own := unix.Getpgrp()
	for sig := range sigs {
		if pg, err := unix.Getpgid(child); err == nil && pg != own {
			_ = unix.Kill(child, sig.(unix.Signal))
		}
	}
}

// waitChild reaps every child until child exited and returns child's exit
// code as container runtimes report it.
func waitChild(child int) int {
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-1, &ws, 0, nil)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return 255
		case pid != child:
			continue
		case ws.Signaled():
			return 128 + int(ws.Signal())
		default:
			return ws.ExitStatus()
		}
	}
}
