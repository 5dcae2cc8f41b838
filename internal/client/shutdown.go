package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"time"
)

// shutdownPath is the agent's node shutdown endpoint (docs/api.md).
const shutdownPath = "/podward/v1/shutdown"

// NodeShutdown is a node shutdown as the agent reports it (the wire form
// of internal/shutdown's Status). State is "" when there was none since
// the agent's start or the last reboot, else Terminating (groups being
// terminated), Terminated (every group done: the machine may go down) or
// Cancelled.
type NodeShutdown struct {
	State   string              `json:"state,omitempty"`
	Reason  string              `json:"reason,omitempty"`
	BeganAt *time.Time          `json:"beganAt,omitempty"`
	EndedAt *time.Time          `json:"endedAt,omitempty"`
	Groups  []NodeShutdownGroup `json:"groups,omitempty"`
}

// NodeShutdownGroup is one priority group of a shutdown.
type NodeShutdownGroup struct {
	Priority  int32             `json:"priority"`
	Budget    string            `json:"budget"`
	StartedAt *time.Time        `json:"startedAt,omitempty"`
	EndedAt   *time.Time        `json:"endedAt,omitempty"`
	Pods      []NodeShutdownPod `json:"pods,omitempty"`
}

// NodeShutdownPod is one pod of a group, with the grace period the
// shutdown gives it and its deadline once its group started.
type NodeShutdownPod struct {
	Namespace          string     `json:"namespace"`
	Name               string     `json:"name"`
	UID                string     `json:"uid"`
	Priority           int32      `json:"priority"`
	GracePeriodSeconds int64      `json:"gracePeriodSeconds"`
	Deadline           *time.Time `json:"deadline,omitempty"`
}

// BeginShutdown asks the agent to shut the node down, as logind's
// PrepareForShutdown would: its pods are terminated by priority group.
// grace, when set and positive, bounds the whole shutdown (seconds); nil
// or 0 is the agent's configured budgets. A shutdown in progress is left as
// it is. It returns the shutdown as it begins.
func (c *Client) BeginShutdown(ctx context.Context, grace *int64) (*NodeShutdown, error) {
	body, err := json.Marshal(struct {
		GracePeriodSeconds *int64 `json:"gracePeriodSeconds,omitempty"`
	}{grace})
	if err != nil {
		return nil, err
	}
	var out NodeShutdown
	if _, err := c.call(ctx, request{method: http.MethodPost, path: shutdownPath, body: bytes.Clone(body), contentType: "application/json"}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// GetShutdown returns the node's last shutdown.
func (c *Client) GetShutdown(ctx context.Context) (*NodeShutdown, error) {
	var out NodeShutdown
	if _, err := c.call(ctx, request{method: http.MethodGet, path: shutdownPath}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// WaitShutdown returns the node's last shutdown once it is over (every
// group done, or cancelled), or at once when none began. Only ctx bounds
// the wait.
func (c *Client) WaitShutdown(ctx context.Context) (*NodeShutdown, error) {
	resp, cancel, err := c.do(ctx, request{method: http.MethodGet, path: shutdownPath, query: url.Values{"wait": {"true"}}, stream: true})
	if err != nil {
		return nil, err
	}
	defer cancel()
	defer resp.Body.Close()
	var out NodeShutdown
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, c.callError(ctx, ctx, request{method: http.MethodGet, path: shutdownPath}, err)
	}
	return &out, nil
}

// CancelShutdown calls the node's shutdown in progress off and returns it.
func (c *Client) CancelShutdown(ctx context.Context) (*NodeShutdown, error) {
	var out NodeShutdown
	if _, err := c.call(ctx, request{method: http.MethodDelete, path: shutdownPath}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
