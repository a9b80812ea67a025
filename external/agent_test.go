package external_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// The scripted driver's identity, as runs and sessions record it.
const (
	fakeSDK        = "fake-sdk"
	fakeModel      = "fake-model"
	fakeProvider   = "fake-provider"
	fakeSessionKey = "fake_session_id"
)

// turnStep scripts one call of [scriptedDriver.Turn].
type turnStep func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error)

// turnCall is one call the driver received, with the harness session it
// was handed (the driver may change req.HarnessSession during the turn).
type turnCall struct {
	req     *external.TurnRequest
	harness string
}

// scriptedDriver is an [external.Driver] whose n-th Turn call runs the
// n-th step; the last step repeats.
type scriptedDriver struct {
	steps []turnStep

	mu    sync.Mutex
	calls []turnCall
}

var _ external.Driver = (*scriptedDriver)(nil)

func script(steps ...turnStep) *scriptedDriver { return &scriptedDriver{steps: steps} }

func (d *scriptedDriver) SDK() string                  { return fakeSDK }
func (d *scriptedDriver) Model() (id, provider string) { return fakeModel, fakeProvider }
func (d *scriptedDriver) SessionKey() string           { return fakeSessionKey }

func (d *scriptedDriver) Turn(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
	d.mu.Lock()
	n := len(d.calls)
	d.calls = append(d.calls, turnCall{req: req, harness: req.HarnessSession})
	step := d.steps[min(n, len(d.steps)-1)]
	d.mu.Unlock()
	return step(ctx, req)
}

// turns returns the calls received so far.
func (d *scriptedDriver) turns() []turnCall {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]turnCall(nil), d.calls...)
}

// answerStep emits text as one content delta, keeps harness as the harness
// session (when set) and completes with 10 input and 5 output tokens.
func answerStep(text, harness string) turnStep {
	return func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		req.Emit(&run.RunContent{Content: text})
		if harness != "" {
			req.HarnessSession = harness
		}
		return &external.TurnResult{Content: text,
			Messages: []*run.Message{{Role: run.RoleAssistant, Content: text}},
			Metrics:  &run.RunMetrics{Metrics: run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}}}, nil
	}
}

// failStep fails the turn with err.
func failStep(err error) turnStep {
	return func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) { return nil, err }
}

// blockStep closes started, then waits for release (and answers "unblocked"
// with harness session "h-blocker") or for ctx to end.
func blockStep(started chan<- struct{}, release <-chan struct{}) turnStep {
	return func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		close(started)
		select {
		case <-release:
			return answerStep("unblocked", "h-blocker")(ctx, req)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// waitCtxStep closes started and returns ctx's error once it ends; it fails
// the test's run if ctx is never cancelled.
func waitCtxStep(started chan<- struct{}) turnStep {
	return func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		close(started)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return nil, errors.New("the turn's context was never cancelled")
		}
	}
}

// tool is a finished tool call.
func tool(id, name string) *run.ToolExecution {
	result := "ok " + id
	return &run.ToolExecution{ToolCallID: id, ToolName: name, ToolArgs: map[string]any{"cmd": name}, Result: &result,
		ToolCallError: new(false)}
}

// emitTool reports a tool call's start and end.
func emitTool(req *external.TurnRequest, call *run.ToolExecution) {
	req.Emit(&run.ToolCallStarted{Tool: call})
	req.Emit(&run.ToolCallCompleted{Tool: call, Content: *call.Result})
}

// testClock is a clock the test moves.
type testClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *testClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// sleeps records the waits an agent asks for without waiting.
type sleeps struct {
	mu     sync.Mutex
	delays []time.Duration
}

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.delays = append(s.delays, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeps) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.delays...)
}

// openTestStore opens a SQLite store in a temporary directory.
func openTestStore(t *testing.T) storage.Store {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "x.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	return store
}

