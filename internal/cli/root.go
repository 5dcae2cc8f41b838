package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// Exit codes of `podward run`, and of every command for bad input.
const (
	ExitSucceeded  = 0
	ExitFailed     = 1
	ExitBadInput   = 2
	ExitInternal   = 3
	exitInterrupts = 130
)

// ExitError carries the process exit code a command wants; its message, if
// any, has already been printed.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit code %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// Streams are the command's standard streams, injected for tests.
type Streams struct {
	In       io.Reader
	Out, Err io.Writer
}

// NewRootCommand builds the `podward` command tree.
func NewRootCommand(s Streams) *cobra.Command {
	root := &cobra.Command{
		Use:           "podward",
		Short:         "A single-node pod engine: Kubernetes pods with ordered start, ordered stop and defer containers",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.In)
	root.SetOut(s.Out)
	root.SetErr(s.Err)
	root.AddCommand(newRunCommand(s), newStopPodsCommand(s), newBenchCommand(s))

	api := &apiOptions{}
	root.PersistentFlags().StringVar(&api.socket, "socket", "", socketFlagHelp)
	root.PersistentFlags().StringVarP(&api.namespace, "namespace", "n", "default", "the namespace of the pods")
	root.AddCommand(
		newServeCommand(s, api),
		newNodeCommand(s, api),
		newApplyCommand(s, api),
		newGetCommand(s, api),
		newDescribeCommand(s, api),
		newLogsCommand(s, api),
		newExecCommand(s, api),
		newAttachCommand(s, api),
		newPortForwardCommand(s, api),
		newCpCommand(s, api),
		newDebugCommand(s, api),
		newResizeCommand(s, api),
		newDeleteCommand(s, api),
		newEventsCommand(s, api),
		newTimelineCommand(s, api),
		newWaitCommand(s, api),
		newShutdownCommand(s, api),
		newTopCommand(s, api),
	)
	return root
}

// Main runs the command line with args and returns the process exit code.
// Started as kubectl-podward (os.Args[0]), the binary is the kubectl plugin
// (plugin.go).
func Main(args []string) int {
	s := Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}
	if isPlugin(os.Args[0]) {
		return executePlugin(context.Background(), s, args...)
	}
	return execute(context.Background(), s, args...)
}

// execute runs the command tree with args on s, under ctx, and returns the
// exit code; it prints the error a command returned unless the command has
// printed it already. Main runs it for the process, tests on their own
// streams.
func execute(ctx context.Context, s Streams, args ...string) int {
	cmd := NewRootCommand(s)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintln(s.Err, "error:", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintln(s.Err, "error:", err)
	return ExitBadInput
}
