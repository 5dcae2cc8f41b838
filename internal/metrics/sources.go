package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/podward/podward/internal/podworker"
	"github.com/podward/podward/internal/shutdown"
)

// Sources are what the scrape-time metrics read; each is optional.
type Sources struct {
	// Pods counts the pods and containers (*podworker.Workers).
	Pods interface{ Census() podworker.Census }
	// Store is the durable state's size (*store.Store).
	Store interface{ Size() (int64, error) }
	// Shutdown is the node shutdown (*shutdown.Manager).
	Shutdown interface{ Status() shutdown.Status }
}

// AddSources registers the metrics read from src at each scrape: the
// running pods and containers (the kubelet's gauges), the store's size,
// and the node shutdown's start and end (the kubelet's gauges). It is
// called once, before the registry is served.
func (m *Metrics) AddSources(src Sources) {
	if src.Pods != nil {
		m.reg.MustRegister(&censusCollector{src: src.Pods})
	}
	if st := src.Store; st != nil {
		m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "podward_store_size_bytes",
			Help: "Size in bytes of the agent's state database (pods, checkpoints, events).",
		}, func() float64 {
			n, err := st.Size()
			if err != nil {
				return 0
			}
			return float64(n)
		}))
	}
	if sh := src.Shutdown; sh != nil {
		m.reg.MustRegister(&shutdownCollector{src: sh})
	}
}

var (
	runningPodsDesc = prometheus.NewDesc("kubelet_running_pods",
		"Number of pods that may have running containers: admitted and not yet terminated.", nil, nil)
	runningContainersDesc = prometheus.NewDesc("kubelet_running_containers",
		"Number of containers by the state of their latest instance: running, or exited (of pods the agent still holds).", []string{"container_state"}, nil)
	shutdownStartDesc = prometheus.NewDesc("kubelet_graceful_shutdown_start_time_seconds",
		"Time the last node shutdown began, in seconds since the Unix epoch.", nil, nil)
	shutdownEndDesc = prometheus.NewDesc("kubelet_graceful_shutdown_end_time_seconds",
		"Time the last node shutdown ended (its last group, or its cancel), in seconds since the Unix epoch.", nil, nil)
)

// censusCollector reports the workers' census at each scrape.
type censusCollector struct {
	src interface{ Census() podworker.Census }
}

func (c *censusCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- runningPodsDesc
	ch <- runningContainersDesc
}

func (c *censusCollector) Collect(ch chan<- prometheus.Metric) {
	n := c.src.Census()
	ch <- prometheus.MustNewConstMetric(runningPodsDesc, prometheus.GaugeValue, float64(n.Pods))
	ch <- prometheus.MustNewConstMetric(runningContainersDesc, prometheus.GaugeValue, float64(n.Running), "running")
	ch <- prometheus.MustNewConstMetric(runningContainersDesc, prometheus.GaugeValue, float64(n.Exited), "exited")
}

// shutdownCollector reports the last node shutdown's times, once there
// was one, as the kubelet sets its gauges when a shutdown begins and ends.
type shutdownCollector struct {
	src interface{ Status() shutdown.Status }
}

func (c *shutdownCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- shutdownStartDesc
	ch <- shutdownEndDesc
}

func (c *shutdownCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.src.Status()
	if st.BeganAt != nil {
		ch <- prometheus.MustNewConstMetric(shutdownStartDesc, prometheus.GaugeValue, float64(st.BeganAt.UnixNano())/1e9)
	}
	if st.EndedAt != nil {
		ch <- prometheus.MustNewConstMetric(shutdownEndDesc, prometheus.GaugeValue, float64(st.EndedAt.UnixNano())/1e9)
	}
}