// newTestAgent builds an agent on cfg, working in a temporary directory and
// logging nowhere unless cfg says otherwise.
func newTestAgent(t *testing.T, cfg external.Config) *external.Agent {
	t.Helper()
	if cfg.Cwd == "" {
		cfg.Cwd = t.TempDir()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	agent, err := external.New(cfg)
	require.NoError(t, err)
	return agent
}

// streamed is one item of a stream.
type streamed struct {
	event run.Event
	err   error
}

// drain ranges a stream to its end.
func drain(seq iter.Seq2[run.Event, error]) (events []run.Event, errs []error) {
	for e, err := range seq {
		if err != nil {
			errs = append(errs, err)
			continue
		}
		events = append(events, e)
	}
	return events, errs
}

// names lists the events' names.
func names(events []run.Event) []string {
	out := make([]string, len(events))
	for i, e := range events {
		out[i] = e.EventName()
	}
	return out
}

// only returns the single event of type T.
func only[T run.Event](t *testing.T, events []run.Event) T {
	t.Helper()
	var found []T
	for _, e := range events {
		if typed, ok := e.(T); ok {
			found = append(found, typed)
		}
	}
	require.Len(t, found, 1, "events %v", names(events))
	return found[0]
}

// storedRun reads a run back from the store.
func storedRun(t *testing.T, store storage.Store, runID string) *run.Output {
	t.Helper()
	rec, err := store.GetRun(context.WithoutCancel(t.Context()), runID, "")
	require.NoError(t, err)
	return rec.Run
}

// requireNoRun checks that nothing was written for runID.
func requireNoRun(t *testing.T, store storage.Store, runID string) {
	t.Helper()
	_, err := store.GetRun(t.Context(), runID, "")
	require.ErrorIs(t, err, storage.ErrNotFound, "run %s must not be written", runID)
}

// storedSession reads a session back from the store.
func storedSession(t *testing.T, store storage.Store, sessionID string) *storage.Session {
	t.Helper()
	session, err := store.GetSession(t.Context(), sessionID, storage.GetSessionOptions{})
	require.NoError(t, err)
	return session
}

// sessionMetrics reads session_data["session_metrics"] of a stored session.
func sessionMetrics(t *testing.T, session *storage.Session) run.SessionMetrics {
	t.Helper()
	raw, ok := session.SessionData["session_metrics"]
	require.True(t, ok, "session_data %v has no session_metrics", session.SessionData)
	encoded, err := json.Marshal(raw)
	require.NoError(t, err)
	var metrics run.SessionMetrics
	require.NoError(t, json.Unmarshal(encoded, &metrics))
	return metrics
}

// waitClosed waits for ch to close, failing the test after a while.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestAgentCompletedTurn(t *testing.T) {
	store := openTestStore(t)
	clock := &testClock{now: time.Now()}
	call := tool("call-1", "bash")
	driver := script(func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		clock.Advance(2 * time.Second)
		req.Emit(&run.RunContent{Content: "Hel"})
		emitTool(req, call)
		clock.Advance(time.Second)
		req.Emit(&run.RunContent{Content: "lo"})
		req.HarnessSession = "harness-1"
		clock.Advance(2 * time.Second)
		return &external.TurnResult{
			Content: "Hello",
			Tools:   []*run.ToolExecution{call},
			Messages: []*run.Message{
				{Role: run.RoleAssistant, ToolCalls: []run.ToolCall{{ID: "call-1", Function: run.ToolCallFunction{Name: "bash", Arguments: `{"cmd":"bash"}`}}}},
				{Role: run.RoleTool, ToolCallID: "call-1", ToolName: "bash", Content: "ok call-1"},
				{Role: run.RoleAssistant, Content: "Hello"},
			},
			Metrics: &run.RunMetrics{Metrics: run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15, Cost: new(0.25)},
				Details: map[string][]run.ModelMetrics{run.ModelTypeModel: {{ID: fakeModel, Provider: fakeProvider,
					Metrics: run.Metrics{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}}}}},
		}, nil
	})
	agent := newTestAgent(t, external.Config{Name: "Coder", Driver: driver, Store: store, Now: clock.Now})
	require.Equal(t, "Coder", agent.ID(), "the id defaults to the name")
	require.Equal(t, run.KindAgent, agent.Kind())

	events, errs := drain(agent.Stream(t.Context(), &run.Input{InputContent: "say hello", SessionID: "s1", RunID: "r1",
		Metadata: map[string]any{"ticket": "T-1"}}))
	require.Empty(t, errs)
	require.Equal(t, []string{run.EventRunStarted, run.EventRunContent, run.EventToolCallStarted, run.EventToolCallCompleted,
		run.EventRunContent, run.EventRunCompleted}, names(events))
	for _, e := range events {
		base := e.Base()
		require.Equal(t, "r1", base.RunID, "%s is stamped with the run", e.EventName())
		require.Equal(t, "s1", base.SessionID)
		require.Equal(t, "Coder", base.AgentID)
		require.Equal(t, "Coder", base.AgentName)
		require.NotZero(t, base.CreatedAt)
	}
	started := events[0].(*run.RunStarted)
	require.Equal(t, fakeModel, started.Model)
	require.Equal(t, fakeProvider, started.ModelProvider)
	completed := events[len(events)-1].(*run.RunCompleted)
	require.Equal(t, "Hello", completed.Content)
	require.Equal(t, "str", completed.ContentType)
	require.Equal(t, int64(15), completed.Metrics.TotalTokens)

	turns := driver.turns()
	require.Len(t, turns, 1)
	req := turns[0].req
	require.Equal(t, "r1", req.RunID)
	require.Equal(t, "s1", req.SessionID)
	require.Equal(t, 1, req.Attempt)
	require.Equal(t, "say hello", req.Prompt)
	require.Empty(t, turns[0].harness, "a fresh session has no harness session")
	require.Nil(t, req.Staging)
	require.Nil(t, req.OutputSchema)
	require.True(t, req.Stream, "a ranged stream is consumed")

	out := storedRun(t, store, "r1")
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "Hello", out.Content)
	require.Equal(t, "str", out.ContentType)
	require.Equal(t, fakeModel, out.Model)
	require.Equal(t, fakeProvider, out.ModelProvider)
	require.Equal(t, "Coder", out.AgentID)
	require.Equal(t, "s1", out.SessionID)
	require.Equal(t, fakeSDK, out.Metadata[external.MetadataSDK])
	require.Equal(t, "T-1", out.Metadata["ticket"], "the input's metadata is kept")
	require.Len(t, out.Tools, 1)
	require.Equal(t, "call-1", out.Tools[0].ToolCallID)
	require.Equal(t, "bash", out.Tools[0].ToolName)
	require.Equal(t, "ok call-1", *out.Tools[0].Result)
	roles := make([]string, len(out.Messages))
	for i, m := range out.Messages {
		roles[i] = m.Role
	}
	require.Equal(t, []string{run.RoleUser, run.RoleAssistant, run.RoleTool, run.RoleAssistant}, roles,
		"the user's message, then the turn's messages")
	require.Equal(t, "say hello", out.Messages[0].ContentString())
	require.Equal(t, "Hello", out.Messages[3].ContentString())
	require.Equal(t, "say hello", out.Input.ContentString())

	m := out.Metrics
	require.Equal(t, int64(10), m.InputTokens)
	require.Equal(t, int64(5), m.OutputTokens)
	require.Equal(t, int64(15), m.TotalTokens)
	require.InDelta(t, 0.25, *m.Cost, 1e-9)
	require.Len(t, m.Details[run.ModelTypeModel], 1)
	require.InDelta(t, 5.0, m.Duration, 1e-6, "the agent times the run itself")
	require.InDelta(t, 2.0, m.TimeToFirstToken, 1e-6, "first token at the first content")

	session := storedSession(t, store, "s1")
	require.Equal(t, storage.SessionTypeAgent, session.SessionType)
	require.Equal(t, "Coder", session.AgentID)
	require.Equal(t, fakeSDK, session.Metadata[external.MetadataSDK])
	require.Equal(t, "harness-1", session.SessionData[fakeSessionKey])
	totals := sessionMetrics(t, session)
	require.Equal(t, int64(10), totals.InputTokens)
	require.Equal(t, int64(15), totals.TotalTokens)

	// A second run on the session adds to the session's metrics.
	driver.steps = []turnStep{answerStep("again", "")}
	_, err := agent.Run(t.Context(), &run.Input{InputContent: "again", SessionID: "s1", RunID: "r2"})
	require.NoError(t, err)
	session = storedSession(t, store, "s1")
	totals = sessionMetrics(t, session)
	require.Equal(t, int64(20), totals.InputTokens, "session metrics accumulate over completed runs")
	require.Equal(t, int64(30), totals.TotalTokens)
	require.Equal(t, "harness-1", session.SessionData[fakeSessionKey], "a turn that keeps the harness session keeps it stored")
}

func TestAgentRunWithoutStore(t *testing.T) {
	driver := script(answerStep("hi there", "h-1"))
	agent := newTestAgent(t, external.Config{Driver: driver})
	require.Equal(t, fakeSDK, agent.ID(), "the id defaults to the driver's SDK")

	out, err := agent.Run(t.Context(), &run.Input{InputContent: "hi"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "hi there", out.Content)
	require.NotEmpty(t, out.RunID, "a run id is generated")
	require.NotEmpty(t, out.SessionID, "a session id is generated")
	require.False(t, driver.turns()[0].req.Stream, "nobody consumes the events of Run")
	seed, err := driver.turns()[0].req.Seed(t.Context())
	require.NoError(t, err)
	require.Equal(t, "hi", seed, "without a store there is no history")
}

func TestAgentHandsHarnessSessionToNextRun(t *testing.T) {
	store := openTestStore(t)
	var seeds []string
	seeding := func(answer, harness string) turnStep {
		return func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
			seed, err := req.Seed(ctx)
			if err != nil {
				return nil, err
			}
			seeds = append(seeds, seed)
			return answerStep(answer, harness)(ctx, req)
		}
	}
	driver := script(seeding("Paris is the capital.", "h-1"), seeding("About 2 million people.", "h-2"), seeding("other", ""))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})

	_, err := agent.Run(t.Context(), &run.Input{InputContent: "What is the capital of France?", SessionID: "s", RunID: "r1"})
	require.NoError(t, err)
	out, err := agent.Run(t.Context(), &run.Input{InputContent: "How many live there?", SessionID: "s", RunID: "r2"})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	_, err = agent.Run(t.Context(), &run.Input{InputContent: "Elsewhere", SessionID: "other", RunID: "r3"})
	require.NoError(t, err)

	turns := driver.turns()
	require.Len(t, turns, 3)
	require.Empty(t, turns[0].harness, "the first turn starts a harness session")
	require.Equal(t, "h-1", turns[1].harness, "the next run resumes the harness session the first one stored")
	require.Empty(t, turns[2].harness, "another session has its own harness session")

	require.Equal(t, "What is the capital of France?", seeds[0], "a fresh session is seeded with the prompt alone")
	require.True(t, strings.HasPrefix(seeds[1], "Previous conversation (for context, do not repeat it):\n"), seeds[1])
	require.Contains(t, seeds[1], "user: What is the capital of France?")
	require.Contains(t, seeds[1], "assistant: Paris is the capital.")
	require.True(t, strings.HasSuffix(seeds[1], "\nCurrent message:\nHow many live there?"), seeds[1])
	require.NotContains(t, seeds[1], "About 2 million", "the run itself is not its own history")
	require.Equal(t, "Elsewhere", seeds[2], "history is the session's own")

	require.Equal(t, "h-2", storedSession(t, store, "s").SessionData[fakeSessionKey], "the latest harness session is kept")
}

