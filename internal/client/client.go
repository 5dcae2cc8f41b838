package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/podward/podward/internal/sockdir"
)

// SocketEnv is the environment variable that names the agent's socket.
const SocketEnv = "PODWARD_SOCKET"

// RootSocket is the agent's socket when it runs as root.
const RootSocket = sockdir.RootDir + "/podward.sock"

// DefaultSocket is the socket the CLI talks to when --socket is not given:
// $PODWARD_SOCKET if set; RootSocket for root; otherwise
// $XDG_RUNTIME_DIR/podward/podward.sock, or /tmp/podward-<uid>/podward.sock
// without XDG_RUNTIME_DIR. `podward serve` listens on the same default.
// The client refuses a per-user directory that is not the user's own
// private one (sockdir.Private), as the agent does.
func DefaultSocket() string {
	if s := os.Getenv(SocketEnv); s != "" {
		return s
	}
	if os.Geteuid() == 0 {
		return RootSocket
	}
	if dir := sockdir.RuntimeUserDir(); dir != "" {
		return filepath.Join(dir, "podward.sock")
	}
	return filepath.Join(sockdir.TempUserDir(), "podward.sock")
}

// DefaultTimeout bounds each call that is not a stream.
const DefaultTimeout = 30 * time.Second

// Client talks to one agent. Its methods are safe for concurrent use. A
// failure reported by the agent is an *apierrors.StatusError carrying the
// agent's metav1.Status, so apierrors.IsNotFound and friends work on it.
type Client struct {
	socket  string
	timeout time.Duration
	tr      *http.Transport
	hc      *http.Client
}

// New returns a client of the agent listening on socket.
func New(socket string) *Client {
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			// Checked at each connection: the agent may have been
			// restarted, or the directory replaced, since the last.
			if err := sockdir.Check(filepath.Dir(socket)); err != nil {
				return nil, &ConnError{Socket: socket, Reason: UnsafeDir, Err: err}
			}
			var d net.Dialer
			conn, err := d.DialContext(ctx, "unix", socket)
			if err != nil {
				return nil, dialError(socket, err)
			}
			return conn, nil
		},
		ResponseHeaderTimeout: DefaultTimeout,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       time.Minute,
	}
	return &Client{socket: socket, timeout: DefaultTimeout, tr: tr, hc: &http.Client{Transport: tr}}
}

// Socket is the socket the client connects to.
func (c *Client) Socket() string { return c.socket }

// Close releases the idle connections. Streams still open stay open.
func (c *Client) Close() { c.tr.CloseIdleConnections() }

// request is one API call.
type request struct {
	method      string
	path        string
	query       url.Values
	body        []byte
	contentType string
	stream      bool // no overall timeout: the caller reads the body as it comes
}

// do sends req and returns the response when its status is a success; the
// caller closes the body. cancel must be called once the body is read.
func (c *Client) do(parent context.Context, req request) (resp *http.Response, cancel context.CancelFunc, err error) {
	ctx, cancel := parent, context.CancelFunc(func() {})
	if !req.stream {
		ctx, cancel = context.WithTimeout(parent, c.timeout)
	}
	u := "http://podward" + req.path
	if len(req.query) > 0 {
		u += "?" + req.query.Encode()
	}
	var body io.Reader
	if req.body != nil {
		body = bytes.NewReader(req.body)
	}
	hr, err := http.NewRequestWithContext(ctx, req.method, u, body)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if req.contentType != "" {
		hr.Header.Set("Content-Type", req.contentType)
	}
	resp, err = c.hc.Do(hr)
	if err != nil {
		// Classified before cancel: once canceled, ctx says "context
		// canceled" whatever happened.
		err = c.callError(parent, ctx, req, err)
		cancel()
		return nil, nil, err
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		defer cancel()
		return nil, nil, statusError(resp)
	}
	return resp, cancel, nil
}

// statusError reads the metav1.Status of a failed response; a body that is
// not a Status still makes one, with the code and the body as message.
func statusError(resp *http.Response) error {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var st metav1.Status
	if err := json.Unmarshal(body, &st); err != nil || st.Kind != "Status" {
		msg := strings.TrimSpace(string(body))
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		st = metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    int32(resp.StatusCode),
			Reason:  reasonForCode(resp.StatusCode),
			Message: msg,
		}
	}
	if st.Code == 0 {
		st.Code = int32(resp.StatusCode)
	}
	return &apierrors.StatusError{ErrStatus: st}
}

func reasonForCode(code int) metav1.StatusReason {
	switch code {
	case http.StatusBadRequest:
		return metav1.StatusReasonBadRequest
	case http.StatusNotFound:
		return metav1.StatusReasonNotFound
	case http.StatusConflict:
		return metav1.StatusReasonConflict
	case http.StatusMethodNotAllowed:
		return metav1.StatusReasonMethodNotAllowed
	case http.StatusUnprocessableEntity:
		return metav1.StatusReasonInvalid
	case http.StatusUnsupportedMediaType:
		return metav1.StatusReasonUnsupportedMediaType
	default:
		return metav1.StatusReasonUnknown
	}
}

// call does a non-stream request and decodes the JSON answer into out.
func (c *Client) call(ctx context.Context, req request, out any) (http.Header, error) {
	resp, cancel, err := c.do(ctx, req)
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return nil, fmt.Errorf("%s %s: decode the answer: %w", req.method, req.path, err)
	}
	return resp.Header, nil
}

// streamBody closes the response body and releases the request.
type streamBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *streamBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
