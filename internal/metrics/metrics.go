package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/podward/podward/internal/agent"
	"github.com/podward/podward/internal/model"
	"github.com/podward/podward/internal/podworker"
)

// The buckets of the kubelet's histograms (pkg/kubelet/metrics/metrics.go).
var (
	// podStartupBuckets are the kubelet's podStartupDurationBuckets.
	podStartupBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}
	// defBuckets are component-base's DefBuckets, Prometheus' defaults.
	defBuckets = prometheus.DefBuckets
)

// The buckets of podward's own histograms.
var (
	// deferBuckets span a defer container's run, from a flush of a few
	// milliseconds to a long drain.
	deferBuckets = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800}
	// graceLeftBuckets: 0 counts the pods whose grace period ran out.
	graceLeftBuckets = []float64{0, 0.1, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600}
	// checkpointBuckets span a bbolt commit, from the page cache to a slow
	// fsync.
	checkpointBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}
)

// containerTypes are the kubelet's container_type label values by role:
// sidecars are init containers to the kubelet; defer containers are
// podward's own.
var containerTypes = map[model.Role]string{
	model.RoleInit:    "init_container",
	model.RoleSidecar: "init_container",
	model.RoleMain:    "container",
	model.RoleDefer:   "defer_container",
	// The kubelet's own value for them (pkg/kubelet/metrics).
	model.RoleEphemeral: "ephemeral_container",
}

// roleCount bounds the arrays indexed by model.Role.
const roleCount = int(model.RoleEphemeral) + 1

// Metrics holds the agent's collectors. Its recording methods are safe for
// concurrent use and never block.
type Metrics struct {
	reg *prometheus.Registry

	podStart    prometheus.Histogram
	workerStart prometheus.Histogram
	sync        []prometheus.Observer // by podworker.SyncOperation
	started     [roleCount]prometheus.Counter
	startErrors [roleCount]*prometheus.CounterVec // curried by container_type
	// restarted by the static label: [0] "false", [1] "true".
	restarted [2]prometheus.Counter

	deferDuration []prometheus.Observer // by podworker.DeferOutcome
	terminations  map[podworker.TerminationReason][]prometheus.Counter
	graceLeft     prometheus.Observer
	checkpoint    prometheus.Observer
	checkpointErr prometheus.Counter
}

// The recorders Metrics is.
var (
	_ podworker.Metrics = (*Metrics)(nil)
	_ agent.Metrics     = (*Metrics)(nil)
)

// New makes the collectors and registers them, with the Go runtime's and
// the process's, on a new registry.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.addWorkerMetrics()
	m.addContainerMetrics()
	m.addTerminationMetrics()
	return m
}

// addWorkerMetrics are the kubelet's pod worker histograms.
func (m *Metrics) addWorkerMetrics() {
	m.podStart = m.histogram(prometheus.HistogramOpts{
		Name:    "kubelet_pod_start_duration_seconds",
		Help:    "Duration in seconds from the agent seeing a pod to the pod's phase first becoming Running.",
		Buckets: podStartupBuckets,
	})
	m.workerStart = m.histogram(prometheus.HistogramOpts{
		Name:    "kubelet_pod_worker_start_duration_seconds",
		Help:    "Duration in seconds from the agent seeing a pod to its pod worker taking it up.",
		Buckets: defBuckets,
	})
	syncVec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "kubelet_pod_worker_duration_seconds",
		Help:    "Duration in seconds of one sync of a pod by its worker, by operation type: create, update, sync or kill.",
		Buckets: defBuckets,
	}, []string{"operation_type"})
	m.reg.MustRegister(syncVec)
	m.sync = make([]prometheus.Observer, len(podworker.SyncOperations)+1)
	for _, op := range podworker.SyncOperations {
		m.sync[op] = syncVec.WithLabelValues(op.String())
	}
}

// addContainerMetrics are the kubelet's start counters and podward's defer
// container histogram.
func (m *Metrics) addContainerMetrics() {
	startedVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_started_containers_total",
		Help: "Cumulative number of container starts tried, by container type.",
	}, []string{"container_type"})
	errorsVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_started_containers_errors_total",
		Help: "Cumulative number of container starts that failed, by container type and error code.",
	}, []string{"container_type", "code"})
	m.reg.MustRegister(startedVec, errorsVec)
	for role, typ := range containerTypes {
		m.started[role] = startedVec.WithLabelValues(typ)
		m.startErrors[role] = errorsVec.MustCurryWith(prometheus.Labels{"container_type": typ})
	}

	restartedVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "kubelet_restarted_pods_total",
		Help: "Number of pods started again under the same UID after they had terminated (static is true for a pod that is not from the cluster's API server).",
	}, []string{"static"})
	m.reg.MustRegister(restartedVec)
	m.restarted = [2]prometheus.Counter{restartedVec.WithLabelValues("false"), restartedVec.WithLabelValues("true")}
	deferVec := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "podward_defer_container_duration_seconds",
		Help:    "How long each instance of a defer container ran, from its start to its exit, by outcome: completed (exit 0), failed, or killed at the end of the grace period.",
		Buckets: deferBuckets,
	}, []string{"outcome"})
	m.reg.MustRegister(deferVec)
	m.deferDuration = make([]prometheus.Observer, len(podworker.DeferOutcomes)+1)
	for _, o := range podworker.DeferOutcomes {
		m.deferDuration[o] = deferVec.WithLabelValues(o.String())
	}
}

