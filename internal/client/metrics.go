package client

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/podward/podward/internal/wire"
)

func podMetricsPath(ns string) string {
	if ns == "" {
		return wire.MetricsPodsPath
	}
	return strings.Replace(wire.MetricsNamespacedPodsPath, "{ns}", url.PathEscape(ns), 1)
}

// ListPodMetrics reads the usage of the running pods of ns ("" for every
// namespace): each container's CPU rate and memory working set. The first
// call may take about a second, while the agent takes a second sample.
func (c *Client) ListPodMetrics(ctx context.Context, ns string) (*wire.PodMetricsList, error) {
	var list wire.PodMetricsList
	if _, err := c.call(ctx, request{method: http.MethodGet, path: podMetricsPath(ns)}, &list); err != nil {
		return nil, err
	}
	return &list, nil
}

// GetPodMetrics reads the usage of the pod ns/name; NotFound when it has
// none (it does not run, or is unknown).
func (c *Client) GetPodMetrics(ctx context.Context, ns, name string) (*wire.PodMetrics, error) {
	var m wire.PodMetrics
	if _, err := c.call(ctx, request{method: http.MethodGet, path: podMetricsPath(ns) + "/" + url.PathEscape(name)}, &m); err != nil {
		return nil, err
	}
	return &m, nil
}
