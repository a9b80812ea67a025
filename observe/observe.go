package observe

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Defaults of [TracingConfig].
const (
	// DefaultQueueSize bounds the spans waiting for export; past it spans
	// are dropped and counted, never waited for.
	DefaultQueueSize = 8192
	// DefaultBatchSize is the most spans one export carries.
	DefaultBatchSize = 512
	// DefaultFlushInterval is how long an ended span waits at most before
	// its batch is exported.
	DefaultFlushInterval = 500 * time.Millisecond
	// DefaultServiceName names the process in exported spans.
	DefaultServiceName = "agnogo"
)

// TracingConfig turns tracing on: every run, model call, tool call and step
// is a span, exported to the database (so /traces works without a
// collector) and, with an endpoint, to an OTLP collector.
type TracingConfig struct {
	// Store receives the spans (agno_traces, agno_spans); nil exports to
	// the database nothing.
	Store storage.TraceStore
	// OTLPEndpoint is an OTLP/HTTP collector's base URL
	// (http://127.0.0.1:4318); spans are posted to its /v1/traces. ""
	// exports to no collector.
	OTLPEndpoint string
	// OTLPHeaders are sent with every export (an API key).
	OTLPHeaders map[string]string
	// SampleRate is the share of traces recorded, from 0 to 1; a run
	// continuing a recorded trace is always recorded. Defaults to 1.
	SampleRate *float64
	// QueueSize bounds the spans waiting for export. Defaults to
	// [DefaultQueueSize].
	QueueSize int
	// BatchSize is the most spans one export carries. Defaults to
	// [DefaultBatchSize].
	BatchSize int
	// FlushInterval is the longest an ended span waits for export.
	// Defaults to [DefaultFlushInterval].
	FlushInterval time.Duration
	// ServiceName names the process. Defaults to [DefaultServiceName].
	ServiceName string
	// ServiceVersion is the build's version.
	ServiceVersion string
}

// Config configures an [Observer]. The zero value observes nothing.
type Config struct {
	// Tracing, when set, records spans.
	Tracing *TracingConfig
	// Metrics, when set, counts runs, model and tool calls (Prometheus).
	Metrics *Metrics
	// RunLog, when set, receives one line per run start, end and failure.
	RunLog *slog.Logger
}

// Observer records what runs do: spans, metrics and run log lines. Carry
// it in the context of the calls that start runs ([With]); every run, model
// call and tool call under that context is observed. A nil *Observer
// observes nothing, at no cost.
type Observer struct {
	provider   *sdktrace.TracerProvider
	tracer     trace.Tracer
	exporter   *exportProcessor
	metrics    *Metrics
	runLog     *slog.Logger
	propagator propagation.TraceContext
}

// New returns an observer. With tracing it starts the exporter; call
// [Observer.Shutdown] to flush and stop it.
func New(ctx context.Context, cfg Config) (*Observer, error) {
	o := &Observer{metrics: cfg.Metrics, runLog: cfg.RunLog}
	if cfg.Tracing == nil {
		return o, nil
	}
	tc := *cfg.Tracing
	rate := 1.0
	if tc.SampleRate != nil {
		rate = *tc.SampleRate
	}
	if rate < 0 || rate > 1 {
		return nil, fmt.Errorf("observe: sample rate %v: want a number from 0 to 1", rate)
	}
	var exporters []sdktrace.SpanExporter
	if tc.Store != nil {
		exporters = append(exporters, &dbExporter{store: tc.Store})
	}
	if tc.OTLPEndpoint != "" {
		otlp, err := newOTLP(tc)
		if err != nil {
			return nil, err
		}
		exporters = append(exporters, otlp)
	}
	o.exporter = newExportProcessor(tc, exporters, cfg.Metrics)
	name := tc.ServiceName
	if name == "" {
		name = DefaultServiceName
	}
	res := resource.NewSchemaless(attribute.String("service.name", name), attribute.String("service.version", tc.ServiceVersion))
	o.provider = sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(rate))),
		sdktrace.WithSpanProcessor(o.exporter),
		sdktrace.WithResource(res),
	)
	o.tracer = o.provider.Tracer("github.com/agnogo/agnogo")
	return o, nil
}

// Shutdown exports the spans still queued and stops the exporter.
func (o *Observer) Shutdown(ctx context.Context) error {
	if o == nil || o.provider == nil {
		return nil
	}
	return o.provider.Shutdown(ctx)
}

// ForceFlush exports the spans ended so far.
func (o *Observer) ForceFlush(ctx context.Context) error {
	if o == nil || o.provider == nil {
		return nil
	}
	return o.provider.ForceFlush(ctx)
}

// LogsRuns reports whether the observer writes a log line for every run.
func (o *Observer) LogsRuns() bool { return o != nil && o.runLog != nil }

// Tracing reports whether spans are recorded.
func (o *Observer) Tracing() bool { return o != nil && o.tracer != nil }

