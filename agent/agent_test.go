package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/tool"
)

// bundle is one test's agent, its scripted model and its store.
type bundle struct {
	agent  *agent.Agent
	model  *scripted.Model
	store  storage.Store
	sleeps []time.Duration
}

func setup(t *testing.T, replies []scripted.Reply, configure func(*agent.Config)) *bundle {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "agent.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	b := &bundle{model: scripted.New(replies), store: store}
	cfg := agent.Config{
		ID:           "assistant",
		Model:        b.model,
		Instructions: "You are helpful.",
		Store:        store,
		Sleep: func(ctx context.Context, d time.Duration) error {
			b.sleeps = append(b.sleeps, d)
			return ctx.Err()
		},
	}
	if configure != nil {
		configure(&cfg)
	}
	b.agent, err = agent.New(cfg)
	require.NoError(t, err)
	return b
}

func collect(t *testing.T, events func(func(run.Event, error) bool)) []run.Event {
	t.Helper()
	var got []run.Event
	for event, err := range events {
		require.NoError(t, err)
		got = append(got, event)
	}
	return got
}

func names(events []run.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.EventName()
	}
	return out
}

type weatherArgs struct {
	City string `json:"city"`
}

func weatherTool(t *testing.T, cfg tool.Config) tool.Tool {
	t.Helper()
	if cfg.Name == "" {
		cfg.Name = "get_weather"
	}
	cfg.Description = "Current weather of a city."
	weather, err := tool.New(cfg, func(ctx context.Context, args weatherArgs) (string, error) {
		return "sunny in " + args.City, nil
	})
	require.NoError(t, err)
	return weather
}

func TestSingleTurnCompletesAndPersists(t *testing.T) {
	b := setup(t, []scripted.Reply{scripted.Text("Hello!")}, nil)
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "hi", SessionID: "s1", UserID: "ada"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "Hello!", out.Content)
	require.Equal(t, "str", out.ContentType)
	require.Positive(t, out.Metrics.TotalTokens)
	require.Len(t, out.Metrics.Details[run.ModelTypeModel], 1)

	rec, err := b.store.GetRun(t.Context(), out.RunID, "ada")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, rec.Run.Status)
	require.Equal(t, "Hello!", rec.Run.Content)
	roles := []string{}
	for _, m := range rec.Run.Messages {
		roles = append(roles, m.Role)
	}
	require.Equal(t, []string{"system", "user", "assistant"}, roles)

	session, err := b.store.GetSession(t.Context(), "s1", storage.GetSessionOptions{UserID: "ada"})
	require.NoError(t, err)
	require.Contains(t, session.SessionData, "session_metrics", "completed runs add to the session's metrics")
}

func TestStreamYieldsEventsInOrder(t *testing.T) {
	b := setup(t, []scripted.Reply{{Content: "Hello there, friend!", Chunks: 3}}, func(c *agent.Config) { c.StoreEvents = true })
	events := collect(t, b.agent.Stream(t.Context(), &run.Input{InputContent: "hi", SessionID: "s1"}))
	require.Equal(t, []string{"RunStarted", "RunContent", "RunContent", "RunContent", "RunCompleted"}, names(events))
	var text string
	for _, e := range events[1:4] {
		text += e.(*run.RunContent).Content.(string)
	}
	require.Equal(t, "Hello there, friend!", text)
	done := events[4].(*run.RunCompleted)
	require.Equal(t, "Hello there, friend!", done.Content)
	require.Equal(t, "s1", done.SessionID)

	rec, err := b.store.GetRun(t.Context(), done.RunID, "")
	require.NoError(t, err)
	require.Len(t, rec.Run.Events, 5, "store_events keeps the events on the run")
}

