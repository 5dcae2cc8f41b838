package client

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	spdystream "k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
)

// pingPeriod keeps an idle stream's connection alive, as client-go's.
const pingPeriod = 5 * time.Second

// Exec runs a command in a container of pod ns/name through the agent
// (the pods' exec subresource, over SPDY), with the streams of streams,
// and returns once it exited and its output was copied, or ctx ended. A
// non-zero exit is a k8s.io/client-go/util/exec.CodeExitError carrying
// the code, as with kubectl. A refusal before the stream opens is an
// *apierrors.StatusError (an unknown pod) or an error that says "unable
// to upgrade connection: " and the agent's words.
func (c *Client) Exec(ctx context.Context, ns, name string, opts v1.PodExecOptions, streams remotecommand.StreamOptions) error {
	q := url.Values{}
	if opts.Container != "" {
		q.Set("container", opts.Container)
	}
	for _, arg := range opts.Command {
		q.Add("command", arg)
	}
	for param, on := range map[string]bool{"stdin": opts.Stdin, "stdout": opts.Stdout, "stderr": opts.Stderr, "tty": opts.TTY} {
		q.Set(param, strconv.FormatBool(on))
	}
	rt, err := c.upgrader()
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewSPDYExecutorForTransports(rt, rt, http.MethodPost, c.streamURL(ns, name, "exec", q))
	if err != nil {
		return fmt.Errorf("exec in pod %s/%s: %w", ns, name, err)
	}
	return ex.StreamWithContext(ctx, streams)
}

// Attach attaches to a container of pod ns/name through the agent (the
// pods' attach subresource), with streams, until the container exits or
// ctx ends.
func (c *Client) Attach(ctx context.Context, ns, name string, opts v1.PodAttachOptions, streams remotecommand.StreamOptions) error {
	q := url.Values{}
	if opts.Container != "" {
		q.Set("container", opts.Container)
	}
	for param, on := range map[string]bool{"stdin": opts.Stdin, "stdout": opts.Stdout, "stderr": opts.Stderr, "tty": opts.TTY} {
		q.Set(param, strconv.FormatBool(on))
	}
	rt, err := c.upgrader()
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewSPDYExecutorForTransports(rt, rt, http.MethodPost, c.streamURL(ns, name, "attach", q))
	if err != nil {
		return fmt.Errorf("attach to pod %s/%s: %w", ns, name, err)
	}
	return ex.StreamWithContext(ctx, streams)
}

// PortForwardDialer opens the SPDY connections of port-forwards to pod
// ns/name through the agent (the pods' portforward subresource), for
// k8s.io/client-go/tools/portforward.
func (c *Client) PortForwardDialer(ns, name string) (httpstream.Dialer, error) {
	rt, err := c.upgrader()
	if err != nil {
		return nil, err
	}
	return spdy.NewDialer(rt, &http.Client{Transport: rt}, http.MethodPost, c.streamURL(ns, name, "portforward", nil)), nil
}

// upgrader is a SPDY round tripper that dials the agent's socket (through
// the client's transport, which checks its directory at each connection).
// One serves one connection.
func (c *Client) upgrader() (*spdystream.SpdyRoundTripper, error) {
	return spdystream.NewRoundTripperWithConfig(spdystream.RoundTripperConfig{PingPeriod: pingPeriod, UpgradeTransport: c.tr})
}

func (c *Client) streamURL(ns, name, sub string, q url.Values) *url.URL {
	return &url.URL{
		Scheme:   "http",
		Host:     "podward",
		Path:     "/api/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(name) + "/" + sub,
		RawQuery: q.Encode(),
	}
}
