package observe

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agnogo/agnogo/run"
)

// The OpenInference attribute names (and Agno's) spans carry: the /traces
// routes and the control-plane UI read them.
const (
	AttrSpanKind        = "openinference.span.kind"
	AttrInput           = "input.value"
	AttrInputMimeType   = "input.mime_type"
	AttrOutput          = "output.value"
	AttrOutputMimeType  = "output.mime_type"
	AttrAgentID         = "agno.agent.id"
	AttrTeamID          = "agno.team.id"
	AttrWorkflowID      = "agno.workflow.id"
	AttrRunID           = "agno.run.id"
	AttrParentRunID     = "agno.parent_run.id"
	AttrSessionID       = "session.id"
	AttrUserID          = "user.id"
	AttrAgentName       = "agent.name"
	AttrGraphNodeID     = "graph.node.id"
	AttrGraphNodeParent = "graph.node.parent_id"
	AttrStatus          = "agno.run.status"
	AttrErrorType       = "agno.error_type"
	AttrModelName       = "llm.model_name"
	AttrModelProvider   = "llm.provider"
	AttrPromptTokens    = "llm.token_count.prompt"
	AttrOutputTokens    = "llm.token_count.completion"
	AttrTotalTokens     = "llm.token_count.total"
	AttrCost            = "llm.cost"
	AttrToolName        = "tool.name"
	AttrToolParameters  = "tool.parameters"
	AttrStepType        = "agno.workflow.step_type"
)

// The OpenInference span kinds.
const (
	KindAgent = "AGENT"
	KindChain = "CHAIN"
	KindLLM   = "LLM"
	KindTool  = "TOOL"
	// KindUnknown is a span of none of the other kinds (a storage call).
	KindUnknown = "UNKNOWN"
)

// maxAttrChars bounds an input or output value kept on a span.
const maxAttrChars = 8192

// TraceparentKey is the run metadata key of the W3C traceparent of the
// run's span: a run executed again (continued, or taken over by another
// replica) joins the trace it started.
const TraceparentKey = "traceparent"

// Span is an observed operation: a run, a model call, a tool call, a step.
// End it once. A nil *Span observes nothing.
type Span struct {
	o     *Observer
	span  trace.Span // nil when tracing is off
	start time.Time
	// what the metrics and the run log need at the end
	kind   string
	runner string
	name   string
}

// clip bounds a value kept on a span.
func clip(s string) string {
	if len(s) <= maxAttrChars {
		return s
	}
	cut := maxAttrChars
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + fmt.Sprintf("…[%d bytes in all]", len(s))
}

// spanName is Agno's name of a run span: the component's name with spaces
// and dashes as underscores, then ".run".
func spanName(name string) string {
	if name == "" {
		name = "Agent"
	}
	return strings.NewReplacer(" ", "_", "-", "_").Replace(name) + ".run"
}

// runKind is the kind of runner a run has.
func runKind(out *run.Output) (kind, id, name string) {
	switch {
	case out.AgentID != "":
		return "agent", out.AgentID, out.AgentName
	case out.TeamID != "":
		return "team", out.TeamID, out.TeamName
	case out.WorkflowID != "":
		return "workflow", out.WorkflowID, out.WorkflowName
	}
	return "agent", "", ""
}

