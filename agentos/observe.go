package agentos

import (
	"net/http"

	"github.com/agnogo/agnogo/observe"
)

// DefaultPrometheusPath is where the Prometheus metrics are served unless
// [Config.PrometheusPath] says otherwise: beside AgentOS's JSON /metrics,
// not in its place.
const DefaultPrometheusPath = "/metrics/prometheus"

// withObserver puts the server's observer in every request's context, with
// the caller's trace when the request carries a W3C traceparent: the runs
// a request starts are observed, their spans in the caller's trace.
func (o *OS) withObserver(next http.Handler) http.Handler {
	obs := o.cfg.Observer
	if obs == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := observe.With(r.Context(), obs)
		ctx = obs.ExtractTraceparent(ctx, r.Header)
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// prometheusRoutes serves the Prometheus metrics when the observer has
// them, under metrics:read.
func (o *OS) prometheusRoutes(mux *http.ServeMux) {
	metrics := o.cfg.Observer.Metrics()
	if metrics == nil {
		return
	}
	path := o.cfg.PrometheusPath
	if path == "" {
		path = DefaultPrometheusPath
	}
	handler := metrics.Handler()
	mux.HandleFunc("GET "+path, func(w http.ResponseWriter, r *http.Request) {
		if !o.authorize(w, r, "metrics", "", "read") {
			return
		}
		handler.ServeHTTP(w, r)
	})
}