func TestToolResultGoesBackToTheModel(t *testing.T) {
	b := setup(t, []scripted.Reply{scripted.ToolCall("get_weather", `{"city":"Paris"}`), scripted.Text("It is sunny.")},
		func(c *agent.Config) { c.Tools = []tool.Tool{weatherTool(t, tool.Config{})} })
	events := collect(t, b.agent.Stream(t.Context(), &run.Input{InputContent: "weather?", SessionID: "s1"}))
	require.Equal(t, []string{"RunStarted", "ToolCallStarted", "ToolCallCompleted", "RunContent", "RunCompleted"}, names(events))

	requests := b.model.Requests()
	require.Len(t, requests, 2)
	last := requests[1].Messages[len(requests[1].Messages)-1]
	require.Equal(t, run.RoleTool, last.Role)
	require.Equal(t, "sunny in Paris", last.Content)
	require.Equal(t, "get_weather", requests[0].Tools[0].Name)

	out := events[4].(*run.RunCompleted)
	rec, err := b.store.GetRun(t.Context(), out.RunID, "")
	require.NoError(t, err)
	require.Len(t, rec.Run.Tools, 1)
	require.Equal(t, "sunny in Paris", *rec.Run.Tools[0].Result)
	require.NotNil(t, rec.Run.LastCheckpointAtMessageIndex, "the tool batch is a checkpoint")
}

// TestShowResultStreamsTheToolResultToTheUser: a show_result tool's result
// is streamed as run content when the call completes and heads the run's
// content; the model still reads it, and a failed call is not shown.
func TestShowResultStreamsTheToolResultToTheUser(t *testing.T) {
	b := setup(t, []scripted.Reply{scripted.ToolCall("get_weather", `{"city":"Paris"}`), scripted.ToolCall("get_weather", `{"city":7}`),
		scripted.Text("Take sunglasses.")},
		func(c *agent.Config) { c.Tools = []tool.Tool{weatherTool(t, tool.Config{ShowResult: true})} })
	events := collect(t, b.agent.Stream(t.Context(), &run.Input{InputContent: "weather?", SessionID: "s1"}))
	require.Equal(t, []string{"RunStarted", "ToolCallStarted", "ToolCallCompleted", "RunContent", "ToolCallStarted", "ToolCallError",
		"RunContent", "RunCompleted"}, names(events))
	require.Equal(t, "sunny in Paris", events[3].(*run.RunContent).Content)
	done := events[7].(*run.RunCompleted)
	require.Equal(t, "sunny in Paris\n\nTake sunglasses.", done.Content)
	require.Equal(t, "sunny in Paris", b.model.Requests()[1].Messages[3].Content, "the model reads the result too")

	rec, err := b.store.GetRun(t.Context(), done.RunID, "")
	require.NoError(t, err)
	require.Equal(t, "sunny in Paris\n\nTake sunglasses.", rec.Run.Content)
}

func TestBadToolArgumentsAreReportedToTheModel(t *testing.T) {
	b := setup(t, []scripted.Reply{scripted.ToolCall("get_weather", `{"city": 42}`), scripted.Text("Sorry.")},
		func(c *agent.Config) { c.Tools = []tool.Tool{weatherTool(t, tool.Config{})} })
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "weather?"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.True(t, *out.Tools[0].ToolCallError)
	toolMsg := b.model.Requests()[1].Messages[3]
	require.Equal(t, run.RoleTool, toolMsg.Role)
	require.Contains(t, toolMsg.Content, "city")
}