// addTerminationMetrics are podward's termination and checkpoint metrics.
func (m *Metrics) addTerminationMetrics() {
	termVec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "podward_pod_terminations_total",
		Help: "Pod terminations that ended, by why they began and by outcome: ended_early (everything stopped before the deadline) or killed_at_deadline (the grace period ran out).",
	}, []string{"reason", "outcome"})
	m.reg.MustRegister(termVec)
	m.terminations = make(map[podworker.TerminationReason][]prometheus.Counter, len(podworker.TerminationReasons))
	for _, r := range podworker.TerminationReasons {
		byOutcome := make([]prometheus.Counter, len(podworker.TerminationOutcomes)+1)
		for _, o := range podworker.TerminationOutcomes {
			byOutcome[o] = termVec.WithLabelValues(string(r), o.String())
		}
		m.terminations[r] = byOutcome
	}
	m.graceLeft = m.histogram(prometheus.HistogramOpts{
		Name:    "podward_pod_termination_grace_left_seconds",
		Help:    "Time left of a pod's grace period when its termination ended (0: it ran out).",
		Buckets: graceLeftBuckets,
	})
	m.checkpoint = m.histogram(prometheus.HistogramOpts{
		Name:    "podward_checkpoint_write_duration_seconds",
		Help:    "Duration in seconds of a pod worker's checkpoint write, which the action it guards waits for (write-ahead).",
		Buckets: checkpointBuckets,
	})
	m.checkpointErr = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "podward_checkpoint_write_errors_total",
		Help: "Pod worker checkpoint writes that failed (a full disk, say).",
	})
	m.reg.MustRegister(m.checkpointErr)
}

func (m *Metrics) histogram(opts prometheus.HistogramOpts) prometheus.Histogram {
	h := prometheus.NewHistogram(opts)
	m.reg.MustRegister(h)
	return h
}

// Handler serves the registry in the Prometheus text format (or what the
// scraper negotiates).
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Gatherer is the registry, for tests and for whoever serves it otherwise.
func (m *Metrics) Gatherer() prometheus.Gatherer { return m.reg }

// WorkerStarted implements podworker.Metrics.
func (m *Metrics) WorkerStarted(seen time.Duration) { m.workerStart.Observe(seen.Seconds()) }

// PodRunning implements podworker.Metrics.
func (m *Metrics) PodRunning(sinceSeen time.Duration) { m.podStart.Observe(sinceSeen.Seconds()) }

// Synced implements podworker.Metrics.
func (m *Metrics) Synced(op podworker.SyncOperation, d time.Duration) {
	if int(op) > 0 && int(op) < len(m.sync) {
		m.sync[op].Observe(d.Seconds())
	}
}

// ContainerStarted implements podworker.Metrics.
func (m *Metrics) ContainerStarted(role model.Role) {
	if c := m.startedOf(role); c != nil {
		c.Inc()
	}
}

func (m *Metrics) startedOf(role model.Role) prometheus.Counter {
	if role <= 0 || int(role) >= roleCount {
		return nil
	}
	return m.started[role]
}

// ContainerStartFailed implements podworker.Metrics. A failure is rare: its
// code is looked up then.
func (m *Metrics) ContainerStartFailed(role model.Role, code string) {
	if role <= 0 || int(role) >= roleCount || m.startErrors[role] == nil {
		return
	}
	m.startErrors[role].WithLabelValues(code).Inc()
}

// DeferExited implements podworker.Metrics.
func (m *Metrics) DeferExited(outcome podworker.DeferOutcome, d time.Duration) {
	if int(outcome) > 0 && int(outcome) < len(m.deferDuration) {
		m.deferDuration[outcome].Observe(d.Seconds())
	}
}

// PodTerminated implements podworker.Metrics.
func (m *Metrics) PodTerminated(reason podworker.TerminationReason, outcome podworker.TerminationOutcome, graceLeft time.Duration) {
	if byOutcome := m.terminations[reason]; int(outcome) > 0 && int(outcome) < len(byOutcome) {
		byOutcome[outcome].Inc()
	}
	m.graceLeft.Observe(graceLeft.Seconds())
}

// CheckpointSaved implements podworker.Metrics.
func (m *Metrics) CheckpointSaved(d time.Duration, err error) {
	m.checkpoint.Observe(d.Seconds())
	if err != nil {
		m.checkpointErr.Inc()
	}
}

// PodRestarted implements agent.Metrics.
func (m *Metrics) PodRestarted(static bool) {
	i := 0
	if static {
		i = 1
	}
	m.restarted[i].Inc()
}
