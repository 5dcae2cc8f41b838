package client

import (
	"context"
	"net/http"
	"net/url"

	"github.com/podward/podward/internal/timeline"
)

// timelinePath is a pod's timeline: podward's own endpoint (docs/api.md).
func timelinePath(ns, name string) string {
	return "/podward/v1/namespaces/" + url.PathEscape(ns) + "/pods/" + url.PathEscape(name) + "/timeline"
}

// PodTimeline returns the timeline of the pod ns/name — its container
// instances and marks, as the agent keeps them — also of a pod removed
// whose records the agent still keeps (Gone). NotFound when it has none.
func (c *Client) PodTimeline(ctx context.Context, ns, name string) (*timeline.Pod, error) {
	var p timeline.Pod
	if _, err := c.call(ctx, request{method: http.MethodGet, path: timelinePath(ns, name)}, &p); err != nil {
		return nil, err
	}
	return &p, nil
}