func TestHistoryCarriesEarlierTurns(t *testing.T) {
	b := setup(t, []scripted.Reply{scripted.Text("Nice to meet you, Ada."), scripted.Text("Your name is Ada.")},
		func(c *agent.Config) { c.AddHistoryToContext = true })
	_, err := b.agent.Run(t.Context(), &run.Input{InputContent: "I am Ada", SessionID: "s1"})
	require.NoError(t, err)
	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "Who am I?", SessionID: "s1"})
	require.NoError(t, err)

	second := b.model.Requests()[1].Messages
	require.Len(t, second, 4, "system, the first turn's user and assistant messages, the new input")
	require.Equal(t, "I am Ada", second[1].Content)
	require.True(t, second[1].FromHistory)
	require.Equal(t, "Nice to meet you, Ada.", second[2].Content)
	require.False(t, second[3].FromHistory)

	runs, _, err := b.store.GetRuns(t.Context(), storage.RunQuery{SessionID: "s1"})
	require.NoError(t, err)
	require.Len(t, runs, 2)
	for _, m := range runs[1].Run.Messages {
		require.False(t, m.FromHistory, "history copies are not stored again")
	}
}

func TestRunExecutedAgainIsNotItsOwnHistory(t *testing.T) {
	b := setup(t, []scripted.Reply{scripted.Text("Hello."), scripted.Text("Partial."), scripted.Text("Again.")},
		func(c *agent.Config) { c.AddHistoryToContext = true; c.NumHistoryRuns = 1 })
	_, err := b.agent.Run(t.Context(), &run.Input{InputContent: "I am Ada", SessionID: "s1"})
	require.NoError(t, err)
	in := &run.Input{RunID: "r2", InputContent: "Who am I?", SessionID: "s1", PersistOnStart: true}
	_, err = b.agent.Run(t.Context(), in)
	require.NoError(t, err)
	// The same run executed again (after a crash or a failed attempt) sees
	// the session's earlier run, not its own stored messages.
	_, err = b.agent.Run(t.Context(), &run.Input{RunID: "r2", InputContent: "Who am I?", SessionID: "s1", PersistOnStart: true})
	require.NoError(t, err)
	again := b.model.Requests()[2].Messages
	require.Len(t, again, 4, "system, the first run's two messages, the input")
	require.Equal(t, "I am Ada", again[1].Content)
	require.Equal(t, "Hello.", again[2].Content)
	require.Equal(t, "Who am I?", again[3].Content)
}

func TestHistorySkipsFailedRuns(t *testing.T) {
	authErr := &model.Error{Provider: "Scripted", StatusCode: 401, Class: model.ClassAuth, Message: "bad key"}
	b := setup(t, []scripted.Reply{scripted.Fail(authErr), scripted.Text("ok")}, func(c *agent.Config) { c.AddHistoryToContext = true })
	_, err := b.agent.Run(t.Context(), &run.Input{InputContent: "first", SessionID: "s1"})
	require.Error(t, err)
	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "second", SessionID: "s1"})
	require.NoError(t, err)
	require.Len(t, b.model.Requests()[1].Messages, 2, "an ERROR run is not history")
}

type answer struct {
	City  string `json:"city"`
	TempC int    `json:"temp_c"`
}

func TestStructuredOutput(t *testing.T) {
	schema, err := agent.SchemaFor[answer]()
	require.NoError(t, err)
	b := setup(t, []scripted.Reply{scripted.Text(`{"city":"Paris","temp_c":21}`)}, func(c *agent.Config) { c.OutputSchema = schema })
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "weather?"})
	require.NoError(t, err)
	require.Equal(t, "answer", out.ContentType)
	require.Equal(t, map[string]any{"city": "Paris", "temp_c": float64(21)}, out.Content)
	require.NotNil(t, b.model.Requests()[0].ResponseFormat)
}

func TestStructuredOutputThatDoesNotMatchIsAnError(t *testing.T) {
	schema, err := agent.SchemaFor[answer]()
	require.NoError(t, err)
	b := setup(t, []scripted.Reply{scripted.Text(`{"city":"Paris","temp_c":"warm"}`)}, func(c *agent.Config) { c.OutputSchema = schema })
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "weather?"})
	var invalid *agent.InvalidOutputError
	require.ErrorAs(t, err, &invalid)
	require.Equal(t, run.StatusError, out.Status)
}

