package agent_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/observe"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tool"
)

// BenchmarkTracing runs persisted single-turn and tool-call runs with
// tracing off, on with the database exporter (the spans written to the
// run's own SQLite database), and on with the database and an OTLP/HTTP
// collector (a local receiver that reads and drops the requests). The
// Prometheus metrics and the run log are off in every case, so the
// difference is tracing's alone.
func BenchmarkTracing(b *testing.B) {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusOK)
	}))
	defer collector.Close()
	workloads := []struct {
		name    string
		replies []scripted.Reply
	}{
		{"single-turn", []scripted.Reply{scripted.Text("Hello!")}},
		{"tool-call", []scripted.Reply{scripted.ToolCall("get_weather", `{"city":"Paris"}`), scripted.Text("It is sunny.")}},
	}
	for _, w := range workloads {
		for _, mode := range []string{"off", "database", "database+otlp"} {
			b.Run(w.name+"/"+mode, func(b *testing.B) {
				store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db")})
				if err != nil {
					b.Fatal(err)
				}
				defer store.Close()
				m := scripted.New(w.replies, scripted.Loop(), scripted.NoRecord())
				a, err := agent.New(agent.Config{ID: "assistant", Model: m, Instructions: "You are helpful.", Store: store,
					Tools: []tool.Tool{benchTool(b)}})
				if err != nil {
					b.Fatal(err)
				}
				ctx := b.Context()
				var obs *observe.Observer
				if mode != "off" {
					tc := &observe.TracingConfig{Store: store}
					if mode == "database+otlp" {
						tc.OTLPEndpoint = collector.URL
					}
					if obs, err = observe.New(ctx, observe.Config{Tracing: tc}); err != nil {
						b.Fatal(err)
					}
					ctx = observe.With(ctx, obs)
				}
				b.ReportAllocs()
				for b.Loop() {
					out, err := a.Run(ctx, &run.Input{InputContent: "hi", SessionID: "s1"})
					if err != nil || out.Status != run.StatusCompleted {
						b.Fatalf("run: %v %v", out.Status, err)
					}
				}
				b.StopTimer()
				if err := obs.Shutdown(context.Background()); err != nil {
					b.Fatal(err)
				}
				if dropped := obs.DroppedSpans(); dropped > 0 {
					b.ReportMetric(float64(dropped)/float64(b.N), "dropped-spans/op")
				}
			})
		}
	}
}
