package agentos

import "net/http"

// Features that need the OS database (schedules, approvals, service
// accounts): their routes exist whenever the server runs, and answer 503
// naming what to configure when the store lacks the ability.

// featureDetail is the 503 detail of a feature without its database.
func featureDetail(tag string) string {
	return tag + " not available: pass a `db` to AgentOS to enable this feature."
}

// featureStore returns the server's store as T, or answers 503 for the
// feature named tag and reports false.
func featureStore[T any](o *OS, w http.ResponseWriter, tag string) (T, bool) {
	s, ok := o.cfg.Store.(T)
	if !ok {
		writeError(w, http.StatusServiceUnavailable, featureDetail(tag))
	}
	return s, ok
}

// mountFeature mounts a feature's endpoints (scopes checked as [OS.mount]
// does) behind a check that the store has the ability T: without it, every
// method and sub-path of prefix answers 503 naming the feature.
func mountFeature[T any](o *OS, mux *http.ServeMux, tag, prefix string, endpoints []endpoint) {
	_, has := o.cfg.Store.(T)
	if !has {
		stub := func(w http.ResponseWriter, _ *http.Request) {
			writeError(w, http.StatusServiceUnavailable, featureDetail(tag))
		}
		mux.HandleFunc("/"+prefix, stub)
		mux.HandleFunc("/"+prefix+"/", stub)
		return
	}
	o.mountWith(mux, endpoints, false)
}