func TestRetriesRetryableFailures(t *testing.T) {
	unavailable := &model.Error{Provider: "Scripted", StatusCode: 503, Class: model.ClassServer, Message: "unavailable"}
	b := setup(t, []scripted.Reply{scripted.Fail(unavailable), scripted.Fail(unavailable), scripted.Text("finally")}, func(c *agent.Config) {
		c.Retries = 2
		c.DelayBetweenRetries = 100 * time.Millisecond
		c.ExponentialBackoff = true
	})
	events := collect(t, b.agent.Stream(t.Context(), &run.Input{InputContent: "hi"}))
	require.Equal(t, []string{"RunStarted", "RunRetry", "RunRetry", "RunContent", "RunCompleted"}, names(events))
	retry := events[1].(*run.RunRetry)
	require.Equal(t, 2, retry.Attempt)
	require.Equal(t, 3, retry.MaxAttempts)
	require.Contains(t, retry.Error, "503")
	require.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, b.sleeps)

	rec, err := b.store.GetRun(t.Context(), events[4].(*run.RunCompleted).RunID, "")
	require.NoError(t, err)
	attempts, err := rec.Run.Attempts()
	require.NoError(t, err)
	require.Len(t, attempts, 3)
	require.True(t, attempts[0].Failed())
	require.False(t, attempts[2].Failed())
}

func TestAuthFailureIsNotRetried(t *testing.T) {
	denied := &model.Error{Provider: "Scripted", StatusCode: 401, Class: model.ClassAuth, Message: "invalid api key"}
	b := setup(t, []scripted.Reply{scripted.Fail(denied), scripted.Text("never")}, func(c *agent.Config) { c.Retries = 3 })
	events := collect(t, b.agent.Stream(t.Context(), &run.Input{InputContent: "hi"}))
	require.Equal(t, []string{"RunStarted", "RunError"}, names(events))
	require.Equal(t, "authentication_error", events[1].(*run.RunError).ErrorType)
	require.Len(t, b.model.Requests(), 1, "exactly one request")
	rec, err := b.store.GetRun(t.Context(), events[1].Base().RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusError, rec.Run.Status)
}

func TestConfirmationPausesAndContinues(t *testing.T) {
	for _, confirm := range []bool{true, false} {
		t.Run(fmt.Sprintf("confirmed=%v", confirm), func(t *testing.T) {
			b := setup(t, []scripted.Reply{scripted.ToolCall("get_weather", `{"city":"Paris"}`), scripted.Text("done")},
				func(c *agent.Config) { c.Tools = []tool.Tool{weatherTool(t, tool.Config{RequiresConfirmation: true})} })
			events := collect(t, b.agent.Stream(t.Context(), &run.Input{InputContent: "weather?", SessionID: "s1", UserID: "ada"}))
			require.Equal(t, "RunPaused", events[len(events)-1].EventName())
			paused := events[len(events)-1].(*run.RunPaused)
			require.Len(t, paused.Requirements, 1)

			rec, err := b.store.GetRun(t.Context(), paused.RunID, "ada")
			require.NoError(t, err)
			require.Equal(t, run.StatusPaused, rec.Run.Status)
			require.Len(t, rec.Run.Requirements, 1, "the requirement is persisted")
			require.Len(t, b.model.Requests(), 1, "the tool did not run")

			_, err = b.agent.ContinueRun(t.Context(), &agent.ContinueRequest{RunID: paused.RunID, UserID: "ada"})
			require.ErrorIs(t, err, agent.ErrUnresolved)

			resolution := *rec.Run.Tools[0]
			resolution.Confirmed = &confirm
			resolution.ConfirmationNote = "not now"
			out, err := b.agent.ContinueRun(t.Context(), &agent.ContinueRequest{RunID: paused.RunID, UserID: "ada", Tools: []*run.ToolExecution{&resolution}})
			require.NoError(t, err)
			require.Equal(t, run.StatusCompleted, out.Status)
			require.Equal(t, paused.RunID, out.RunID, "a paused run continues in place")
			toolMsg := b.model.Requests()[1].Messages[len(b.model.Requests()[1].Messages)-1]
			if confirm {
				require.Equal(t, "sunny in Paris", toolMsg.Content)
			} else {
				require.Contains(t, toolMsg.Content, "rejected")
				require.Contains(t, toolMsg.Content, "not now")
			}
			rec, err = b.store.GetRun(t.Context(), paused.RunID, "ada")
			require.NoError(t, err)
			require.Equal(t, run.StatusCompleted, rec.Run.Status)
		})
	}
}

