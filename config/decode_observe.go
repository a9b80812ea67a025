package config

import (
	"net/url"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Defaults of tracing and prometheus.
const (
	// DefaultTraceRetentionDays is how long traces are kept unless
	// tracing.retention_days says otherwise.
	DefaultTraceRetentionDays = 30
	// DefaultPrometheusPath is where the Prometheus metrics are served.
	DefaultPrometheusPath = "/metrics/prometheus"
)

// Tracing is the file's tracing: spans of every run, model call, tool call
// and step, in agno_traces/agno_spans (served at /traces) and, with an
// endpoint, sent to an OTLP collector.
type Tracing struct {
	// Enabled records spans. Defaults to false.
	Enabled bool
	// OTLPEndpoint is an OTLP/HTTP collector's base URL
	// (http://127.0.0.1:4318): spans go to its /v1/traces as well.
	// Defaults to "": the database only.
	OTLPEndpoint string
	// Headers are sent with every OTLP export. Defaults to none.
	Headers map[string]string
	// SampleRate is the share of traces recorded, 0 to 1. Defaults to 1.
	SampleRate float64
	// RetentionDays is how long traces are kept in the database; 0 keeps
	// them forever. Defaults to [DefaultTraceRetentionDays].
	RetentionDays int
	// Line is where the key is.
	Line int
}

// Prometheus is the file's prometheus: the metrics in the Prometheus text
// format.
type Prometheus struct {
	// Enabled serves the metrics. Defaults to true.
	Enabled bool
	// Path is where they are served (under metrics:read). Defaults to
	// [DefaultPrometheusPath]; it may not be /metrics, AgentOS's JSON
	// metrics.
	Path string
}

// The keys of tracing and prometheus.
var (
	tracingKeys    = []string{"enabled", "otlp_endpoint", "headers", "sample_rate", "retention_days"}
	prometheusKeys = []string{"enabled", "path"}
)

// decodeTracing reads tracing.
func (d *decoder) decodeTracing(node *yaml.Node) *Tracing {
	if isNull(node) {
		return nil
	}
	t := &Tracing{SampleRate: 1, RetentionDays: DefaultTraceRetentionDays, Line: deref(node).Line}
	for _, f := range d.fields(node, "tracing") {
		what := label(f.name(), "tracing")
		switch f.name() {
		case "enabled":
			t.Enabled = d.boolean(f.value, what)
		case "otlp_endpoint":
			t.OTLPEndpoint = strings.TrimSuffix(d.str(f.value, what), "/")
			if u, err := url.Parse(t.OTLPEndpoint); t.OTLPEndpoint != "" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "") {
				d.errorf(f.value, "%s: %q is not an http(s) URL such as http://127.0.0.1:4318 (OTLP over HTTP; the exporter posts to its /v1/traces)",
					what, t.OTLPEndpoint)
			}
		case "headers":
			t.Headers = map[string]string{}
			for _, h := range d.fields(f.value, what) {
				t.Headers[h.name()] = d.str(h.value, label(h.name(), what))
			}
		case "sample_rate":
			t.SampleRate = d.number(f.value, what, 0, 1)
		case "retention_days":
			t.RetentionDays = d.integer(f.value, what, 0)
		default:
			d.unknownKey(f, "tracing", tracingKeys)
		}
	}
	return t
}

// decodePrometheus reads prometheus.
func (d *decoder) decodePrometheus(node *yaml.Node, p *Prometheus) {
	if isNull(node) {
		return
	}
	for _, f := range d.fields(node, "prometheus") {
		what := label(f.name(), "prometheus")
		switch f.name() {
		case "enabled":
			p.Enabled = d.boolean(f.value, what)
		case "path":
			path := d.str(f.value, what)
			switch {
			case !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " ?#{}"):
				d.errorf(f.value, "%s: %q is not a path such as /metrics/prometheus", what, path)
			case path == "/metrics":
				d.errorf(f.value, "%s: /metrics is AgentOS's JSON metrics; serve Prometheus elsewhere, such as /metrics/prometheus", what)
			}
			p.Path = path
		default:
			d.unknownKey(f, "prometheus", prometheusKeys)
		}
	}
}