func TestAgentForgetsAHarnessSessionTheDriverDropped(t *testing.T) {
	store := openTestStore(t)
	driver := script(answerStep("one", "h-1"), func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		req.HarnessSession = "" // could not resume: start afresh next time
		return nil, external.Permanent("resume_failed", errors.New("session gone"))
	}, answerStep("three", ""))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})
	_, err := agent.Run(t.Context(), &run.Input{InputContent: "1", SessionID: "s", RunID: "r1"})
	require.NoError(t, err)
	_, err = agent.Run(t.Context(), &run.Input{InputContent: "2", SessionID: "s", RunID: "r2"})
	require.Error(t, err)
	_, ok := storedSession(t, store, "s").SessionData[fakeSessionKey]
	require.False(t, ok, "a failed run still saves the dropped harness session")
	_, err = agent.Run(t.Context(), &run.Input{InputContent: "3", SessionID: "s", RunID: "r3"})
	require.NoError(t, err)
	require.Empty(t, driver.turns()[2].harness)
}

func TestAgentRetriesTransientFailure(t *testing.T) {
	store := openTestStore(t)
	waits := &sleeps{}
	first, second := tool("call-a", "read"), tool("call-b", "write")
	driver := script(
		func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
			emitTool(req, first)
			req.Emit(&run.RunContent{Content: "partial"})
			req.HarnessSession = "h-1"
			return &external.TurnResult{Content: "partial", Tools: []*run.ToolExecution{first},
					Metrics: &run.RunMetrics{Metrics: run.Metrics{InputTokens: 3, TotalTokens: 3}}},
				external.Transient("server_error", errors.New("overloaded"))
		},
		func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
			emitTool(req, second)
			req.Emit(&run.RunContent{Content: "done"})
			return &external.TurnResult{Content: "done", Tools: []*run.ToolExecution{second},
				Metrics: &run.RunMetrics{Metrics: run.Metrics{InputTokens: 7, TotalTokens: 7}}}, nil
		},
	)
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store, Retries: 2, ExponentialBackoff: true,
		DelayBetweenRetries: time.Second, Sleep: waits.Sleep})

	events, errs := drain(agent.Stream(t.Context(), &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"}))
	require.Empty(t, errs)
	require.Equal(t, []string{run.EventRunStarted,
		run.EventToolCallStarted, run.EventToolCallCompleted, run.EventRunContent,
		run.EventRunRetry,
		run.EventToolCallStarted, run.EventToolCallCompleted, run.EventRunContent,
		run.EventRunCompleted}, names(events))
	retry := only[*run.RunRetry](t, events)
	require.Equal(t, 2, retry.Attempt)
	require.Equal(t, 3, retry.MaxAttempts)
	require.Equal(t, "overloaded", retry.Error)
	require.InDelta(t, 1.0, retry.DelaySeconds, 1e-9)
	require.Equal(t, []time.Duration{time.Second}, waits.recorded())

	turns := driver.turns()
	require.Len(t, turns, 2)
	require.Equal(t, 1, turns[0].req.Attempt)
	require.Equal(t, 2, turns[1].req.Attempt)
	require.Equal(t, "r1", turns[1].req.RunID, "every attempt is the same run")
	require.Equal(t, "h-1", turns[1].harness, "a retry resumes the harness session the failed attempt reported")

	out := storedRun(t, store, "r1")
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "done", out.Content, "the content is the last attempt's")
	require.Len(t, out.Tools, 2, "the tools of every attempt are kept")
	require.Equal(t, "call-a", out.Tools[0].ToolCallID)
	require.Equal(t, "call-b", out.Tools[1].ToolCallID)
	require.Equal(t, int64(10), out.Metrics.InputTokens, "the tokens of every attempt count")
	attempts, err := out.Attempts()
	require.NoError(t, err)
	require.Len(t, attempts, 2)
	require.Equal(t, 1, attempts[0].Attempt)
	require.NotNil(t, attempts[0].Error)
	require.Equal(t, "overloaded", *attempts[0].Error)
	require.Equal(t, 2, attempts[1].Attempt)
	require.Nil(t, attempts[1].Error)
}