func TestContinueFromCheckpointForks(t *testing.T) {
	b := setup(t, []scripted.Reply{
		scripted.ToolCall("get_weather", `{"city":"Paris"}`), scripted.Text("It is sunny."), scripted.Text("Again: sunny."), scripted.Text("Once more."),
	}, func(c *agent.Config) { c.Tools = []tool.Tool{weatherTool(t, tool.Config{})} })
	first, err := b.agent.Run(t.Context(), &run.Input{InputContent: "weather?", SessionID: "s1"})
	require.NoError(t, err)
	checkpoint := *first.LastCheckpointAtMessageIndex
	require.Equal(t, 4, checkpoint, "system, user, assistant tool call, tool result")

	fork, err := b.agent.ContinueRun(t.Context(), &agent.ContinueRequest{RunID: first.RunID, ContinueFrom: strconv.Itoa(checkpoint), Fork: true})
	require.NoError(t, err)
	require.NotEqual(t, first.RunID, fork.RunID)
	require.Equal(t, first.RunID, fork.ForkedFromRunID)
	require.Equal(t, checkpoint, *fork.ForkedFromMessageIndex)
	require.Equal(t, "Again: sunny.", fork.Content)

	sent := b.model.Requests()[2].Messages
	require.Len(t, sent, checkpoint, "the model sees exactly the kept messages")
	for i, m := range sent {
		require.Equal(t, first.Messages[i].Role, m.Role)
		require.Equal(t, first.Messages[i].Content, m.Content)
	}
	orig, err := b.store.GetRun(t.Context(), first.RunID, "")
	require.NoError(t, err)
	require.Equal(t, "It is sunny.", orig.Run.Content, "the original is never rewritten")

	// A cut inside a tool batch snaps down so the call keeps its result.
	snapped, err := b.agent.ContinueRun(t.Context(), &agent.ContinueRequest{RunID: first.RunID, ContinueFrom: "3", Fork: true})
	require.NoError(t, err)
	require.Equal(t, 2, *snapped.ForkedFromMessageIndex)
	require.Len(t, b.model.Requests()[3].Messages, 2, "cutting after the tool call drops the call too")
	require.Empty(t, snapped.Tools, "tools of dropped messages are pruned")
}