// StartRun starts the span of a run (an agent's, a team's, a workflow's or
// an external agent's) under the observer ctx carries, and returns ctx
// carrying it: the run's model calls, tool calls and child runs are its
// children. The span's parent is the span ctx carries (a team's delegation
// for a member's run); else the trace the run started before (its
// metadata's traceparent: a continued run, or one taken over after a
// crash); else a remote parent ctx carries (an incoming traceparent). The
// run's trace_id and traceparent are set on out.
func StartRun(ctx context.Context, out *run.Output) (context.Context, *Span) {
	o := From(ctx)
	if o == nil || out == nil {
		return ctx, nil
	}
	kind, id, name := runKind(out)
	s := &Span{o: o, start: time.Now(), kind: kind, runner: id, name: name}
	o.metrics.runStarted(kind, id)
	o.logRun(ctx, "run started", out, nil, 0)
	if o.tracer == nil {
		return ctx, s
	}
	parent := ctx
	if local := trace.SpanFromContext(ctx); !local.SpanContext().IsValid() || local.SpanContext().IsRemote() {
		if tp, ok := out.Metadata[TraceparentKey].(string); ok && tp != "" {
			stored := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), mapCarrier{"traceparent": tp}))
			if stored.IsValid() {
				parent = trace.ContextWithRemoteSpanContext(ctx, stored)
			}
		}
	}
	spanKind, agentAttr := KindAgent, AttrAgentID
	attrs := []attribute.KeyValue{attribute.String(AttrRunID, out.RunID)}
	switch kind {
	case "team":
		agentAttr = AttrTeamID
	case "workflow":
		spanKind, agentAttr = KindChain, AttrWorkflowID
	}
	attrs = append(attrs, attribute.String(AttrSpanKind, spanKind), attribute.String(agentAttr, id), attribute.String(AttrGraphNodeID, id))
	if name != "" {
		attrs = append(attrs, attribute.String(AttrAgentName, name))
	}
	if out.SessionID != "" {
		attrs = append(attrs, attribute.String(AttrSessionID, out.SessionID))
	}
	if out.UserID != "" {
		attrs = append(attrs, attribute.String(AttrUserID, out.UserID))
	}
	if out.ParentRunID != "" {
		attrs = append(attrs, attribute.String(AttrParentRunID, out.ParentRunID))
	}
	if input := out.Input.ContentString(); input != "" {
		attrs = append(attrs, attribute.String(AttrInput, clip(input)))
	}
	spanCtx, span := o.tracer.Start(parent, spanName(name), trace.WithAttributes(attrs...))
	s.span = span
	sc := span.SpanContext()
	if sc.IsValid() {
		out.TraceID = sc.TraceID().String()
		if _, stored := out.Metadata[TraceparentKey]; !stored {
			if out.Metadata == nil {
				out.Metadata = map[string]any{}
			}
			carrier := mapCarrier{}
			propagation.TraceContext{}.Inject(spanCtx, carrier)
			out.Metadata[TraceparentKey] = carrier["traceparent"]
		}
	}
	return spanCtx, s
}

// EndRun ends a run's span with the run's outcome: its answer, status and
// metrics, its error and error_type when it failed.
func (s *Span) EndRun(ctx context.Context, out *run.Output, err error, errorType string) {
	if s == nil {
		return
	}
	elapsed := time.Since(s.start)
	status := string(out.Status)
	if err != nil && errorType == "" {
		errorType = run.ErrorTypeOf(err)
	}
	s.o.metrics.runFinished(s.kind, s.runner, status, errorType, elapsed)
	s.o.logRun(ctx, "run finished", out, err, elapsed)
	if s.span == nil {
		return
	}
	attrs := []attribute.KeyValue{attribute.String(AttrStatus, status)}
	if content := contentString(out.Content); content != "" {
		attrs = append(attrs, attribute.String(AttrOutput, clip(content)))
	}
	if m := out.Metrics; m != nil {
		attrs = append(attrs, attribute.Int64(AttrPromptTokens, m.InputTokens), attribute.Int64(AttrOutputTokens, m.OutputTokens),
			attribute.Int64(AttrTotalTokens, m.TotalTokens))
		if m.Cost != nil {
			attrs = append(attrs, attribute.Float64(AttrCost, *m.Cost))
		}
	}
	s.span.SetAttributes(attrs...)
	if err != nil {
		s.span.SetAttributes(attribute.String(AttrErrorType, errorType))
		s.span.SetStatus(codes.Error, err.Error())
	} else {
		s.span.SetStatus(codes.Ok, "")
	}
	s.span.End()
}

// contentString renders a run's answer for a span.
func contentString(content any) string {
	switch c := content.(type) {
	case nil:
		return ""
	case string:
		return c
	}
	in := &run.Input{InputContent: content}
	return in.ContentString()
}

// StartModel starts the span of a model call (an LLM span named
// "<model>.invoke") and returns ctx carrying it, so the provider's request
// carries its traceparent.
func StartModel(ctx context.Context, provider, model string, lastMessage string) (context.Context, *Span) {
	o := From(ctx)
	if o == nil {
		return ctx, nil
	}
	s := &Span{o: o, start: time.Now(), kind: "model", name: model, runner: provider}
	if o.tracer == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, s
	}
	attrs := []attribute.KeyValue{attribute.String(AttrSpanKind, KindLLM), attribute.String(AttrModelName, model),
		attribute.String(AttrModelProvider, provider)}
	if lastMessage != "" {
		attrs = append(attrs, attribute.String(AttrInput, clip(lastMessage)))
	}
	ctx, s.span = o.tracer.Start(ctx, model+".invoke", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	return ctx, s
}

