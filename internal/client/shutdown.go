package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"

	"github.com/podward/podward/internal/wire"
)

// BeginShutdown asks the agent to shut the node down, as logind's
// PrepareForShutdown would: its pods are terminated by priority group.
// grace, when set and positive, bounds the whole shutdown (seconds); nil
// or 0 is the agent's configured budgets. A shutdown in progress is left as
// it is. It returns the shutdown as it begins.
func (c *Client) BeginShutdown(ctx context.Context, grace *int64) (*wire.NodeShutdown, error) {
	body, err := json.Marshal(wire.ShutdownRequest{GracePeriodSeconds: grace})
	if err != nil {
		return nil, err
	}
	var out wire.NodeShutdown
	if _, err := c.call(ctx, request{method: http.MethodPost, path: wire.ShutdownPath, body: bytes.Clone(body), contentType: "application/json"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetShutdown returns the node's last shutdown.
func (c *Client) GetShutdown(ctx context.Context) (*wire.NodeShutdown, error) {
	var out wire.NodeShutdown
	if _, err := c.call(ctx, request{method: http.MethodGet, path: wire.ShutdownPath}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// WaitShutdown returns the node's last shutdown once it is over (every
// group done, or cancelled), or at once when none began. Only ctx bounds
// the wait.
func (c *Client) WaitShutdown(ctx context.Context) (*wire.NodeShutdown, error) {
	resp, cancel, err := c.do(ctx, request{method: http.MethodGet, path: wire.ShutdownPath, query: url.Values{"wait": {"true"}}, stream: true})
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	var out wire.NodeShutdown
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, c.callError(ctx, ctx, request{method: http.MethodGet, path: wire.ShutdownPath}, err)
	}
	return &out, nil
}

// CancelShutdown calls the node's shutdown in progress off and returns it.
func (c *Client) CancelShutdown(ctx context.Context) (*wire.NodeShutdown, error) {
	var out wire.NodeShutdown
	if _, err := c.call(ctx, request{method: http.MethodDelete, path: wire.ShutdownPath}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
