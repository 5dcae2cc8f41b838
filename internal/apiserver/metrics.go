package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/wire"
)

// UsageReporter is the optional ability of a Backend to report the pods'
// resource usage (*agent.Agent's PodMetrics), served at the resource
// metrics API's paths for `podward top pod`. Without it those paths are
// 404.
type UsageReporter interface {
	PodMetrics(ctx context.Context, ns, name string) ([]wire.PodMetrics, error)
}

var _ UsageReporter = (*agent.Agent)(nil)

// podMetricsResource is metrics-server's name of the resource in its
// NotFound errors.
var podMetricsResource = schema.GroupResource{Group: "metrics.k8s.io", Resource: "podmetrics"}

// handleMetrics registers the usage paths when the backend reports usage.
func (s *Server) handleMetrics() {
	if _, ok := s.b.(UsageReporter); !ok {
		return
	}
	s.handle(wire.MetricsPodsPath, route{http.MethodGet: s.listPodMetrics})
	s.handle(wire.MetricsNamespacedPodsPath, route{http.MethodGet: s.listPodMetrics})
	s.handle(wire.MetricsNamespacedPodsPath+"/{name}", route{http.MethodGet: s.getPodMetrics})
}

func (s *Server) listPodMetrics(w http.ResponseWriter, r *http.Request) error {
	items, err := s.b.(UsageReporter).PodMetrics(r.Context(), r.PathValue("ns"), "")
	if err != nil {
		return metricsError(err, "")
	}
	list := wire.PodMetricsList{
		TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: wire.MetricsGroupVersion},
		Items:    items,
	}
	if list.Items == nil {
		list.Items = []wire.PodMetrics{}
	}
	return writeJSON(w, http.StatusOK, &list)
}

func (s *Server) getPodMetrics(w http.ResponseWriter, r *http.Request) error {
	ns, name := r.PathValue("ns"), r.PathValue("name")
	items, err := s.b.(UsageReporter).PodMetrics(r.Context(), ns, name)
	if err != nil {
		return metricsError(err, ns+"/"+name)
	}
	return writeJSON(w, http.StatusOK, &items[0])
}

// metricsError is the Status of a failed usage request: metrics-server's
// NotFound for a pod without metrics (named ns/name), 503 when the runtime
// reports no usage.
func metricsError(err error, name string) error {
	switch {
	case errors.Is(err, agent.ErrNoStats):
		return apierrors.NewServiceUnavailable(err.Error())
	case errors.Is(err, agent.ErrNotFound):
		return apierrors.NewNotFound(podMetricsResource, name)
	default:
		return fmt.Errorf("pod metrics: %w", err)
	}
}
