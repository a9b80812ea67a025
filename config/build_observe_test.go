package config

import (
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/storage"
)

// TestTracesPastTheirRetentionAreDeleted: the retention loop deletes the
// traces created before the retention window as soon as it starts, and
// keeps the newer ones.
func TestTracesPastTheirRetentionAreDeleted(t *testing.T) {
	t.Parallel()
	file := mustParse(t, fmt.Sprintf("db: sqlite://%s\ntracing: {enabled: true, retention_days: 7}\n", filepath.Join(t.TempDir(), "os.db")), nil)
	built, err := file.Build(t.Context(), BuildOptions{Getenv: env(nil)})
	require.NoError(t, err)
	t.Cleanup(func() { _ = built.Close() })
	require.True(t, built.Observer.Tracing())
	traces := built.Store.(storage.TraceStore)
	now := time.Now().UTC()
	write := func(id string, created time.Time) {
		span := storage.Span{SpanID: id + "-span", TraceID: id, Name: "Agent.run", SpanKind: "INTERNAL", StatusCode: "OK",
			StartTime: created, EndTime: created.Add(time.Second), Attributes: map[string]any{}, CreatedAt: created}
		require.NoError(t, traces.WriteTraces(t.Context(), []storage.TraceWrite{{Trace: storage.Trace{TraceID: id, Name: "Agent.run", Status: "OK",
			StartTime: created, EndTime: created.Add(time.Second), CreatedAt: created}, Spans: []storage.Span{span}}}))
	}
	write("old", now.Add(-8*24*time.Hour))
	write("new", now.Add(-6*24*time.Hour))
	stop, done := make(chan struct{}), make(chan struct{})
	go keepTraces(traces, 7*24*time.Hour, slog.New(slog.NewTextHandler(io.Discard, nil)), stop, done)
	require.Eventually(t, func() bool {
		_, _, err := traces.GetTrace(t.Context(), "old")
		return err != nil
	}, 10*time.Second, 10*time.Millisecond, "the trace past its retention is deleted")
	close(stop)
	<-done
	_, spans, err := traces.GetTrace(t.Context(), "new")
	require.NoError(t, err, "the trace within its retention is kept")
	require.Len(t, spans, 1)
}