// Metrics returns the observer's metrics; nil when there are none.
func (o *Observer) Metrics() *Metrics {
	if o == nil {
		return nil
	}
	return o.metrics
}

// DroppedSpans is how many spans were dropped because the export queue was
// full.
func (o *Observer) DroppedSpans() uint64 {
	if o == nil || o.exporter == nil {
		return 0
	}
	return o.exporter.dropped.Load()
}

// TracerProvider is the provider of the observer's spans, for libraries
// that trace on their own (a no-op provider when tracing is off).
func (o *Observer) TracerProvider() trace.TracerProvider {
	if o == nil || o.provider == nil {
		return noopProvider
	}
	return o.provider
}

type observerKey struct{}

// With returns ctx carrying o: runs started under it are observed.
func With(ctx context.Context, o *Observer) context.Context {
	if o == nil {
		return ctx
	}
	return context.WithValue(ctx, observerKey{}, o)
}

// From returns the observer ctx carries; nil when none.
func From(ctx context.Context) *Observer {
	o, _ := ctx.Value(observerKey{}).(*Observer)
	return o
}

// ExtractTraceparent returns ctx with the remote span a W3C traceparent
// (and tracestate) header names, so a run started under it joins the
// caller's trace. Malformed headers are ignored.
func (o *Observer) ExtractTraceparent(ctx context.Context, header interface{ Get(string) string }) context.Context {
	if o == nil || o.tracer == nil {
		return ctx
	}
	return o.propagator.Extract(ctx, headerCarrier{header})
}

// InjectTraceparent sets the traceparent (and tracestate) of ctx's span on
// an outgoing request's header: model providers and MCP servers see the
// call's trace.
func InjectTraceparent(ctx context.Context, header interface{ Set(string, string) }) {
	sc := trace.SpanContextFromContext(ctx)
	if !sc.IsValid() {
		return
	}
	propagation.TraceContext{}.Inject(ctx, setterCarrier{header})
}

// headerCarrier reads headers for the propagator.
type headerCarrier struct {
	h interface{ Get(string) string }
}

func (c headerCarrier) Get(key string) string { return c.h.Get(key) }
func (c headerCarrier) Set(string, string)    {}
func (c headerCarrier) Keys() []string        { return []string{"traceparent", "tracestate"} }

// setterCarrier writes headers for the propagator.
type setterCarrier struct {
	h interface{ Set(string, string) }
}

func (c setterCarrier) Get(string) string     { return "" }
func (c setterCarrier) Set(key, value string) { c.h.Set(key, value) }
func (c setterCarrier) Keys() []string        { return nil }

// noopProvider is the provider of a context without tracing.
var noopProvider trace.TracerProvider = noop.NewTracerProvider()

// logRun writes a run's log line: its start, or its end with how long it
// took, its tokens and cost, and its error type when it failed.
func (o *Observer) logRun(ctx context.Context, msg string, out *run.Output, err error, elapsed time.Duration) {
	if o.runLog == nil {
		return
	}
	kind, id, _ := runKind(out)
	attrs := []slog.Attr{slog.String("run_id", out.RunID), slog.String("session_id", out.SessionID), slog.String("runner", kind), slog.String(run.IDKey(run.Kind(kind)), id)}
	if out.UserID != "" {
		attrs = append(attrs, slog.String("user_id", out.UserID))
	}
	if out.TraceID != "" {
		attrs = append(attrs, slog.String("trace_id", out.TraceID))
	}
	level := slog.LevelInfo
	if msg != "run started" {
		attrs = append(attrs, slog.String("status", string(out.Status)), slog.Float64("duration_seconds", elapsed.Seconds()))
		if m := out.Metrics; m != nil {
			attrs = append(attrs, slog.Int64("input_tokens", m.InputTokens), slog.Int64("output_tokens", m.OutputTokens))
			if m.Cost != nil {
				attrs = append(attrs, slog.Float64("cost_usd", *m.Cost))
			}
		}
		if err != nil {
			level = slog.LevelWarn
			msg = "run failed"
			attrs = append(attrs, slog.String("error_type", run.ErrorTypeOf(err)), slog.String("error", err.Error()))
		}
	}
	o.runLog.LogAttrs(ctx, level, msg, attrs...)
}

// Transport returns next sending each request with the traceparent of the
// span its context carries (a model call's, an MCP call's), so the
// service's own traces join the run's. next defaults to
// http.DefaultTransport.
func Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &traceTransport{next: next}
}

// traceTransport is the [http.RoundTripper] [Transport] returns.
type traceTransport struct{ next http.RoundTripper }

// RoundTrip implements [http.RoundTripper].
func (t *traceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if sc := trace.SpanContextFromContext(req.Context()); sc.IsValid() && req.Header.Get("traceparent") == "" {
		req = req.Clone(req.Context())
		InjectTraceparent(req.Context(), req.Header)
	}
	return t.next.RoundTrip(req)
}