func TestAgentRetryDelays(t *testing.T) {
	for _, tc := range []struct {
		name        string
		exponential bool
		want        []time.Duration
	}{
		{"exponential", true, []time.Duration{time.Second, 2 * time.Second}},
		{"constant", false, []time.Duration{time.Second, time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openTestStore(t)
			waits := &sleeps{}
			var attempt int
			driver := script(func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
				attempt++
				return nil, external.Transient("server_error", fmt.Errorf("attempt %d failed", attempt))
			})
			agent := newTestAgent(t, external.Config{Driver: driver, Store: store, Retries: 2, ExponentialBackoff: tc.exponential,
				DelayBetweenRetries: time.Second, Sleep: waits.Sleep})

			events, errs := drain(agent.Stream(t.Context(), &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"}))
			require.Empty(t, errs)
			require.Equal(t, []string{run.EventRunStarted, run.EventRunRetry, run.EventRunRetry, run.EventRunError}, names(events))
			require.Equal(t, tc.want, waits.recorded())
			require.Len(t, driver.turns(), 3, "retries exhausted: 1 + 2 attempts")
			failed := events[len(events)-1].(*run.RunError)
			require.Equal(t, "server_error", failed.ErrorType)
			require.Equal(t, "attempt 3 failed", failed.Content, "the run ends with the last error")

			out := storedRun(t, store, "r1")
			require.Equal(t, run.StatusError, out.Status)
			require.Equal(t, "attempt 3 failed", out.Content)
			attempts, err := out.Attempts()
			require.NoError(t, err)
			require.Len(t, attempts, 3)
			for i, a := range attempts {
				require.Equal(t, i+1, a.Attempt)
				require.True(t, a.Failed())
			}

			// Run reports the same failure as an error.
			out, err = agent.Run(t.Context(), &run.Input{InputContent: "go", SessionID: "s", RunID: "r2"})
			require.Error(t, err)
			var turnErr *external.TurnError
			require.ErrorAs(t, err, &turnErr)
			require.Equal(t, run.StatusError, out.Status)
		})
	}
}

func TestAgentDoesNotRetryPermanentFailure(t *testing.T) {
	store := openTestStore(t)
	waits := &sleeps{}
	driver := script(failStep(external.Permanent("authentication_error", errors.New("invalid api key"))))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store, Retries: 2, Sleep: waits.Sleep})

	events, errs := drain(agent.Stream(t.Context(), &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"}))
	require.Empty(t, errs, "a failed run ends with its RunError, not a stream error")
	require.Equal(t, []string{run.EventRunStarted, run.EventRunError}, names(events))
	failed := events[1].(*run.RunError)
	require.Equal(t, "authentication_error", failed.ErrorType)
	require.Equal(t, "invalid api key", failed.Content)
	require.Len(t, driver.turns(), 1, "a permanent failure is not retried")
	require.Empty(t, waits.recorded())

	out := storedRun(t, store, "r1")
	require.Equal(t, run.StatusError, out.Status)
	require.Equal(t, "invalid api key", out.Content)
	attempts, err := out.Attempts()
	require.NoError(t, err)
	require.Empty(t, attempts, "a single attempt leaves no attempt history")
	_, ok := storedSession(t, store, "s").SessionData["session_metrics"]
	require.False(t, ok, "a failed run adds nothing to the session's metrics")

	// An unclassified error is retried; one wrapping ErrInvalidInput is not.
	driver = script(failStep(errors.New("boom")), answerStep("fine", ""))
	agent = newTestAgent(t, external.Config{Driver: driver, Retries: 1, Sleep: waits.Sleep})
	out, err = agent.Run(t.Context(), &run.Input{InputContent: "go"})
	require.NoError(t, err)
	require.Equal(t, "fine", out.Content)
	driver = script(failStep(run.ErrInvalidInput), answerStep("never", ""))
	agent = newTestAgent(t, external.Config{Driver: driver, Retries: 1, Sleep: waits.Sleep})
	_, err = agent.Run(t.Context(), &run.Input{InputContent: "go"})
	require.ErrorIs(t, err, run.ErrInvalidInput)
	require.Len(t, driver.turns(), 1)
}

func TestAgentCancelWhileDriverRuns(t *testing.T) {
	store := openTestStore(t)
	started := make(chan struct{})
	driver := script(waitCtxStep(started))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store, Retries: 3, Sleep: (&sleeps{}).Sleep})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		<-started
		cancel()
	}()

	events, errs := drain(agent.Stream(ctx, &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"}))
	require.Empty(t, errs)
	require.Equal(t, []string{run.EventRunStarted, run.EventRunCancelled}, names(events))
	require.Len(t, driver.turns(), 1, "a cancelled turn is not retried")
	require.Equal(t, run.StatusCancelled, storedRun(t, store, "r1").Status)

	// The session is free again.
	driver.steps = []turnStep{answerStep("next", "")}
	_, err := agent.Run(t.Context(), &run.Input{InputContent: "go", SessionID: "s", RunID: "r2"})
	require.NoError(t, err)
}

func TestAgentRunReportsCancellation(t *testing.T) {
	store := openTestStore(t)
	started := make(chan struct{})
	agent := newTestAgent(t, external.Config{Driver: script(waitCtxStep(started)), Store: store})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-started
		cancel()
	}()
	out, err := agent.Run(ctx, &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"})
	require.ErrorIs(t, err, context.Canceled)
	require.Equal(t, run.StatusCancelled, out.Status)
	require.Equal(t, run.StatusCancelled, storedRun(t, store, "r1").Status, "a cancelled run is still saved")
}

func TestAgentCancelDuringRetryBackoff(t *testing.T) {
	store := openTestStore(t)
	driver := script(failStep(external.Transient("server_error", errors.New("overloaded"))), answerStep("never", ""))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store, Retries: 1, DelayBetweenRetries: time.Hour})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()

	begun := time.Now()
	var events []run.Event
	for e, err := range agent.Stream(ctx, &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"}) {
		require.NoError(t, err)
		events = append(events, e)
		if _, ok := e.(*run.RunRetry); ok {
			cancel() // during the hour-long wait
		}
	}
	require.Less(t, time.Since(begun), 5*time.Second, "the backoff honours the cancel")
	require.Equal(t, []string{run.EventRunStarted, run.EventRunRetry, run.EventRunCancelled}, names(events))
	require.Len(t, driver.turns(), 1)
	require.Equal(t, run.StatusCancelled, storedRun(t, store, "r1").Status)
}

func TestAgentConsumerThatStopsRangingCancelsTheRun(t *testing.T) {
	store := openTestStore(t)
	var turnErr error
	driver := script(func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		req.Emit(&run.RunContent{Content: "first"})
		req.Emit(&run.RunContent{Content: "second"}) // after the consumer left: dropped
		select {
		case <-ctx.Done():
			turnErr = ctx.Err()
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return nil, errors.New("not cancelled")
		}
	})
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store, Retries: 2, Sleep: (&sleeps{}).Sleep})

	var seen []string
	for e, err := range agent.Stream(t.Context(), &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"}) {
		require.NoError(t, err)
		seen = append(seen, e.EventName())
		if e.EventName() == run.EventRunContent {
			break
		}
	}
	require.Equal(t, []string{run.EventRunStarted, run.EventRunContent}, seen)
	require.ErrorIs(t, turnErr, context.Canceled, "the driver's context ends when the consumer leaves")
	require.Len(t, driver.turns(), 1, "not retried")
	require.Equal(t, run.StatusCancelled, storedRun(t, store, "r1").Status)
}

func TestAgentOneTurnPerSession(t *testing.T) {
	store := openTestStore(t)
	started, release := make(chan struct{}), make(chan struct{})
	driver := script(blockStep(started, release), answerStep("second", ""))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})

	done := make(chan struct{})
	var blockerErr error
	go func() {
		defer close(done)
		_, blockerErr = agent.Run(t.Context(), &run.Input{InputContent: "first", SessionID: "s", RunID: "r1", PersistOnStart: true})
	}()
	waitClosed(t, started, "the first turn")

	second := &run.Input{InputContent: "second", SessionID: "s", RunID: "r2"}
	requireBusy := func(t *testing.T, err error) {
		t.Helper()
		require.ErrorIs(t, err, run.ErrSessionBusy)
		var busy *run.SessionBusyError
		require.ErrorAs(t, err, &busy)
		require.Equal(t, "r1", busy.RunID, "the error names the run in flight")
		require.Equal(t, "s", busy.SessionID)
		require.Contains(t, err.Error(), "already has run r1")
	}

	out, err := agent.Run(t.Context(), second)
	requireBusy(t, err)
	require.Nil(t, out)
	requireNoRun(t, store, "r2")

	var items []streamed
	for e, err := range agent.Stream(t.Context(), second) {
		items = append(items, streamed{e, err})
	}
	require.Len(t, items, 1, "a refused stream yields its error alone")
	require.Nil(t, items[0].event)
	requireBusy(t, items[0].err)
	requireNoRun(t, store, "r2")

	requireBusy(t, agent.Admit(t.Context(), second, false))
	require.NoError(t, agent.Admit(t.Context(), second, true), "a queued run is not refused for a busy session")
	require.NoError(t, agent.Admit(t.Context(), &run.Input{InputContent: "x", SessionID: "other"}, false), "other sessions are free")
	err = agent.Admit(t.Context(), &run.Input{InputContent: "x", SessionID: "s", UserID: "mallory"}, false)
	require.ErrorIs(t, err, storage.ErrNotFound, "another user's session is not found")
	require.NotErrorIs(t, err, run.ErrSessionBusy)
	require.NotContains(t, err.Error(), "r1", "nothing is said about its runs")

	// Another replica sees the first turn's RUNNING row.
	replica := newTestAgent(t, external.Config{Driver: script(answerStep("replica", "")), Store: store})
	_, err = replica.Run(t.Context(), second)
	requireBusy(t, err)
	requireBusy(t, replica.Admit(t.Context(), second, false))
	requireNoRun(t, store, "r2")
	require.Len(t, driver.turns(), 1, "a refused turn never reaches the driver")

	close(release)
	waitClosed(t, done, "the first turn to end")
	require.NoError(t, blockerErr)

	require.NoError(t, agent.Admit(t.Context(), second, false))
	out, err = agent.Run(t.Context(), second)
	require.NoError(t, err, "the session is free once its turn ended")
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "h-blocker", driver.turns()[1].harness)
}

