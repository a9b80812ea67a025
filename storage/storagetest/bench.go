package storagetest

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// BenchmarkUpsertRun measures saving a new run into a session that already
// holds 10, 100 and 1,000 runs. With one row per run the cost must not grow
// with the session. Each saved run is removed again outside the timer, so
// every iteration saves run number N+1 of the same session.
func BenchmarkUpsertRun(b *testing.B, newStore func(b *testing.B) storage.Store) {
	for _, existing := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("runs=%d", existing), func(b *testing.B) {
			store := newStore(b)
			ctx := b.Context()
			sessionID := "bench-session"
			if _, err := store.UpsertSession(ctx, &storage.Session{SessionID: sessionID, SessionType: storage.SessionTypeAgent, AgentID: "agent"}); err != nil {
				b.Fatal(err)
			}
			for i := range existing {
				if _, err := store.UpsertRun(ctx, storage.RunRecord{SessionID: sessionID, Run: benchRun(sessionID, fmt.Sprintf("seed-%04d", i))}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				runID := fmt.Sprintf("new-%d", i)
				rec, err := store.UpsertRun(ctx, storage.RunRecord{SessionID: sessionID, Run: benchRun(sessionID, runID)})
				if err != nil {
					b.Fatal(err)
				}
				if *rec.RunIndex != int64(existing) {
					b.Fatalf("run %s got run_index %d, want %d", runID, *rec.RunIndex, existing)
				}
				b.StopTimer()
				if err := store.DeleteRun(ctx, runID, ""); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// BenchmarkSessionVersion measures the version check a conversation's turn
// makes before it runs (see [storage.SessionVersioner]), by one caller at a
// time and by 32 at once. One op is one check; it asserts what every check
// returns.
func BenchmarkSessionVersion(b *testing.B, newStore func(b *testing.B) storage.Store) {
	for _, callers := range []int{1, 32} {
		b.Run(fmt.Sprintf("callers=%d", callers), func(b *testing.B) {
			store := newStore(b)
			versioner, ok := store.(storage.SessionVersioner)
			if !ok {
				b.Skip("the store reads no versions")
			}
			ctx := b.Context()
			const sessionID = "bench-session"
			if _, err := store.UpsertSession(ctx, &storage.Session{SessionID: sessionID, SessionType: storage.SessionTypeAgent, AgentID: "agent"}); err != nil {
				b.Fatal(err)
			}
			if _, err := store.UpsertRun(ctx, storage.RunRecord{SessionID: sessionID, Run: benchRun(sessionID, "stored")}); err != nil {
				b.Fatal(err)
			}
			want, _, err := versioner.SessionVersion(ctx, sessionID, "", "")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			check := func() error {
				v, stored, err := versioner.SessionVersion(ctx, sessionID, "", "stored")
				if err == nil && (v != want || !stored) {
					err = fmt.Errorf("version %+v, run stored %v; want %+v, true", v, stored, want)
				}
				return err
			}
			if callers == 1 {
				for b.Loop() {
					if err := check(); err != nil {
						b.Fatal(err)
					}
				}
				return
			}
			b.SetParallelism(max(1, callers/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := check(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// BenchmarkConversation persists a 25-turn conversation turn by turn, as an
// agent does: each turn saves its run and then the session (with its updated
// session_data). One op is the whole conversation.
func BenchmarkConversation(b *testing.B, newStore func(b *testing.B) storage.Store) {
	const turns = 25
	store := newStore(b)
	ctx := b.Context()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sessionID := fmt.Sprintf("conversation-%d", i)
		session := &storage.Session{SessionID: sessionID, SessionType: storage.SessionTypeAgent, AgentID: "agent", UserID: "user",
			SessionData: map[string]any{"session_state": map[string]any{}}}
		if _, err := store.UpsertSession(ctx, session); err != nil {
			b.Fatal(err)
		}
		for turn := range turns {
			if _, err := store.UpsertRun(ctx, storage.RunRecord{SessionID: sessionID, UserID: "user", Run: benchRun(sessionID, fmt.Sprintf("%s-turn-%d", sessionID, turn))}); err != nil {
				b.Fatal(err)
			}
			session.SessionData["session_state"] = map[string]any{"turns": turn + 1}
			if _, err := store.UpsertSession(ctx, session); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		if _, total, err := store.GetRuns(ctx, storage.RunQuery{SessionID: sessionID}); err != nil || total != turns {
			b.Fatalf("conversation %s stored %d runs (err %v), want %d", sessionID, total, err, turns)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turns), "ns/turn")
}

// BenchmarkForkSession measures forking a session of 100 runs: one op is
// one [storage.SessionStore.ForkSession], a committed transaction that
// copies the session row and every run. Each fork is deleted again outside
// the timer, so every iteration copies the same source into a store of the
// same size; the first one checks that all runs were copied.
func BenchmarkForkSession(b *testing.B, newStore func(b *testing.B) storage.Store) {
	const runs = 100
	store := newStore(b)
	ctx := b.Context()
	sessionID := "bench-source"
	if _, err := store.UpsertSession(ctx, &storage.Session{SessionID: sessionID, SessionType: storage.SessionTypeAgent, AgentID: "agent", UserID: "user",
		SessionData: map[string]any{"session_state": map[string]any{"turns": runs}, "claude_sdk_session_id": "cli-1"}}); err != nil {
		b.Fatal(err)
	}
	for i := range runs {
		out := benchRun(sessionID, fmt.Sprintf("seed-%03d", i))
		if i > 0 {
			out.ParentRunID = fmt.Sprintf("seed-%03d", i-1)
		}
		if _, err := store.UpsertRun(ctx, storage.RunRecord{SessionID: sessionID, UserID: "user", Run: out}); err != nil {
			b.Fatal(err)
		}
	}
	fork := storage.SessionFork{SessionID: sessionID, UserID: "user", DropSessionData: []string{"claude_sdk_session_id"}}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		forked, err := store.ForkSession(ctx, fork)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if i == 0 {
			if _, total, err := store.GetRuns(ctx, storage.RunQuery{SessionID: forked.SessionID}); err != nil || total != runs {
				b.Fatalf("fork %s holds %d runs (err %v), want %d", forked.SessionID, total, err, runs)
			}
		}
		if err := store.DeleteSession(ctx, forked.SessionID, ""); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkWriteTraces measures one export batch: a trace of 20 spans (an
// agent run's root span, model calls and tool calls, each with its
// attributes) written with one [storage.TraceStore.WriteTraces]. Every
// iteration writes a new trace, as every run makes one.
func BenchmarkWriteTraces(b *testing.B, newStore func(b *testing.B) storage.Store) {
	const spans = 20
	store, ok := newStore(b).(storage.TraceStore)
	if !ok {
		b.Fatal("the store does not implement storage.TraceStore")
	}
	ctx := b.Context()
	start := time.Date(2026, 12, 2, 14, 4, 36, 123456000, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		traceID := fmt.Sprintf("%032x", i)
		write := storage.TraceWrite{
			Trace: storage.Trace{TraceID: traceID, Name: "Assistant.run", Status: "OK", StartTime: start, EndTime: start.Add(2 * time.Second),
				RunID: "run-" + traceID, SessionID: "session", UserID: "user", AgentID: "assistant"},
			NameLevel: storage.TraceLevelAgent,
			Spans:     make([]storage.Span, spans),
		}
		for j := range spans {
			spanStart := start.Add(time.Duration(j) * 50 * time.Millisecond)
			span := storage.Span{SpanID: fmt.Sprintf("%08x%08x", i, j), TraceID: traceID, Name: "gpt-5-mini.invoke", SpanKind: "INTERNAL",
				StatusCode: "OK", StartTime: spanStart, EndTime: spanStart.Add(40 * time.Millisecond), DurationMS: 40,
				Attributes: map[string]any{"openinference.span.kind": "LLM", "llm.model_name": "gpt-5-mini", "llm.token_count.prompt": 812,
					"llm.token_count.completion": 64, "input.value": "What is the capital of France?", "output.value": "Paris.", "session.id": "session"}}
			if j > 0 {
				span.ParentSpanID = fmt.Sprintf("%08x%08x", i, 0)
			}
			write.Spans[j] = span
		}
		if err := store.WriteTraces(ctx, []storage.TraceWrite{write}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*spans), "ns/span")
}

// benchRun is a realistic small run: a user message, an assistant reply and
// metrics, about 1 KB of JSON.
func benchRun(sessionID, runID string) *run.Output {
	return &run.Output{
		RunID:     runID,
		AgentID:   "agent",
		SessionID: sessionID,
		Status:    run.StatusCompleted,
		Content:   "The capital of France is Paris. It has been the capital since the 10th century and is home to about two million people.",
		Metadata:  map[string]any{"source": "benchmark", "tags": []string{"geo", "facts"}},
		CreatedAt: 1767000000,
	}
}

// BenchmarkTurnSave measures what the store does for each turn of an
// agent's conversation: the version check the turn opens with (see
// [storage.SessionVersioner]) and the save of its run with its session
// ([storage.SessionStore.SaveRun]), the run with a model and token usage,
// so the day's metrics change too. One op is one turn; every 25 turns a
// new session starts. Each check must find the version the last save
// returned, and each run the next run_index.
func BenchmarkTurnSave(b *testing.B, newStore func(b *testing.B) storage.Store) {
	const turns, user = 25, "user"
	store := newStore(b)
	versioner, _ := store.(storage.SessionVersioner)
	ctx := b.Context()
	var session *storage.Session
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		turn := i % turns
		i++
		if turn == 0 {
			session = &storage.Session{SessionID: fmt.Sprintf("turns-%d", i/turns), SessionType: storage.SessionTypeAgent, AgentID: "agent", UserID: user,
				SessionData: map[string]any{"session_state": map[string]any{}}}
		} else if versioner != nil {
			v, stored, err := versioner.SessionVersion(ctx, session.SessionID, user, "")
			if err != nil || v != session.Version() || stored {
				b.Fatalf("turn %d of %s: version %+v, run stored %v, err %v; the last save returned %+v", turn, session.SessionID, v, stored, err, session.Version())
			}
		}
		out := benchRun(session.SessionID, fmt.Sprintf("%s-%d", session.SessionID, turn))
		out.UserID, out.Model, out.ModelProvider = user, "model", "provider"
		out.Metrics = &run.RunMetrics{Metrics: run.Metrics{InputTokens: 12, OutputTokens: 3, TotalTokens: 15}}
		saved, rec, err := store.SaveRun(ctx, session, storage.RunRecord{Run: out, UserID: user})
		if err != nil || rec.RunIndex == nil || *rec.RunIndex != int64(turn) {
			b.Fatalf("turn %d of %s: run_index %v, err %v", turn, session.SessionID, rec.RunIndex, err)
		}
		session = saved
	}
}
