package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"syscall"
	"time"

	"github.com/podward/podward/internal/sockdir"
)

// ErrNoAgent is matched by the error of any call made while no agent
// listens on the socket: no socket file (NoSocket), or nobody accepting
// on it (Refused).
var ErrNoAgent = errors.New("no podward agent")

// ConnReason says why a call got no answer from the agent.
type ConnReason int

const (
	// NoSocket: nothing at the socket's path.
	NoSocket ConnReason = iota + 1
	// Refused: a socket nobody accepts on, as an agent that was killed
	// leaves (one that stops removes its socket).
	Refused
	// PermissionDenied: the user may not connect to the socket.
	PermissionDenied
	// UnsafeDir: the socket's directory breaks its sockdir rule; the
	// client did not connect.
	UnsafeDir
	// HungUp: the agent closed the connection before it answered.
	HungUp
	// TimedOut: the agent did not answer within the call's timeout.
	TimedOut
	// ConnFailed: any other failure to reach the agent.
	ConnFailed
)

func (r ConnReason) String() string {
	switch r {
	case NoSocket:
		return "NoSocket"
	case Refused:
		return "Refused"
	case PermissionDenied:
		return "PermissionDenied"
	case UnsafeDir:
		return "UnsafeDir"
	case HungUp:
		return "HungUp"
	case TimedOut:
		return "TimedOut"
	case ConnFailed:
		return "ConnFailed"
	default:
		return fmt.Sprintf("ConnReason(%d)", int(r))
	}
}

// ConnError is a call that got no answer from the agent at Socket: it
// could not connect, or the connection failed before an answer came. Its
// message says which, in kubectl's words where kubectl has some ("The
// connection to the server ... was refused - did you specify the right
// host or port?").
type ConnError struct {
	Socket string
	Reason ConnReason
	// Call is the request ("GET /api/v1/pods") once connected: for
	// HungUp and TimedOut.
	Call string
	// Detail completes the message: who may use the socket, for
	// PermissionDenied; how the connection ended, for HungUp; the
	// timeout, for TimedOut.
	Detail string
	Err    error // the cause
}

func (e *ConnError) Error() string {
	switch e.Reason {
	case NoSocket:
		return fmt.Sprintf("The connection to the podward agent at %s failed: the socket does not exist - did you specify the right socket?", e.Socket)
	case Refused:
		return fmt.Sprintf("The connection to the podward agent at %s was refused - did you specify the right socket?", e.Socket)
	case PermissionDenied:
		return fmt.Sprintf("Unable to connect to the podward agent at %s: permission denied%s", e.Socket, e.Detail)
	case UnsafeDir:
		return fmt.Sprintf("Refusing to connect to the podward agent at %s: %v", e.Socket, e.Err)
	case HungUp:
		return fmt.Sprintf("The podward agent at %s hung up before answering %s (%s) - is it stopping, or is it another server?", e.Socket, e.Call, e.Detail)
	case TimedOut:
		return fmt.Sprintf("The podward agent at %s did not answer %s within %s", e.Socket, e.Call, e.Detail)
	default:
		return fmt.Sprintf("Unable to connect to the podward agent at %s: %v", e.Socket, e.Err)
	}
}

// Is makes errors.Is(err, ErrNoAgent) true for NoSocket and Refused.
func (e *ConnError) Is(target error) bool {
	return target == ErrNoAgent && (e.Reason == NoSocket || e.Reason == Refused)
}

func (e *ConnError) Unwrap() error { return e.Err }

// serverClosedIdle is the text of net/http's errServerClosedIdle.
const serverClosedIdle = "http: server closed idle connection"

// dialError classifies a failed connection to socket. A ctx error is
// returned as it is, for callError to tell.
func dialError(socket string, err error) error {
	ce := &ConnError{Socket: socket, Reason: ConnFailed, Err: err}
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, syscall.ENOENT):
		ce.Reason = NoSocket
	case errors.Is(err, syscall.ECONNREFUSED):
		ce.Reason = Refused
	case errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM):
		ce.Reason = PermissionDenied
		ce.Detail = " - run as a user the socket lets in"
		if fi, statErr := os.Stat(socket); statErr == nil {
			ce.Detail = fmt.Sprintf(" (the socket is %v, owned by %s) - run as its owner or a member of its group", fi.Mode(), sockdir.DescribeOwner(fi))
		}
	}
	return ce
}

// callError classifies the failure of req with the client's ctx, made
// from the caller's parent. The caller's own end (Ctrl-C, its deadline)
// is said as such; the client's timeout, a hang-up and a failure to
// connect are each a *ConnError.
func (c *Client) callError(parent, ctx context.Context, req request, err error) error {
	call := req.method + " " + req.path
	var ce *ConnError
	if errors.As(err, &ce) {
		return ce
	}
	if parentErr := parent.Err(); parentErr != nil {
		return fmt.Errorf("%s: %w", call, parentErr)
	}
	var ne net.Error
	if ctx.Err() != nil || (errors.As(err, &ne) && ne.Timeout()) {
		return &ConnError{Socket: c.socket, Reason: TimedOut, Call: call, Detail: c.timeout.Round(time.Millisecond).String(), Err: err}
	}
	cause := err
	var ue *url.Error
	if errors.As(err, &ue) {
		cause = ue.Err
	}
	// net.ErrClosed too: the transport closes the connection once the
	// server's close reached one of its loops, and the other may read on
	// it then. The client closes none itself before its ctx ends (above).
	for _, hangUp := range []error{io.EOF, io.ErrUnexpectedEOF, syscall.ECONNRESET, syscall.EPIPE, net.ErrClosed} {
		if errors.Is(err, hangUp) {
			return &ConnError{Socket: c.socket, Reason: HungUp, Call: call, Detail: hangUp.Error(), Err: err}
		}
	}
	// net/http's error for a connection closed before the request was
	// sent is not exported: its text is all there is to tell it by.
	if cause.Error() == serverClosedIdle {
		return &ConnError{Socket: c.socket, Reason: HungUp, Call: call, Detail: "closed before the request was sent", Err: err}
	}
	return &ConnError{Socket: c.socket, Reason: ConnFailed, Call: call, Err: cause}
}