func TestCancelledContextEndsCancelled(t *testing.T) {
	started := make(chan struct{})
	var calls atomic.Int32
	slow, err := tool.New(tool.Config{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
		calls.Add(1)
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	require.NoError(t, err)
	b := setup(t, []scripted.Reply{scripted.ToolCall("slow", `{}`), scripted.Text("never")}, func(c *agent.Config) { c.Tools = []tool.Tool{slow} })
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-started; cancel() }()
	var events []run.Event
	for event, err := range b.agent.Stream(ctx, &run.Input{InputContent: "go", SessionID: "s1"}) {
		require.NoError(t, err)
		events = append(events, event)
	}
	last := events[len(events)-1]
	require.Equal(t, "RunCancelled", last.EventName())
	rec, err := b.store.GetRun(t.Context(), last.Base().RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, rec.Run.Status, "the cancelled run is persisted")
	require.Len(t, b.model.Requests(), 1)
}

// blockingTool is a tool that signals started and waits for its context.
func blockingTool(t *testing.T, started chan struct{}) tool.Tool {
	t.Helper()
	slow, err := tool.New(tool.Config{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-ctx.Done()
		return "", ctx.Err()
	})
	require.NoError(t, err)
	return slow
}

func TestTimeLimitEndsTheRunInError(t *testing.T) {
	started := make(chan struct{})
	b := setup(t, []scripted.Reply{scripted.ToolCall("slow", `{}`), scripted.Text("never")},
		func(c *agent.Config) { c.Tools = []tool.Tool{blockingTool(t, started)} })
	ctx, cancel := run.WithTimeLimit(t.Context(), 50*time.Millisecond)
	defer cancel()
	events := collect(t, b.agent.Stream(ctx, &run.Input{InputContent: "go", SessionID: "s1"}))
	last, ok := events[len(events)-1].(*run.RunError)
	require.True(t, ok, "a run over its time limit ends with RunError, got %s", events[len(events)-1].EventName())
	require.Equal(t, "run_timeout", last.ErrorType)
	require.Contains(t, last.Content, "timed out after 50ms")
	rec, err := b.store.GetRun(t.Context(), last.RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusError, rec.Run.Status, "stored ERROR, not CANCELLED")
}

func TestInterruptedRunStaysRunningWithoutFinalEvent(t *testing.T) {
	started := make(chan struct{})
	b := setup(t, []scripted.Reply{scripted.ToolCall("slow", `{}`), scripted.Text("never")},
		func(c *agent.Config) { c.Tools = []tool.Tool{blockingTool(t, started)} })
	ctx, cancel := context.WithCancelCause(t.Context())
	go func() { <-started; run.Interrupt(cancel) }()
	var events []run.Event
	var streamErr error
	for event, err := range b.agent.Stream(ctx, &run.Input{InputContent: "go", SessionID: "s1", PersistOnStart: true}) {
		if err != nil {
			streamErr = err
			continue
		}
		events = append(events, event)
	}
	require.ErrorIs(t, streamErr, run.ErrInterrupted, "the stream ends with the interruption")
	for _, e := range events {
		_, final := run.FinalStatus(e)
		require.False(t, final, "no final event for an interrupted run, got %s", e.EventName())
	}
	rec, err := b.store.GetRun(t.Context(), events[0].Base().RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, rec.Run.Status, "the run is kept RUNNING for its owner to run again")
}

func TestBreakingTheStreamCancelsTheRun(t *testing.T) {
	b := setup(t, []scripted.Reply{{Content: "a long answer in pieces", Chunks: 5}}, nil)
	var runID string
	for event, err := range b.agent.Stream(t.Context(), &run.Input{InputContent: "go", SessionID: "s1"}) {
		require.NoError(t, err)
		runID = event.Base().RunID
		if event.EventName() == "RunContent" {
			break
		}
	}
	rec, err := b.store.GetRun(t.Context(), runID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCancelled, rec.Run.Status)
}

func TestSessionOfAnotherUserIsRefused(t *testing.T) {
	b := setup(t, []scripted.Reply{scripted.Text("hi"), scripted.Text("no")}, nil)
	_, err := b.agent.Run(t.Context(), &run.Input{InputContent: "hi", SessionID: "s1", UserID: "ada"})
	require.NoError(t, err)
	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "hi", SessionID: "s1", UserID: "bob"})
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.Len(t, b.model.Requests(), 1)
}

func TestNewValidatesConfig(t *testing.T) {
	_, err := agent.New(agent.Config{})
	require.ErrorContains(t, err, "Model is required")
	m := scripted.New(nil)
	_, err = agent.New(agent.Config{Model: m, Retries: -1})
	require.ErrorContains(t, err, "Retries")
	_, err = agent.JSONSchema("x", json.RawMessage(`{"type":"string"}`))
	require.Error(t, err)
}

