package observe

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/agnogo/agnogo/storage"
)

// exportProcessor queues ended spans in a bounded queue and exports them
// in batches from one goroutine: a run never waits for an export, and a
// full queue drops the span and counts it instead of blocking.
type exportProcessor struct {
	exporters []sdktrace.SpanExporter
	queue     chan sdktrace.ReadOnlySpan
	batchSize int
	interval  time.Duration
	metrics   *Metrics
	dropped   atomic.Uint64

	flushes  chan chan struct{}
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func newExportProcessor(tc TracingConfig, exporters []sdktrace.SpanExporter, metrics *Metrics) *exportProcessor {
	p := &exportProcessor{
		exporters: exporters,
		queue:     make(chan sdktrace.ReadOnlySpan, positive(tc.QueueSize, DefaultQueueSize)),
		batchSize: positive(tc.BatchSize, DefaultBatchSize),
		interval:  tc.FlushInterval,
		metrics:   metrics,
		flushes:   make(chan chan struct{}),
		stop:      make(chan struct{}),
		done:      make(chan struct{}),
	}
	if p.interval <= 0 {
		p.interval = DefaultFlushInterval
	}
	go p.loop()
	return p
}

func positive(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

// OnStart implements [sdktrace.SpanProcessor].
func (p *exportProcessor) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

// OnEnd implements [sdktrace.SpanProcessor]: the span is queued, or
// dropped when the queue is full.
func (p *exportProcessor) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	select {
	case p.queue <- s:
	default:
		p.dropped.Add(1)
		p.metrics.spansDropped()
	}
}

// ForceFlush implements [sdktrace.SpanProcessor]: it returns once the
// spans queued before it are exported.
func (p *exportProcessor) ForceFlush(ctx context.Context) error {
	done := make(chan struct{})
	select {
	case p.flushes <- done:
	case <-p.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Shutdown implements [sdktrace.SpanProcessor]: the queue is exported and
// the exporters shut down.
func (p *exportProcessor) Shutdown(ctx context.Context) error {
	p.stopOnce.Do(func() { close(p.stop) })
	select {
	case <-p.done:
	case <-ctx.Done():
		return ctx.Err()
	}
	var errs []error
	for _, e := range p.exporters {
		if err := e.Shutdown(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("observe: shut the exporters down: %v", errs)
	}
	return nil
}

// loop batches queued spans and exports them.
func (p *exportProcessor) loop() {
	defer close(p.done)
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()
	batch := make([]sdktrace.ReadOnlySpan, 0, p.batchSize)
	export := func() {
		if len(batch) == 0 {
			return
		}
		p.export(batch)
		batch = batch[:0]
	}
	drain := func() {
		for {
			select {
			case s := <-p.queue:
				batch = append(batch, s)
				if len(batch) == p.batchSize {
					export()
				}
			default:
				export()
				return
			}
		}
	}
	for {
		select {
		case s := <-p.queue:
			batch = append(batch, s)
			if len(batch) == p.batchSize {
				export()
			}
		case <-ticker.C:
			export()
		case done := <-p.flushes:
			drain()
			close(done)
		case <-p.stop:
			drain()
			return
		}
	}
}

// exportTimeout bounds one export.
const exportTimeout = 30 * time.Second

// export hands a batch to every exporter; a failure is logged and counted,
// never returned to a run.
func (p *exportProcessor) export(batch []sdktrace.ReadOnlySpan) {
	ctx, cancel := context.WithTimeout(context.Background(), exportTimeout)
	defer cancel()
	for _, e := range p.exporters {
		if err := e.ExportSpans(ctx, batch); err != nil {
			slog.Default().Warn("exporting spans failed", "exporter", fmt.Sprintf("%T", e), "spans", len(batch), "error", err)
			p.metrics.spanExportFailed(len(batch))
		}
	}
}

// dbExporter writes spans to agno_traces and agno_spans.
type dbExporter struct {
	store storage.TraceStore
}

// ExportSpans implements [sdktrace.SpanExporter].
func (e *dbExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	return e.store.WriteTraces(ctx, TraceWrites(spans, time.Now()))
}

// Shutdown implements [sdktrace.SpanExporter].
func (e *dbExporter) Shutdown(context.Context) error { return nil }

// TraceWrites groups spans by trace for [storage.TraceStore.WriteTraces]:
// each trace's times span its spans, its status is ERROR when one is, its
// name and context come from its highest-level span (a workflow's over a
// team's over an agent's), read from Agno's attribute names.
func TraceWrites(spans []sdktrace.ReadOnlySpan, now time.Time) []storage.TraceWrite {
	var writes []storage.TraceWrite
	var contextLevels []int // the level of the span each write's context came from
	index := map[trace.TraceID]int{}
	for _, s := range spans {
		record := spanRecord(s, now)
		i, ok := index[s.SpanContext().TraceID()]
		if !ok {
			i = len(writes)
			index[s.SpanContext().TraceID()] = i
			writes = append(writes, storage.TraceWrite{NameLevel: -1, Trace: storage.Trace{TraceID: record.TraceID, Status: "OK",
				StartTime: record.StartTime, EndTime: record.EndTime, CreatedAt: now}})
			contextLevels = append(contextLevels, -1)
		}
		w := &writes[i]
		w.Spans = append(w.Spans, record)
		if record.StartTime.Before(w.Trace.StartTime) {
			w.Trace.StartTime = record.StartTime
		}
		if record.EndTime.After(w.Trace.EndTime) {
			w.Trace.EndTime = record.EndTime
		}
		if record.StatusCode == "ERROR" {
			w.Trace.Status = "ERROR"
		}
		level := spanLevel(record.Attributes)
		root := record.ParentSpanID == ""
		if level > w.NameLevel || level == w.NameLevel && root {
			w.NameLevel, w.Trace.Name = level, record.Name
		}
		if level > storage.TraceLevelChild || record.ParentSpanID == "" {
			// The highest-level span's context wins: a team's run over
			// its member's, which ends (and is batched) first.
			// A lower-level span (the member's run, batched after the
			// team's) adds nothing to it.
			if level > contextLevels[i] {
				clearContext(&w.Trace)
				contextLevels[i] = level
			}
			if level == contextLevels[i] {
				fillContext(&w.Trace, record.Attributes)
			}
		}
	}
	for i := range writes {
		if writes[i].NameLevel < 0 {
			writes[i].NameLevel = storage.TraceLevelChild
		}
		writes[i].Trace.DurationMS = writes[i].Trace.EndTime.Sub(writes[i].Trace.StartTime).Milliseconds()
	}
	return writes
}

// spanLevel ranks a span for the trace's name.
func spanLevel(attrs map[string]any) int {
	switch {
	case attrs[AttrWorkflowID] != nil:
		return storage.TraceLevelWorkflow
	case attrs[AttrTeamID] != nil:
		return storage.TraceLevelTeam
	case attrs[AttrAgentID] != nil && attrs[AttrSpanKind] == KindAgent:
		return storage.TraceLevelAgent
	}
	return storage.TraceLevelChild
}

// clearContext forgets a trace's context fields.
func clearContext(t *storage.Trace) {
	t.RunID, t.SessionID, t.UserID, t.AgentID, t.TeamID, t.WorkflowID = "", "", "", "", "", ""
}

// fillContext sets the trace's context fields a span names and the trace
// does not have yet.
func fillContext(t *storage.Trace, attrs map[string]any) {
	set := func(field *string, keys ...string) {
		if *field != "" {
			return
		}
		for _, key := range keys {
			if v, ok := attrs[key].(string); ok && v != "" {
				*field = v
				return
			}
		}
	}
	set(&t.RunID, "run_id", AttrRunID)
	set(&t.SessionID, "session_id", "agno.session.id", AttrSessionID)
	set(&t.UserID, "user_id", "agno.user.id", AttrUserID)
	set(&t.AgentID, "agent_id", AttrAgentID)
	set(&t.TeamID, "team_id", AttrTeamID)
	set(&t.WorkflowID, "workflow_id", AttrWorkflowID)
}

// spanRecord is a span as agno_spans keeps it.
func spanRecord(s sdktrace.ReadOnlySpan, now time.Time) storage.Span {
	sc := s.SpanContext()
	record := storage.Span{
		SpanID:     sc.SpanID().String(),
		TraceID:    sc.TraceID().String(),
		Name:       s.Name(),
		SpanKind:   spanKindName(s.SpanKind()),
		StatusCode: statusName(s.Status().Code),
		StartTime:  s.StartTime().UTC(),
		EndTime:    s.EndTime().UTC(),
		Attributes: attributes(s.Attributes()),
		CreatedAt:  now.UTC(),
	}
	if parent := s.Parent(); parent.IsValid() {
		record.ParentSpanID = parent.SpanID().String()
	}
	record.StatusMessage = s.Status().Description
	record.DurationMS = record.EndTime.Sub(record.StartTime).Milliseconds()
	return record
}

// attributes turns span attributes into JSON values: each value as
// attribute.Value holds it (a bool, int64, float64, string or a slice of
// them); an invalid one as its JSON text.
func attributes(kvs []attribute.KeyValue) map[string]any {
	out := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		value := kv.Value.AsInterface()
		if kv.Value.Type() == attribute.INVALID {
			encoded, _ := json.Marshal(value)
			value = string(encoded)
		}
		out[string(kv.Key)] = value
	}
	return out
}

// spanKindName is the OpenTelemetry span kind as Agno stores it.
func spanKindName(k trace.SpanKind) string {
	switch k {
	case trace.SpanKindServer:
		return "SERVER"
	case trace.SpanKindClient:
		return "CLIENT"
	case trace.SpanKindProducer:
		return "PRODUCER"
	case trace.SpanKindConsumer:
		return "CONSUMER"
	}
	return "INTERNAL"
}

// statusName is a span status as Agno stores it.
func statusName(c codes.Code) string {
	switch c {
	case codes.Ok:
		return "OK"
	case codes.Error:
		return "ERROR"
	}
	return "UNSET"
}