func TestAgentSessionFreeAfterFailedTurn(t *testing.T) {
	store := openTestStore(t)
	driver := script(failStep(external.Permanent("api_error", errors.New("bad"))), answerStep("ok", ""))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})
	_, err := agent.Run(t.Context(), &run.Input{InputContent: "1", SessionID: "s", RunID: "r1", PersistOnStart: true})
	require.Error(t, err)
	require.NoError(t, agent.Admit(t.Context(), &run.Input{SessionID: "s"}, false), "a failed turn frees the session")
	_, err = agent.Run(t.Context(), &run.Input{InputContent: "2", SessionID: "s", RunID: "r2", PersistOnStart: true})
	require.NoError(t, err)
}

func TestAgentQueuedRunWaitsForBusySession(t *testing.T) {
	store := openTestStore(t)
	started, release := make(chan struct{}), make(chan struct{})
	driver := script(blockStep(started, release), answerStep("queued answer", ""))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store, QueuePollInterval: 5 * time.Millisecond})

	blockerDone := make(chan struct{})
	go func() {
		defer close(blockerDone)
		_, _ = agent.Run(t.Context(), &run.Input{InputContent: "first", SessionID: "s", RunID: "r1", PersistOnStart: true})
	}()
	waitClosed(t, started, "the first turn")

	queuedDone := make(chan struct{})
	var queuedOut *run.Output
	var queuedErr error
	go func() {
		defer close(queuedDone)
		queuedOut, queuedErr = agent.RunWith(t.Context(), &run.Input{InputContent: "second", SessionID: "s", RunID: "r2"}, run.Execution{Queued: true})
	}()
	// A negative check, over a bounded window: the queued run polls its
	// session every 5 ms, so it would have started many times over.
	const stillWaiting = 60 * time.Millisecond
	window := time.NewTimer(stillWaiting)
	defer window.Stop()
	select {
	case <-queuedDone:
		t.Fatalf("a queued run on a busy session must wait, got %v", queuedErr)
	case <-window.C:
	}
	require.Len(t, driver.turns(), 1, "the queued run has not started")

	close(release)
	waitClosed(t, blockerDone, "the first turn")
	waitClosed(t, queuedDone, "the queued turn")
	require.NoError(t, queuedErr)
	require.Equal(t, run.StatusCompleted, queuedOut.Status)
	require.Equal(t, "queued answer", queuedOut.Content)
	turns := driver.turns()
	require.Len(t, turns, 2)
	require.Equal(t, "h-blocker", turns[1].harness, "the queued run resumes the harness session the run it waited for stored")

	session := storedSession(t, store, "s")
	require.Equal(t, "h-blocker", session.SessionData[fakeSessionKey])
	require.Equal(t, int64(20), sessionMetrics(t, session).InputTokens, "both runs count in the session's metrics")
	require.Equal(t, run.StatusCompleted, storedRun(t, store, "r1").Status)
	require.Equal(t, run.StatusCompleted, storedRun(t, store, "r2").Status)
}

func TestAgentQueuedRunGivesUpWhenCancelled(t *testing.T) {
	store := openTestStore(t)
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	driver := script(blockStep(started, release))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store, QueuePollInterval: 5 * time.Millisecond})
	go func() {
		_, _ = agent.Run(t.Context(), &run.Input{InputContent: "first", SessionID: "s", RunID: "r1", PersistOnStart: true})
	}()
	waitClosed(t, started, "the first turn")

	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Millisecond)
	defer cancel()
	out, err := agent.RunWith(ctx, &run.Input{InputContent: "second", SessionID: "s", RunID: "r2"}, run.Execution{Queued: true})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Nil(t, out)
	requireNoRun(t, store, "r2")
}

