package observe

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Metrics are the Prometheus metrics of a process: runs, model and tool
// calls, the durable queue, SSE clients, the database pool and the Go
// runtime, on a registry of their own (no global state). A nil *Metrics
// records nothing.
type Metrics struct {
	registry *prometheus.Registry

	runsStarted   *prometheus.CounterVec
	runsFinished  *prometheus.CounterVec
	runDuration   *prometheus.HistogramVec
	modelCalls    *prometheus.CounterVec
	modelDuration *prometheus.HistogramVec
	tokens        *prometheus.CounterVec
	cost          *prometheus.CounterVec
	toolCalls     *prometheus.CounterVec
	toolErrors    *prometheus.CounterVec
	toolDuration  *prometheus.HistogramVec
	retries       *prometheus.CounterVec
	takeovers     prometheus.Counter
	sseClients    prometheus.Gauge
	spansDrop     prometheus.Counter
	spansFailed   prometheus.Counter
}

// latencyBuckets are the buckets of run and call latencies, in seconds:
// from 5 ms to 10 minutes.
var latencyBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}

// NewMetrics returns the metrics, registered with the Go runtime's and the
// process's collectors.
func NewMetrics() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{registry: r}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "agnogo", Name: name, Help: help}, labels)
		r.MustRegister(c)
		return c
	}
	histogram := func(name, help string, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "agnogo", Name: name, Help: help, Buckets: latencyBuckets}, labels)
		r.MustRegister(h)
		return h
	}
	m.runsStarted = counter("runs_started_total", "Runs started (executions: a continued run counts again), by runner kind and id.", "kind", "runner")
	m.runsFinished = counter("runs_finished_total", "Runs finished, by runner kind and id, final status and error type.", "kind", "runner", "status", "error_type")
	m.runDuration = histogram("run_duration_seconds", "Wall time of a run's execution, by runner kind and id.", "kind", "runner")
	m.modelCalls = counter("model_calls_total", "Model calls, by provider, model and error type (empty when it succeeded).", "provider", "model", "error_type")
	m.modelDuration = histogram("model_call_duration_seconds", "Latency of a model call, by provider and model.", "provider", "model")
	m.tokens = counter("model_tokens_total", "Tokens of model calls, by provider, model and direction (input, output).", "provider", "model", "direction")
	m.cost = counter("model_cost_usd_total", "Cost of model calls in US dollars, by provider and model.", "provider", "model")
	m.toolCalls = counter("tool_calls_total", "Tool calls, by tool.", "tool")
	m.toolErrors = counter("tool_errors_total", "Failed tool calls, by tool.", "tool")
	m.toolDuration = histogram("tool_call_duration_seconds", "Latency of a tool call, by tool.", "tool")
	m.retries = counter("queue_retries_total", "Background runs started again after a failed attempt, by runner kind.", "kind")
	m.takeovers = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "agnogo", Name: "queue_takeovers_total",
		Help: "Background runs taken over from a replica that stopped heartbeating."})
	m.sseClients = prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "agnogo", Name: "sse_clients", Help: "Server-Sent Events clients connected."})
	m.spansDrop = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "agnogo", Name: "trace_spans_dropped_total",
		Help: "Spans dropped because the export queue was full."})
	m.spansFailed = prometheus.NewCounter(prometheus.CounterOpts{Namespace: "agnogo", Name: "trace_spans_export_failed_total",
		Help: "Spans an exporter failed to export."})
	r.MustRegister(m.takeovers, m.sseClients, m.spansDrop, m.spansFailed,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// Register adds collectors (a database pool's, the queue's gauges).
func (m *Metrics) Register(cs ...prometheus.Collector) error {
	if m == nil {
		return nil
	}
	for _, c := range cs {
		if err := m.registry.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// GaugeFunc registers a gauge read when the metrics are scraped (the
// queue's depth, the runs executing).
func (m *Metrics) GaugeFunc(name, help string, read func() float64) error {
	if m == nil {
		return nil
	}
	return m.registry.Register(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "agnogo", Name: name, Help: help}, read))
}

// SSEClient counts an SSE client connecting (+1) or leaving (-1).
func (m *Metrics) SSEClient(delta int) {
	if m == nil {
		return
	}
	m.sseClients.Add(float64(delta))
}

// Retried counts a background run started again after a failure.
func (m *Metrics) Retried(kind string) {
	if m == nil {
		return
	}
	m.retries.WithLabelValues(kind).Inc()
}

// TookOver counts a background run taken over from a dead replica.
func (m *Metrics) TookOver() {
	if m == nil {
		return
	}
	m.takeovers.Inc()
}

func (m *Metrics) runStarted(kind, runner string) {
	if m == nil {
		return
	}
	m.runsStarted.WithLabelValues(kind, runner).Inc()
}

func (m *Metrics) runFinished(kind, runner, status, errorType string, d time.Duration) {
	if m == nil {
		return
	}
	m.runsFinished.WithLabelValues(kind, runner, status, errorType).Inc()
	m.runDuration.WithLabelValues(kind, runner).Observe(d.Seconds())
}

func (m *Metrics) modelCalled(provider, model string, d time.Duration, usage *run.Metrics, errorType string) {
	if m == nil {
		return
	}
	m.modelCalls.WithLabelValues(provider, model, errorType).Inc()
	m.modelDuration.WithLabelValues(provider, model).Observe(d.Seconds())
	if usage == nil {
		return
	}
	m.tokens.WithLabelValues(provider, model, "input").Add(float64(usage.InputTokens))
	m.tokens.WithLabelValues(provider, model, "output").Add(float64(usage.OutputTokens))
	if usage.Cost != nil {
		m.cost.WithLabelValues(provider, model).Add(*usage.Cost)
	}
}

func (m *Metrics) toolCalled(tool string, d time.Duration, failed bool) {
	if m == nil {
		return
	}
	m.toolCalls.WithLabelValues(tool).Inc()
	if failed {
		m.toolErrors.WithLabelValues(tool).Inc()
	}
	m.toolDuration.WithLabelValues(tool).Observe(d.Seconds())
}

func (m *Metrics) spansDropped() {
	if m == nil {
		return
	}
	m.spansDrop.Inc()
}

func (m *Metrics) spanExportFailed(n int) {
	if m == nil {
		return
	}
	m.spansFailed.Add(float64(n))
}

// poolCollector reads a store's connection pools when the metrics are
// scraped.
type poolCollector struct {
	store                      storage.PoolStatser
	open, inUse, idle, maxOpen *prometheus.Desc
	waits, waited              *prometheus.Desc
}

// RegisterPools adds a store's connection pools to the metrics:
// agnogo_db_connections by pool and state (in_use, idle), the pool's
// bound, and the waits for a connection.
func (m *Metrics) RegisterPools(store storage.PoolStatser) error {
	if m == nil || store == nil {
		return nil
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("agnogo_db_"+name, help, append([]string{"pool"}, labels...), nil)
	}
	return m.registry.Register(&poolCollector{
		store:   store,
		open:    desc("connections_open", "Database connections open."),
		inUse:   desc("connections_in_use", "Database connections in use."),
		idle:    desc("connections_idle", "Database connections idle."),
		maxOpen: desc("connections_max", "The pool's bound on connections."),
		waits:   desc("connection_waits_total", "Times a caller waited for a database connection."),
		waited:  desc("connection_wait_seconds_total", "Time spent waiting for a database connection."),
	})
}

// Describe implements [prometheus.Collector].
func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.open, c.inUse, c.idle, c.maxOpen, c.waits, c.waited} {
		ch <- d
	}
}

// Collect implements [prometheus.Collector].
func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	for _, p := range c.store.PoolStats() {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(p.Open), p.Name)
		ch <- prometheus.MustNewConstMetric(c.inUse, prometheus.GaugeValue, float64(p.InUse), p.Name)
		ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(p.Idle), p.Name)
		ch <- prometheus.MustNewConstMetric(c.maxOpen, prometheus.GaugeValue, float64(p.MaxOpen), p.Name)
		ch <- prometheus.MustNewConstMetric(c.waits, prometheus.CounterValue, float64(p.WaitCount), p.Name)
		ch <- prometheus.MustNewConstMetric(c.waited, prometheus.CounterValue, p.WaitDuration.Seconds(), p.Name)
	}
}
