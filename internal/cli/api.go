package cli

import (
	"context"

	"errors"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/client"
)

// apiOptions are the root's persistent flags for the commands that talk to
// an agent (and for serve, which listens where they talk).
type apiOptions struct {
	socket    string
	namespace string
}

const socketFlagHelp = "the agent's unix socket (default: $" + client.SocketEnv + ", else " + client.RootSocket +
	" as root, else $XDG_RUNTIME_DIR/podward/podward.sock)"

// socketPath is --socket, or the default.
func (o *apiOptions) socketPath() string {
	if o.socket != "" {
		return o.socket
	}
	return client.DefaultSocket()
}

// listNamespace is the namespace to list or watch: --namespace, or "" (every
// namespace) with all, for -A.
func (o *apiOptions) listNamespace(all bool) string {
	if all {
		return ""
	}
	return o.namespace
}

// client connects to the agent; the caller closes it.
func (o *apiOptions) client() *client.Client { return client.New(o.socketPath()) }

// report prints err the way kubectl does and returns the exit error for
// it, already printed: 1, or 2 for an invalid pod.
func report(s Streams, err error) error {
	fmt.Fprintln(s.Err, errorText(err))
	return &ExitError{Code: exitCode(err)}
}

func exitCode(err error) int {
	if apierrors.IsInvalid(err) {
		return ExitBadInput
	}
	return ExitFailed
}

// errorText renders an error in one line (an invalid pod: one line per
// problem), as kubectl would:
//
//	The connection to the podward agent at /run/podward/podward.sock was refused - did you specify the right socket? Start one with 'podward serve'
//	Error from server (NotFound): pods "web" not found
//	The Pod "web" is invalid: spec.containers[0].image: Required value
func errorText(err error) string {
	var ce *client.ConnError
	if errors.As(err, &ce) {
		if !errors.Is(ce, client.ErrNoAgent) {
			return ce.Error()
		}
		start := "podward serve"
		if ce.Socket != client.DefaultSocket() {
			start += " --socket " + ce.Socket
		}
		return fmt.Sprintf("%s Start one with '%s'", ce, start)
	}
	var se *apierrors.StatusError
	if !errors.As(err, &se) {
		return "error: " + err.Error()
	}
	st := se.ErrStatus
	if st.Reason == metav1.StatusReasonInvalid && st.Details != nil {
		return invalidText(st)
	}
	reason := st.Reason
	if reason == "" {
		reason = metav1.StatusReasonUnknown
	}
	return fmt.Sprintf("Error from server (%s): %s", reason, st.Message)
}

// invalidText is kubectl's rendering of a 422: the problems inline when
// there is one, else one per line after a "* ".
func invalidText(st metav1.Status) string {
	head := fmt.Sprintf("The %s %q is invalid", st.Details.Kind, st.Details.Name)
	var causes []string
	for _, c := range st.Details.Causes {
		if c.Field == "" {
			causes = append(causes, c.Message)
		} else {
			causes = append(causes, c.Field+": "+c.Message)
		}
	}
	switch len(causes) {
	case 0:
		return head
	case 1:
		return head + ": " + causes[0]
	default:
		return head + ":\n* " + strings.Join(causes, "\n* ")
	}
}

// isPodResource says whether a kubectl resource name means pods.
func isPodResource(s string) bool {
	switch strings.ToLower(s) {
	case "pod", "pods", "po":
		return true
	}
	return false
}

// parsePodArgs reads kubectl-style resource arguments: "pods [NAME...]"
// or "pod/NAME...". It returns the names (none: all pods).
func parsePodArgs(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errors.New(`you must specify the type of resource: "pods"`)
	}
	if strings.Contains(args[0], "/") {
		names := make([]string, 0, len(args))
		for _, a := range args {
			kind, name, ok := strings.Cut(a, "/")
			if !ok {
				return nil, errors.New("there is no need to specify a resource type as a separate argument when passing arguments in resource/name form")
			}
			if !isPodResource(kind) {
				return nil, unknownResource(kind)
			}
			if name == "" {
				return nil, fmt.Errorf("arguments in resource/name form must have a single resource and name: %q", a)
			}
			names = append(names, name)
		}
		return names, nil
	}
	if !isPodResource(args[0]) {
		return nil, unknownResource(args[0])
	}
	return args[1:], nil
}

func unknownResource(kind string) error {
	return fmt.Errorf("the server doesn't have a resource type %q: podward serves pods, configmaps and secrets", kind)
}

// podName reads one pod argument: NAME or pod/NAME.
// podOf gets the pod arg names (NAME or pod/NAME) from the agent, as
// the verbs on one pod (exec, attach, port-forward, debug, resize) begin.
// On an error, already printed as kubectl prints it (a bad name as a usage
// error), nothing is left open; else the caller closes c.
func (o *apiOptions) podOf(ctx context.Context, s Streams, arg string) (c *client.Client, pod *v1.Pod, err error) {
	name, err := podName(arg)
	if err != nil {
		return nil, nil, usageError(err)
	}
	c = o.client()
	if pod, err = c.GetPod(ctx, o.namespace, name); err != nil {
		c.Close()
		return nil, nil, report(s, err)
	}
	return c, pod, nil
}

func podName(arg string) (string, error) {
	if kind, name, ok := strings.Cut(arg, "/"); ok {
		if !isPodResource(kind) {
			return "", unknownResource(kind)
		}
		return name, nil
	}
	return arg, nil
}

// usageError is bad input on the command line: exit code 2.
func usageError(err error) error {
	return &ExitError{Code: ExitBadInput, Err: err}
}
