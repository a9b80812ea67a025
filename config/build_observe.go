package config

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/storage"
)

// traceRetentionInterval is how often traces past tracing.retention_days
// are deleted.
const traceRetentionInterval = time.Hour

// buildObserver makes the OS's observer: spans when tracing is on (to the
// database, and to the OTLP endpoint when there is one), the Prometheus
// metrics unless prometheus.enabled is false, and a log line per run on
// opts.RunLog. With tracing it also sends model requests with their
// traceparent, and deletes traces past their retention every hour.
func (f *File) buildObserver(ctx context.Context, built *OS, opts *BuildOptions) error {
	cfg := observe.Config{RunLog: opts.RunLog}
	if f.Prometheus.Enabled {
		cfg.Metrics = observe.NewMetrics()
		if pools, ok := built.Store.(storage.PoolStatser); ok {
			if err := cfg.Metrics.RegisterPools(pools); err != nil {
				return fmt.Errorf("prometheus: %w", err)
			}
		}
	}
	traceStore, _ := built.Store.(storage.TraceStore)
	if t := f.Tracing; t != nil && t.Enabled {
		rate := t.SampleRate
		cfg.Tracing = &observe.TracingConfig{Store: traceStore, OTLPEndpoint: t.OTLPEndpoint, OTLPHeaders: t.Headers, SampleRate: &rate,
			ServiceName: f.Name}
	}
	obs, err := observe.New(ctx, cfg)
	if err != nil {
		return &Error{Source: f.Source, Line: f.tracingLine(), Message: fmt.Sprintf("tracing: %v", err)}
	}
	built.Observer = obs
	if !obs.Tracing() {
		return nil
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = &http.Client{Transport: observe.Transport(http.DefaultTransport)}
	}
	if traceStore != nil && f.Tracing.RetentionDays > 0 {
		stop := make(chan struct{})
		done := make(chan struct{})
		go keepTraces(traceStore, time.Duration(f.Tracing.RetentionDays)*24*time.Hour, opts.Logger, stop, done)
		built.stopRetention = func() { close(stop); <-done }
	}
	return nil
}

// tracingLine is the line of the tracing key, for errors.
func (f *File) tracingLine() int {
	if f.Tracing == nil {
		return 0
	}
	return f.Tracing.Line
}

// keepTraces deletes the traces older than retention now and then every
// traceRetentionInterval, until stop closes.
func keepTraces(store storage.TraceStore, retention time.Duration, log *slog.Logger, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-stop
		cancel()
	}()
	ticker := time.NewTicker(traceRetentionInterval)
	defer ticker.Stop()
	for {
		deleted, err := store.DeleteTracesBefore(ctx, time.Now().Add(-retention))
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("deleting old traces failed", slog.String("error", err.Error()))
		case deleted > 0:
			log.Info("deleted traces past their retention", slog.Int64("traces", deleted), slog.Duration("retention", retention))
		}
		select {
		case <-ticker.C:
		case <-stop:
			return
		}
	}
}

// queueDepthTimeout bounds the count of a scrape's queue depth.
const queueDepthTimeout = 2 * time.Second

// registerQueueMetrics adds the queue's gauges to the metrics: the runs
// waiting in or executing from the queue (all replicas), and those
// executing here.
func registerQueueMetrics(m *observe.Metrics, q *durable.Queue, log *slog.Logger) {
	if m == nil {
		return
	}
	err := m.GaugeFunc("queue_depth", "Background runs waiting in or executing from the durable queue, on every replica.", func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), queueDepthTimeout)
		defer cancel()
		n, err := q.Depth(ctx)
		if err != nil {
			return -1 // a scrape shows the count failed rather than a false zero
		}
		return float64(n)
	})
	if err == nil {
		err = m.GaugeFunc("queue_executing", "Background runs executing in this process.", func() float64 { return float64(q.Executing()) })
	}
	if err != nil {
		log.Warn("registering the queue's metrics failed", slog.String("error", err.Error()))
	}
}
