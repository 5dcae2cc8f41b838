package client

import (
	"context"
	"net/http"
	"net/url"

	v1 "k8s.io/api/core/v1"
)

func eventsPath(ns string) string {
	if ns == "" {
		return "/api/v1/events"
	}
	return "/api/v1/namespaces/" + url.PathEscape(ns) + "/events"
}

// ListEvents lists the events the agent keeps for ns ("" for all) that
// match opts (e.g. FieldSelector "involvedObject.name=web").
func (c *Client) ListEvents(ctx context.Context, ns string, opts ListOptions) (*v1.EventList, error) {
	var list v1.EventList
	if _, err := c.call(ctx, request{method: http.MethodGet, path: eventsPath(ns), query: opts.query(false)}, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// WatchEvents streams, as ADDED events, every event recorded from the
// moment this call returns. Kept events are not replayed: to see them all,
// watch first, then list, and skip the listed ones the watch repeats.
func (c *Client) WatchEvents(ctx context.Context, ns string, opts ListOptions) (*Watch[v1.Event], error) {
	resp, cancel, err := c.do(ctx, request{method: http.MethodGet, path: eventsPath(ns), query: opts.query(true), stream: true})
	if err != nil {
		return nil, err
	}
	return newWatch[v1.Event](resp.Body, cancel), nil
}