func TestCostFromPriceTable(t *testing.T) {
	usage := run.Metrics{InputTokens: 1000, OutputTokens: 500, TotalTokens: 1500}
	b := setup(t, []scripted.Reply{{Content: "hi", Usage: &usage}}, func(c *agent.Config) {
		c.Prices = agent.PriceTable{"scripted": {Input: 2, Output: 10}}
	})
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "hi"})
	require.NoError(t, err)
	require.NotNil(t, out.Metrics.Cost)
	require.InDelta(t, 0.002+0.005, *out.Metrics.Cost, 1e-12)
}

func TestSessionStateIsMergedAndSaved(t *testing.T) {
	b := setup(t, []scripted.Reply{scripted.Text("a"), scripted.Text("b")}, func(c *agent.Config) {
		c.SessionState = map[string]any{"cart": []any{}, "currency": "EUR"}
	})
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "hi", SessionID: "s1", SessionState: map[string]any{"currency": "USD"}})
	require.NoError(t, err)
	require.Equal(t, map[string]any{"cart": []any{}, "currency": "USD"}, out.SessionState)
	out, err = b.agent.Run(t.Context(), &run.Input{InputContent: "again", SessionID: "s1"})
	require.NoError(t, err)
	require.Equal(t, "USD", out.SessionState["currency"], "the state persists across runs of the session")
}

type looseAnswer struct {
	City string `json:"city"`
	Note string `json:"note,omitempty"`
}

// TestStrictOnlyWhenTheSchemaAllows: providers reject strict mode for a schema
// with optional properties, so such a schema is sent without it (and still
// validated by the agent).
func TestStrictOnlyWhenTheSchemaAllows(t *testing.T) {
	for _, tc := range []struct {
		schema func() (*agent.OutputSchema, error)
		strict bool
	}{
		{agent.SchemaFor[answer], true},
		{agent.SchemaFor[looseAnswer], false},
	} {
		schema, err := tc.schema()
		require.NoError(t, err)
		b := setup(t, []scripted.Reply{scripted.Text(`{"city":"Paris","temp_c":1}`)}, func(c *agent.Config) { c.OutputSchema = schema })
		_, _ = b.agent.Run(t.Context(), &run.Input{InputContent: "x"})
		require.Equal(t, tc.strict, b.model.Requests()[0].ResponseFormat.Strict, schema.Name)
	}
}

// TestHistoryOnANewUserSession: the first run of a user's new session has no
// history to read, and must not fail looking for it.
func TestHistoryOnANewUserSession(t *testing.T) {
	b := setup(t, []scripted.Reply{scripted.Text("hi"), scripted.Text("again")}, func(c *agent.Config) { c.AddHistoryToContext = true })
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "hello", UserID: "ada"})
	require.NoError(t, err)
	_, err = b.agent.Run(t.Context(), &run.Input{InputContent: "and now?", UserID: "ada", SessionID: out.SessionID})
	require.NoError(t, err)
	require.Len(t, b.model.Requests()[1].Messages, 4, "system, history (2), input")
}

// TestPersistOnStartListsTheRunInFlight: with PersistOnStart the run row
// exists, RUNNING, while the model is still answering.
func TestPersistOnStartListsTheRunInFlight(t *testing.T) {
	var seen run.Status
	var b *bundle
	b = setup(t, []scripted.Reply{scripted.Respond(func(req *model.Request) scripted.Reply {
		runs, _, err := b.store.GetRuns(context.Background(), storage.RunQuery{SessionID: "s1"})
		if err == nil && len(runs) == 1 {
			seen = runs[0].Run.Status
		}
		return scripted.Text("done")
	})}, nil)
	out, err := b.agent.Run(t.Context(), &run.Input{InputContent: "hi", SessionID: "s1", PersistOnStart: true})
	require.NoError(t, err)
	require.Equal(t, run.StatusRunning, seen, "the RUNNING row was there during the model call")
	rec, err := b.store.GetRun(t.Context(), out.RunID, "")
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, rec.Run.Status)
}
