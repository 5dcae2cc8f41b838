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
// namespace). An exec in such a container joins the namespace for its
// children only (setns), so its helper forks the command the same way,
// and relays its end. Both keep their process group: the group's
// signals, which the runtimes send, reach the command directly.

// relayed are the signals the helper passes on to a command that left its
// process group.
var relayed = []os.Signal{
	unix.SIGTERM, unix.SIGINT, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2,
	unix.SIGWINCH, unix.SIGALRM, unix.SIGCONT,
}

// runAsParent forks path (argv, env) as the helper's child, as u when set,
// reports that it runs (the status pipe closes), and then waits for it:
// reaping every child when it is its namespace's init (reapAll). It
// returns only when the command could not start; else the helper exits
// with the command's exit code (128+signal for a signal).
func runAsParent(path string, argv, env []string, u *User, reapAll bool) error {
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, relayed...)
	cmd := &exec.Cmd{
		Path: path, Args: argv, Env: env,
		Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr,
		SysProcAttr: &syscall.SysProcAttr{},
	}
	if reapAll {
		// The namespace's init: its child dies with it anyway, and sees
		// it as its parent. An exec's command, in a namespace its helper
		// is not in, sees no parent, which Go's check after setting the
		// signal takes for a dead one: it is left in the helper's
		// process group instead, which the runtime kills (and the next
		// runtime, should this one die: Runtime.killLeftExecs).
		cmd.SysProcAttr.Pdeathsig = unix.SIGKILL
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
	os.Exit(waitChild(child, reapAll))
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

// waitChild reaps until child exited (every child, with reapAll) and
// returns child's exit code as container runtimes report it.
func waitChild(child int, reapAll bool) int {
	wanted := child
	if reapAll {
		wanted = -1
	}
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(wanted, &ws, 0, nil)
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
