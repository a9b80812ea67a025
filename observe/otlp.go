package observe

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpExporter posts spans to an OTLP/HTTP collector's /v1/traces as
// protobuf. It is written here rather than taken from the OpenTelemetry
// exporter packages, which link gRPC (and with it html/template, whose
// method reflection keeps every unused method in the binary) even to speak
// HTTP: TracesData is the wire form of ExportTraceServiceRequest.
type otlpExporter struct {
	url     string
	headers map[string]string
	client  *http.Client
}

// newOTLP returns the exporter to tc's endpoint.
func newOTLP(tc TracingConfig) (*otlpExporter, error) {
	if tc.OTLPEndpoint == "" {
		return nil, fmt.Errorf("observe: no OTLP endpoint")
	}
	return &otlpExporter{url: tc.OTLPEndpoint + "/v1/traces", headers: tc.OTLPHeaders,
		client: &http.Client{Timeout: 10 * time.Second, Transport: http.DefaultTransport.(*http.Transport).Clone()}}, nil
}

// ExportSpans implements [sdktrace.SpanExporter].
func (e *otlpExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	body, err := proto.Marshal(tracesData(spans))
	if err != nil {
		return fmt.Errorf("otlp: encode %d spans: %w", len(spans), err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	for k, v := range e.headers {
		req.Header.Set(k, v)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: post to %s: %w", e.url, err)
	}
	defer resp.Body.Close()
	message, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: %s answered HTTP %d: %s", e.url, resp.StatusCode, bytes.TrimSpace(message))
	}
	return nil
}

// Shutdown implements [sdktrace.SpanExporter].
func (e *otlpExporter) Shutdown(context.Context) error {
	e.client.CloseIdleConnections()
	return nil
}

// tracesData groups spans by resource and instrumentation scope.
func tracesData(spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	data := &tracepb.TracesData{}
	resources := map[string]*tracepb.ResourceSpans{}
	scopes := map[string]*tracepb.ScopeSpans{}
	for _, s := range spans {
		resKey := ""
		if res := s.Resource(); res != nil {
			resKey = res.Encoded(attribute.DefaultEncoder())
		}
		rs, ok := resources[resKey]
		if !ok {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{}}
			if res := s.Resource(); res != nil {
				rs.Resource.Attributes = keyValues(res.Attributes())
				rs.SchemaUrl = res.SchemaURL()
			}
			resources[resKey] = rs
			data.ResourceSpans = append(data.ResourceSpans, rs)
		}
		scope := s.InstrumentationScope()
		scopeKey := resKey + "\x00" + scope.Name + "\x00" + scope.Version
		ss, ok := scopes[scopeKey]
		if !ok {
			ss = &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: scope.Name, Version: scope.Version}, SchemaUrl: scope.SchemaURL}
			scopes[scopeKey] = ss
			rs.ScopeSpans = append(rs.ScopeSpans, ss)
		}
		ss.Spans = append(ss.Spans, spanProto(s))
	}
	return data
}

// spanProto is a span in OTLP's form.
func spanProto(s sdktrace.ReadOnlySpan) *tracepb.Span {
	sc := s.SpanContext()
	traceID, spanID := sc.TraceID(), sc.SpanID()
	span := &tracepb.Span{
		TraceId:           traceID[:],
		SpanId:            spanID[:],
		TraceState:        sc.TraceState().String(),
		Name:              s.Name(),
		Kind:              spanKindProto(s.SpanKind()),
		StartTimeUnixNano: uint64(s.StartTime().UnixNano()),
		EndTimeUnixNano:   uint64(s.EndTime().UnixNano()),
		Attributes:        keyValues(s.Attributes()),
		Flags:             uint32(sc.TraceFlags()),
		Status:            &tracepb.Status{Message: s.Status().Description},
	}
	if parent := s.Parent(); parent.IsValid() {
		id := parent.SpanID()
		span.ParentSpanId = id[:]
	}
	switch s.Status().Code {
	case codes.Ok:
		span.Status.Code = tracepb.Status_STATUS_CODE_OK
	case codes.Error:
		span.Status.Code = tracepb.Status_STATUS_CODE_ERROR
	}
	for _, ev := range s.Events() {
		span.Events = append(span.Events, &tracepb.Span_Event{TimeUnixNano: uint64(ev.Time.UnixNano()), Name: ev.Name, Attributes: keyValues(ev.Attributes)})
	}
	return span
}

// spanKindProto is a span kind in OTLP's form.
func spanKindProto(k trace.SpanKind) tracepb.Span_SpanKind {
	switch k {
	case trace.SpanKindServer:
		return tracepb.Span_SPAN_KIND_SERVER
	case trace.SpanKindClient:
		return tracepb.Span_SPAN_KIND_CLIENT
	case trace.SpanKindProducer:
		return tracepb.Span_SPAN_KIND_PRODUCER
	case trace.SpanKindConsumer:
		return tracepb.Span_SPAN_KIND_CONSUMER
	}
	return tracepb.Span_SPAN_KIND_INTERNAL
}

// keyValues are attributes in OTLP's form.
func keyValues(kvs []attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, &commonpb.KeyValue{Key: string(kv.Key), Value: anyValue(kv.Value)})
	}
	return out
}

// anyValue is an attribute value in OTLP's form.
func anyValue(v attribute.Value) *commonpb.AnyValue {
	array := func(values []*commonpb.AnyValue) *commonpb.AnyValue {
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: values}}}
	}
	switch v.Type() {
	case attribute.BOOL:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v.AsBool()}}
	case attribute.INT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v.AsInt64()}}
	case attribute.FLOAT64:
		return &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v.AsFloat64()}}
	case attribute.BOOLSLICE:
		var values []*commonpb.AnyValue
		for _, b := range v.AsBoolSlice() {
			values = append(values, &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: b}})
		}
		return array(values)
	case attribute.INT64SLICE:
		var values []*commonpb.AnyValue
		for _, n := range v.AsInt64Slice() {
			values = append(values, &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: n}})
		}
		return array(values)
	case attribute.FLOAT64SLICE:
		var values []*commonpb.AnyValue
		for _, f := range v.AsFloat64Slice() {
			values = append(values, &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: f}})
		}
		return array(values)
	case attribute.STRINGSLICE:
		var values []*commonpb.AnyValue
		for _, s := range v.AsStringSlice() {
			values = append(values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}})
		}
		return array(values)
	}
	return &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v.Emit()}}
}