func TestAgentRefusesInputBeforeAnything(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    run.Input
		media bool
	}{
		{"audio", run.Input{Audios: []run.Audio{{Content: []byte("RIFF")}}}, true},
		{"video", run.Input{Videos: []run.Video{{URL: "https://example.com/v.mp4"}}}, true},
		{"array schema", run.Input{OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"string"}}`)}, false},
		{"schema without type or properties", run.Input{OutputSchema: json.RawMessage(`{"title":"X"}`)}, false},
		{"schema not JSON", run.Input{OutputSchema: json.RawMessage(`[1,2`)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := openTestStore(t)
			driver := script(answerStep("never", ""))
			agent := newTestAgent(t, external.Config{Driver: driver, Store: store})
			in := tc.in
			in.InputContent, in.SessionID, in.RunID = "look", "s", "r1"
			check := func(err error) {
				t.Helper()
				require.ErrorIs(t, err, run.ErrInvalidInput)
				if tc.media {
					require.ErrorIs(t, err, run.ErrUnsupportedMedia)
					require.ErrorIs(t, err, external.ErrUnsupportedMedia)
				}
			}

			out, err := agent.Run(t.Context(), &in)
			check(err)
			require.Nil(t, out)
			events, errs := drain(agent.Stream(t.Context(), &in))
			require.Empty(t, events, "a refused run emits nothing, not even RunStarted")
			require.Len(t, errs, 1)
			check(errs[0])
			check(agent.Admit(t.Context(), &in, false))
			check(agent.Admit(t.Context(), &in, true))

			require.Empty(t, driver.turns(), "the driver is never called")
			requireNoRun(t, store, "r1")
			_, err = store.GetSession(t.Context(), "s", storage.GetSessionOptions{})
			require.ErrorIs(t, err, storage.ErrNotFound, "no session is written")
		})
	}
}

func TestNewRefusesBadConfig(t *testing.T) {
	_, err := external.New(external.Config{})
	require.Error(t, err, "a driver is required")

	_, err = external.New(external.Config{Driver: script(answerStep("x", "")),
		OutputSchema: json.RawMessage(`{"type":"array","items":{"type":"string"}}`)})
	require.ErrorIs(t, err, run.ErrInvalidInput, "an agent-level schema must describe an object")

	_, err = external.New(external.Config{Driver: script(answerStep("x", "")), Retries: -1})
	require.Error(t, err)
	_, err = external.New(external.Config{Driver: script(answerStep("x", "")), DelayBetweenRetries: -time.Second})
	require.Error(t, err)

	_, err = external.New(external.Config{Driver: script(answerStep("x", "")),
		OutputSchema: json.RawMessage(`{"type":"object","properties":{"a":{"type":"string"}}}`)})
	require.NoError(t, err)
}

func TestAgentRefusesAnotherUsersSession(t *testing.T) {
	store := openTestStore(t)
	driver := script(answerStep("mine", ""))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})
	_, err := agent.Run(t.Context(), &run.Input{InputContent: "hi", SessionID: "s", UserID: "alice", RunID: "r1"})
	require.NoError(t, err)

	out, err := agent.Run(t.Context(), &run.Input{InputContent: "hi", SessionID: "s", UserID: "bob", RunID: "r2"})
	require.ErrorIs(t, err, storage.ErrNotFound)
	require.Nil(t, out)
	requireNoRun(t, store, "r2")
	require.Len(t, driver.turns(), 1)
	require.Equal(t, "alice", storedSession(t, store, "s").UserID)
}

const answerSchema = `{"title":"Answer","type":"object","properties":{"answer":{"type":"string"}},"required":["answer"]}`

func TestAgentStructuredOutput(t *testing.T) {
	store := openTestStore(t)
	structured := func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		req.Emit(&run.RunContent{Content: `{"answer":"42"}`})
		return &external.TurnResult{Content: `{"answer":"42"}`, Structured: map[string]any{"answer": "42"}}, nil
	}
	driver := script(structured)
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})

	events, errs := drain(agent.Stream(t.Context(), &run.Input{InputContent: "the answer?", SessionID: "s", RunID: "r1",
		OutputSchema: json.RawMessage(answerSchema)}))
	require.Empty(t, errs)
	require.JSONEq(t, answerSchema, string(driver.turns()[0].req.OutputSchema), "the run's schema reaches the driver")
	completed := events[len(events)-1].(*run.RunCompleted)
	require.Equal(t, map[string]any{"answer": "42"}, completed.Content)
	require.Equal(t, "Answer", completed.ContentType)

	out := storedRun(t, store, "r1")
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, map[string]any{"answer": "42"}, out.Content, "the stored content is the object")
	require.Equal(t, "Answer", out.ContentType, "named by the schema's title")

	// An agent-level schema applies to runs without their own; without a
	// title the content type is "dict".
	agentSchema := `{"type":"object","properties":{"answer":{"type":"string"}}}`
	driver = script(structured)
	agent = newTestAgent(t, external.Config{Driver: driver, Store: store, OutputSchema: json.RawMessage(agentSchema)})
	out, err := agent.Run(t.Context(), &run.Input{InputContent: "again", SessionID: "s2", RunID: "r2"})
	require.NoError(t, err)
	require.JSONEq(t, agentSchema, string(driver.turns()[0].req.OutputSchema))
	require.Equal(t, "dict", out.ContentType)
	require.Equal(t, map[string]any{"answer": "42"}, storedRun(t, store, "r2").Content)

	// A run's own schema replaces the agent's.
	_, err = agent.Run(t.Context(), &run.Input{InputContent: "again", SessionID: "s3", RunID: "r3", OutputSchema: json.RawMessage(answerSchema)})
	require.NoError(t, err)
	require.JSONEq(t, answerSchema, string(driver.turns()[1].req.OutputSchema))
	require.Equal(t, "Answer", storedRun(t, store, "r3").ContentType)
}

// stagedStep records what the driver saw of the run's attachments.
type stagedSeen struct {
	staging *external.Staging
	prompt  string
	data    []byte
	readErr error
}

func stagingStep(seen *stagedSeen) turnStep {
	return func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		seen.staging, seen.prompt = req.Staging, req.Prompt
		if req.Staging != nil && len(req.Staging.Files) > 0 {
			seen.data, seen.readErr = os.ReadFile(req.Staging.Files[0].Path)
		}
		return answerStep("read it", "")(ctx, req)
	}
}

func TestAgentStagesAttachments(t *testing.T) {
	cwd := t.TempDir()
	seen := &stagedSeen{}
	agent := newTestAgent(t, external.Config{Driver: script(stagingStep(seen)), Cwd: cwd})
	in := &run.Input{InputContent: "summarise the notes", RunID: "run-7",
		Files: []run.File{{Filename: "notes.txt", Content: []byte("remember the milk"), MimeType: "text/plain"}}}

	out, err := agent.Run(t.Context(), in)
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, out.Status)
	dir := filepath.Join(cwd, ".agnogo", "uploads", "run-7")
	require.NotNil(t, seen.staging)
	require.Equal(t, dir, seen.staging.Dir)
	require.Len(t, seen.staging.Files, 1)
	path := filepath.Join(dir, "notes.txt")
	require.Equal(t, path, seen.staging.Files[0].Path)
	require.NoError(t, seen.readErr)
	require.Equal(t, "remember the milk", string(seen.data), "the file is on disk while the turn runs")
	require.True(t, strings.HasPrefix(seen.prompt, "summarise the notes\n\nAttached files."), seen.prompt)
	require.Contains(t, seen.prompt, path, "the prompt tells the harness where the file is")

	_, err = os.Stat(dir)
	require.ErrorIs(t, err, os.ErrNotExist, "the uploads are removed after the run")
	_, err = os.Stat(filepath.Join(cwd, ".agnogo"))
	require.ErrorIs(t, err, os.ErrNotExist, "and the uploads directories left empty")

	// KeepUploads leaves them.
	seen = &stagedSeen{}
	agent = newTestAgent(t, external.Config{Driver: script(stagingStep(seen)), Cwd: cwd, KeepUploads: true})
	in.RunID = "run-8"
	_, err = agent.Run(t.Context(), in)
	require.NoError(t, err)
	data, err := os.ReadFile(filepath.Join(cwd, ".agnogo", "uploads", "run-8", "notes.txt"))
	require.NoError(t, err, "KeepUploads keeps the staged file")
	require.Equal(t, "remember the milk", string(data))
}

func TestAgentRemovesUploadsOfAFailedRun(t *testing.T) {
	cwd := t.TempDir()
	agent := newTestAgent(t, external.Config{Driver: script(failStep(external.Permanent("api_error", errors.New("no")))), Cwd: cwd})
	_, err := agent.Run(t.Context(), &run.Input{InputContent: "x", RunID: "r1",
		Images: []run.Image{{Content: pngBytes, Format: "png"}}})
	require.Error(t, err)
	_, err = os.Stat(filepath.Join(cwd, ".agnogo", "uploads", "r1"))
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestAgentRefusesAnUnstageableAttachment(t *testing.T) {
	store := openTestStore(t)
	driver := script(answerStep("never", ""))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})
	for _, seq := range []func(*run.Input) error{
		func(in *run.Input) error { _, err := agent.Run(t.Context(), in); return err },
		func(in *run.Input) error {
			events, errs := drain(agent.Stream(t.Context(), in))
			require.Empty(t, events)
			require.Len(t, errs, 1)
			return errs[0]
		},
	} {
		err := seq(&run.Input{InputContent: "x", SessionID: "s", RunID: "r1", Files: []run.File{{Filename: "empty.txt"}}})
		require.ErrorIs(t, err, run.ErrInvalidInput)
		require.ErrorIs(t, err, run.ErrUnsupportedMedia)
	}
	require.Empty(t, driver.turns())
	requireNoRun(t, store, "r1")
	require.NoError(t, agent.Admit(t.Context(), &run.Input{SessionID: "s"}, false), "the refused run left the session free")
}

func TestAgentRecordsWarnings(t *testing.T) {
	store := openTestStore(t)
	warning := run.Warning{Type: "transcript_persistence_failed", Message: "could not mirror the transcript", Error: "disk full"}
	driver := script(func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		req.Warn(warning)
		return answerStep("fine anyway", "")(ctx, req)
	})
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})

	events, errs := drain(agent.Stream(t.Context(), &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"}))
	require.Empty(t, errs)
	require.Equal(t, run.EventRunCompleted, events[len(events)-1].EventName(), "a warning does not fail the run")
	custom := only[*run.CustomEvent](t, events)
	require.Equal(t, "transcript_persistence_failed", custom.Fields["warning_type"], "the warning is streamed")
	require.Equal(t, "could not mirror the transcript", custom.Fields["message"])

	out := storedRun(t, store, "r1")
	require.Equal(t, run.StatusCompleted, out.Status)
	warnings, err := out.Warnings()
	require.NoError(t, err)
	require.Equal(t, []run.Warning{warning}, warnings)
	raw := out.Metadata[run.MetadataWarnings].([]any)[0].(map[string]any)
	require.Equal(t, map[string]any{"type": "transcript_persistence_failed", "message": "could not mirror the transcript", "error": "disk full"}, raw)
}

func TestAgentFailureDeferred(t *testing.T) {
	store := openTestStore(t)
	driver := script(failStep(external.Permanent("api_error", errors.New("upstream down"))))
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})
	ctx, deferred := t.Context(), run.Execution{DeferFailure: true}

	events, errs := drain(agent.Execute(ctx, &run.Input{InputContent: "go", SessionID: "s", RunID: "r1", PersistOnStart: true}, deferred))
	require.Empty(t, errs)
	require.Equal(t, []string{run.EventRunStarted, run.EventRunError}, names(events), "the stream still ends with the RunError")
	require.Equal(t, "api_error", events[1].(*run.RunError).ErrorType)
	stored := storedRun(t, store, "r1")
	require.Equal(t, run.StatusRunning, stored.Status, "the caller settles a deferred failure")
	require.Equal(t, "upstream down", stored.Content)

	out, err := agent.RunWith(ctx, &run.Input{InputContent: "go", SessionID: "s2", RunID: "r2"}, deferred)
	require.Error(t, err)
	require.Equal(t, run.StatusError, out.Status, "the returned run is the failure")
	require.Equal(t, run.StatusRunning, storedRun(t, store, "r2").Status)

	// A deferred context changes nothing for a run that completes.
	driver.steps = []turnStep{answerStep("ok", "")}
	_, err = agent.RunWith(ctx, &run.Input{InputContent: "go", SessionID: "s3", RunID: "r3"}, deferred)
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, storedRun(t, store, "r3").Status)
}

func TestAgentInterrupt(t *testing.T) {
	store := openTestStore(t)
	started := make(chan struct{})
	driver := script(func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		req.Emit(&run.RunContent{Content: "working"})
		return waitCtxStep(started)(ctx, req)
	})
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store, Retries: 2, Sleep: (&sleeps{}).Sleep})
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	go func() {
		<-started
		run.Interrupt(cancel)
	}()

	events, errs := drain(agent.Stream(ctx, &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"}))
	require.Equal(t, []string{run.EventRunStarted, run.EventRunContent}, names(events), "no terminal event")
	require.Len(t, errs, 1)
	require.ErrorIs(t, errs[0], run.ErrInterrupted)
	require.Len(t, driver.turns(), 1, "an interrupted turn is not retried")
	stored := storedRun(t, store, "r1")
	require.Equal(t, run.StatusRunning, stored.Status, "the run stays RUNNING for its owner to run again")

	// Run reports it too.
	started = make(chan struct{})
	ctx, cancel = context.WithCancelCause(t.Context())
	defer cancel(nil)
	go func() {
		<-started
		run.Interrupt(cancel)
	}()
	out, err := agent.Run(ctx, &run.Input{InputContent: "go", SessionID: "s2", RunID: "r2"})
	require.ErrorIs(t, err, run.ErrInterrupted)
	require.Equal(t, run.StatusRunning, out.Status)
	require.Equal(t, run.StatusRunning, storedRun(t, store, "r2").Status)
}

func TestAgentInterruptAfterConsumerLeft(t *testing.T) {
	// The consumer stops ranging, then the process shuts down before the
	// run has ended: the stream must not yield again after the consumer
	// left (a range-over-func iterator that does panics).
	store := openTestStore(t)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	driver := script(func(turnCtx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		req.Emit(&run.RunContent{Content: "working"})
		run.Interrupt(cancel)
		<-turnCtx.Done()
		return nil, turnCtx.Err()
	})
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})
	require.NotPanics(t, func() {
		for e := range agent.Stream(ctx, &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"}) {
			if e != nil && e.EventName() == run.EventRunContent {
				break
			}
		}
	})
	require.Equal(t, run.StatusRunning, storedRun(t, store, "r1").Status)
}

func TestAgentTimeLimit(t *testing.T) {
	store := openTestStore(t)
	started := make(chan struct{})
	agent := newTestAgent(t, external.Config{Driver: script(waitCtxStep(started)), Store: store, Retries: 2, Sleep: (&sleeps{}).Sleep})
	// The limit runs from the start: long enough for the run to open (claim
	// its session, save its row) on a loaded machine, so it expires during
	// the turn, which waits for it.
	const limit = time.Second
	ctx, cancel := run.WithTimeLimit(t.Context(), limit)
	defer cancel()

	events, errs := drain(agent.Stream(ctx, &run.Input{InputContent: "go", SessionID: "s", RunID: "r1"}))
	require.Empty(t, errs)
	waitClosed(t, started, "the turn")
	require.Equal(t, []string{run.EventRunStarted, run.EventRunError}, names(events), "a time limit fails the run, it does not cancel it")
	require.Equal(t, "run_timeout", events[1].(*run.RunError).ErrorType)
	out := storedRun(t, store, "r1")
	require.Equal(t, run.StatusError, out.Status)
	require.Contains(t, out.Content, run.ErrTimedOut.Error())
}

func TestAgentPersistOnStart(t *testing.T) {
	store := openTestStore(t)
	type seenRow struct {
		status run.Status
		err    error
	}
	var seen []seenRow
	driver := script(func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		rec, err := store.GetRun(ctx, req.RunID, "")
		row := seenRow{err: err}
		if err == nil {
			row.status = rec.Run.Status
		}
		seen = append(seen, row)
		return answerStep("done", "")(ctx, req)
	})
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})

	_, err := agent.Run(t.Context(), &run.Input{InputContent: "go", SessionID: "s", RunID: "r1", PersistOnStart: true})
	require.NoError(t, err)
	require.NoError(t, seen[0].err, "the run is stored before the harness runs")
	require.Equal(t, run.StatusRunning, seen[0].status)
	require.Equal(t, run.StatusCompleted, storedRun(t, store, "r1").Status)
	require.Equal(t, int64(10), sessionMetrics(t, storedSession(t, store, "s")).InputTokens,
		"the run counts once in the session's metrics")

	_, err = agent.Run(t.Context(), &run.Input{InputContent: "go", SessionID: "s", RunID: "r2"})
	require.NoError(t, err)
	require.ErrorIs(t, seen[1].err, storage.ErrNotFound, "by default a run is saved when it ends")
	require.Equal(t, run.StatusCompleted, storedRun(t, store, "r2").Status)
}

func TestAgentHeartbeatKeepsEvents(t *testing.T) {
	// With a short StaleAfter the heartbeat saves the row while the driver
	// emits events that store_events keeps: mid-turn, the driver waits for
	// a save that holds the events emitted so far, then emits the rest.
	store := openTestStore(t)
	const deltas = 40
	driver := script(func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
		for i := range deltas {
			req.Emit(&run.RunContent{Content: "x"})
			if i == deltas/2 {
				if err := awaitStoredEvents(ctx, store, "r1", i+2); err != nil { // RunStarted and i+1 deltas
					return nil, err
				}
			}
		}
		return &external.TurnResult{Content: strings.Repeat("x", deltas)}, nil
	})
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store, StoreEvents: true, StaleAfter: 20 * time.Millisecond})

	out, err := agent.Run(t.Context(), &run.Input{InputContent: "go", SessionID: "s", RunID: "r1", PersistOnStart: true})
	require.NoError(t, err)
	require.Len(t, out.Events, deltas+2, "RunStarted, the deltas and RunCompleted")
	stored := storedRun(t, store, "r1")
	require.Equal(t, run.StatusCompleted, stored.Status)
	require.Len(t, stored.Events, deltas+2)
	require.Equal(t, run.EventRunStarted, stored.Events[0].EventName())
	require.Equal(t, run.EventRunCompleted, stored.Events[deltas+1].EventName())
}

// awaitStoredEvents waits until the stored row of a run in flight holds at
// least n events.
func awaitStoredEvents(ctx context.Context, store storage.Store, runID string, n int) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for {
		if rec, err := store.GetRun(ctx, runID, ""); err == nil && len(rec.Run.Events) >= n {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no save of run %s held %d events: %w", runID, n, ctx.Err())
		case <-poll.C:
		}
	}
}

// TestAgentPausesForConfirmation: a turn that needs the user's confirmation
// of a tool call ends the run PAUSED with a requirement; executing the run
// again (a queue replaying it) does not run the harness twice; continuing
// with the decision goes on in place, the harness told what was decided.
func TestAgentPausesForConfirmation(t *testing.T) {
	store := openTestStore(t)
	write := &run.ToolExecution{ToolCallID: "toolu_1", ToolName: "Write", ToolArgs: map[string]any{"file_path": "x"}}
	driver := script(
		func(ctx context.Context, req *external.TurnRequest) (*external.TurnResult, error) {
			req.HarnessSession = "h-1"
			req.Emit(&run.ToolCallStarted{Tool: write})
			return &external.TurnResult{Tools: []*run.ToolExecution{{ToolCallID: "toolu_1", ToolName: "Write"}}},
				&external.PauseError{Tools: []*run.ToolExecution{write}}
		},
		answerStep("written", ""),
	)
	agent := newTestAgent(t, external.Config{Driver: driver, Store: store})
	in := &run.Input{InputContent: "write it", SessionID: "s", RunID: "r1", PersistOnStart: true}
	events, errs := drain(agent.Stream(t.Context(), in))
	require.Empty(t, errs)
	require.Equal(t, []string{run.EventRunStarted, run.EventToolCallStarted, run.EventRunPaused}, names(events))
	out := storedRun(t, store, "r1")
	require.Equal(t, run.StatusPaused, out.Status)
	require.Len(t, out.Requirements, 1)
	require.Equal(t, "toolu_1", out.Requirements[0].ToolExecution.ToolCallID)
	require.True(t, out.Tools[0].RequiresConfirmation)
	require.Equal(t, map[string]any{"file_path": "x"}, out.Tools[0].ToolArgs)

	events, errs = drain(agent.Stream(t.Context(), in))
	require.Empty(t, errs)
	require.Equal(t, []string{run.EventRunPaused}, names(events), "a paused run executed again stays paused")
	require.Len(t, driver.turns(), 1, "without running the harness again")

	_, err := agent.ContinueRun(t.Context(), &run.ContinueRequest{RunID: "r1"})
	require.ErrorIs(t, err, run.ErrUnresolved, "a decision is needed")
	confirmed := true
	done, err := agent.ContinueRun(t.Context(), &run.ContinueRequest{RunID: "r1",
		Tools: []*run.ToolExecution{{ToolCallID: "toolu_1", Confirmed: &confirmed}}})
	require.NoError(t, err)
	require.Equal(t, run.StatusCompleted, done.Status)
	require.Equal(t, "r1", done.RunID, "continued in place")
	require.Equal(t, "written", done.Content)
	turns := driver.turns()
	require.Len(t, turns, 2)
	require.Equal(t, "h-1", turns[1].harness, "the same harness session goes on")
	require.Contains(t, turns[1].req.Prompt, "approved your call to Write (tool_use_id toolu_1)")
	require.Len(t, turns[1].req.Decisions, 1)
	require.True(t, *turns[1].req.Decisions[0].Confirmed)
	require.Equal(t, run.StatusCompleted, storedRun(t, store, "r1").Status)
}

// blindStore hides the session's unfinished runs from the first busy
// check, as a replica does that checks at the same moment another one
// claims the session.
type blindStore struct {
	storage.Store
	mu    sync.Mutex
	blind int
}

func (s *blindStore) GetRuns(ctx context.Context, q storage.RunQuery) ([]storage.RunRecord, int, error) {
	s.mu.Lock()
	hide := s.blind > 0
	if hide {
		s.blind--
	}
	s.mu.Unlock()
	if hide {
		return nil, 0, nil
	}
	return s.Store.GetRuns(ctx, q)
}

// TestAgentRaceBetweenReplicas: a turn that passed the busy check while
// another replica was claiming the session checks again once its row is
// written, withdraws it and is refused: two turns never run at once.
func TestAgentRaceBetweenReplicas(t *testing.T) {
	store := openTestStore(t)
	started, release := make(chan struct{}), make(chan struct{})
	a := newTestAgent(t, external.Config{Driver: script(blockStep(started, release)), Store: store})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = a.Run(t.Context(), &run.Input{InputContent: "first", SessionID: "s", RunID: "r1", PersistOnStart: true})
	}()
	waitClosed(t, started, "the first turn")

	late := script(answerStep("should not run", ""))
	b := newTestAgent(t, external.Config{Driver: late, Store: &blindStore{Store: store, blind: 1}})
	events, errs := drain(b.Stream(t.Context(), &run.Input{InputContent: "second", SessionID: "s", RunID: "r2", PersistOnStart: true}))
	require.Empty(t, events, "refused before anything was sent")
	require.Len(t, errs, 1)
	var busy *run.SessionBusyError
	require.ErrorAs(t, errs[0], &busy)
	require.Equal(t, "r1", busy.RunID)
	require.Empty(t, late.turns(), "the harness never started")
	requireNoRun(t, store, "r2")

	close(release)
	waitClosed(t, done, "the first turn to end")
	require.Equal(t, run.StatusCompleted, storedRun(t, store, "r1").Status)
}

// TestAgentQueuedRunRaceWithAnInlineTurn: a queued run that passed the
// busy check while an inline turn on another replica was claiming the
// session finds it once its own row is written, steps back to PENDING and
// runs after it.
func TestAgentQueuedRunRaceWithAnInlineTurn(t *testing.T) {
	store := openTestStore(t)
	started, release := make(chan struct{}), make(chan struct{})
	inline := newTestAgent(t, external.Config{Driver: script(blockStep(started, release)), Store: store})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = inline.Run(t.Context(), &run.Input{InputContent: "inline", SessionID: "s", RunID: "r1", PersistOnStart: true})
	}()
	waitClosed(t, started, "the inline turn")

	queuedDriver := script(answerStep("queued answer", ""))
	queued := newTestAgent(t, external.Config{Driver: queuedDriver, Store: &blindStore{Store: store, blind: 1}, QueuePollInterval: 5 * time.Millisecond})
	result := make(chan *run.Output, 1)
	go func() {
		out, err := queued.RunWith(t.Context(), &run.Input{InputContent: "queued", SessionID: "s", RunID: "r2", PersistOnStart: true}, run.Execution{Queued: true})
		if err != nil {
			t.Error(err)
		}
		result <- out
	}()
	require.Eventually(t, func() bool {
		rec, err := store.GetRun(t.Context(), "r2", "")
		return err == nil && rec.Run.Status == run.StatusPending
	}, 5*time.Second, 5*time.Millisecond, "the queued run steps back to PENDING")
	require.Empty(t, queuedDriver.turns(), "and does not start while the inline turn runs")

	close(release)
	waitClosed(t, done, "the inline turn to end")
	out := <-result
	require.Equal(t, run.StatusCompleted, out.Status)
	require.Equal(t, "queued answer", out.Content)
	require.Len(t, queuedDriver.turns(), 1)
}