// EndModel ends a model call's span with its reply's text, its usage and
// cost, or its error.
func (s *Span) EndModel(content string, usage *run.Metrics, err error) {
	if s == nil {
		return
	}
	elapsed := time.Since(s.start)
	errorType := ""
	if err != nil {
		errorType = run.ErrorTypeOf(err)
	}
	s.o.metrics.modelCalled(s.runner, s.name, elapsed, usage, errorType)
	if s.span == nil {
		return
	}
	if usage != nil {
		attrs := []attribute.KeyValue{attribute.Int64(AttrPromptTokens, usage.InputTokens), attribute.Int64(AttrOutputTokens, usage.OutputTokens),
			attribute.Int64(AttrTotalTokens, usage.TotalTokens)}
		if usage.Cost != nil {
			attrs = append(attrs, attribute.Float64(AttrCost, *usage.Cost))
		}
		s.span.SetAttributes(attrs...)
	}
	if content != "" {
		s.span.SetAttributes(attribute.String(AttrOutput, clip(content)))
	}
	s.endStatus(err)
}

// StartTool starts the span of a tool call (a TOOL span named after the
// tool) and returns ctx carrying it.
func StartTool(ctx context.Context, name, arguments string) (context.Context, *Span) {
	o := From(ctx)
	if o == nil {
		return ctx, nil
	}
	s := &Span{o: o, start: time.Now(), kind: "tool", name: name}
	if o.tracer == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, s
	}
	ctx, s.span = o.tracer.Start(ctx, name, trace.WithAttributes(attribute.String(AttrSpanKind, KindTool), attribute.String(AttrToolName, name),
		attribute.String(AttrToolParameters, clip(arguments)), attribute.String(AttrInput, clip(arguments))))
	return ctx, s
}

// EndTool ends a tool call's span with its result, failed or not.
func (s *Span) EndTool(result string, failed bool) {
	if s == nil {
		return
	}
	s.o.metrics.toolCalled(s.name, time.Since(s.start), failed)
	if s.span == nil {
		return
	}
	s.span.SetAttributes(attribute.String(AttrOutput, clip(result)))
	if failed {
		s.span.SetStatus(codes.Error, clip(result))
	} else {
		s.span.SetStatus(codes.Ok, "")
	}
	s.span.End()
}

// StartStep starts the span of a step inside a run — a workflow step, a
// team's delegation, a durable queue step, a storage call — of the given
// OpenInference kind (CHAIN for most), and returns ctx carrying it. It
// records nothing outside a traced run.
func StartStep(ctx context.Context, name, kind string, attrs ...attribute.KeyValue) (context.Context, *Span) {
	o := From(ctx)
	if o == nil || o.tracer == nil || !trace.SpanFromContext(ctx).IsRecording() {
		return ctx, nil
	}
	s := &Span{o: o, start: time.Now(), kind: "step", name: name}
	ctx, s.span = o.tracer.Start(ctx, name, trace.WithAttributes(append(attrs, attribute.String(AttrSpanKind, kind))...))
	return ctx, s
}

// End ends a step's span, with its error if it failed.
func (s *Span) End(err error) {
	if s == nil || s.span == nil {
		return
	}
	s.endStatus(err)
}

// SetAttributes adds attributes to the span.
func (s *Span) SetAttributes(attrs ...attribute.KeyValue) {
	if s == nil || s.span == nil {
		return
	}
	s.span.SetAttributes(attrs...)
}

// endStatus sets the span's status from err and ends it.
func (s *Span) endStatus(err error) {
	if err != nil {
		s.span.SetStatus(codes.Error, err.Error())
	} else {
		s.span.SetStatus(codes.Ok, "")
	}
	s.span.End()
}

// mapCarrier is a propagation carrier over a map.
type mapCarrier map[string]string

func (c mapCarrier) Get(key string) string { return c[key] }
func (c mapCarrier) Set(key, value string) { c[key] = value }
func (c mapCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	return keys
}

// Annotate adds attributes to the span ctx carries (a run's, from inside
// its turn), when it records.
func Annotate(ctx context.Context, attrs ...attribute.KeyValue) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(attrs...)
	}
}
