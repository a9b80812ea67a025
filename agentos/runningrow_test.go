package agentos_test

import (
	"context"
	"net/http"
	"net/url"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// savesCounter counts the run saves (each one committed transaction) a
// store is asked for.
type savesCounter struct {
	storage.Store
	saves atomic.Int32
}

func (s *savesCounter) SaveRun(ctx context.Context, session *storage.Session, rec storage.RunRecord) (*storage.Session, storage.RunRecord, error) {
	s.saves.Add(1)
	return s.Store.SaveRun(ctx, session, rec)
}

func (s *savesCounter) SessionVersion(ctx context.Context, sessionID, userID, runID string) (storage.SessionVersion, bool, error) {
	return s.Store.(storage.SessionVersioner).SessionVersion(ctx, sessionID, userID, runID)
}

// TestRunningRowOnlyWhenSomeoneWatches: a run answered with stream=false
// that ends at once commits once, its finished row; a streamed run commits
// its RUNNING row before RunStarted goes out, then its finished row.
func TestRunningRowOnlyWhenSomeoneWatches(t *testing.T) {
	counter := &savesCounter{}
	s := newServer(t, []scripted.Reply{scripted.Text("Hello!"), scripted.Text("Again!")}, func(a *agent.Config, o *agentos.Config) {
		counter.Store = a.Store
		a.Store, o.Store = counter, counter
	})
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"false"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, "COMPLETED", decode[map[string]any](t, resp)["status"])
	require.Equal(t, int32(1), counter.saves.Load(), "stream=false: one commit")

	resp = s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"again"}, "session_id": {"s1"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	frames := readFrames(t, resp.Body)
	require.Equal(t, "RunCompleted", frames[len(frames)-1].event)
	require.Equal(t, int32(3), counter.saves.Load(), "stream=true: RUNNING, then the finished run")

	runs := decode[[]map[string]any](t, s.get(t, "/agents/assistant/runs?session_id=s1"))
	require.Len(t, runs, 2)
}

// readsCounter counts the reads a run makes of its session and history.
type readsCounter struct {
	savesCounter
	versions, histories, sessions atomic.Int32
}

func (s *readsCounter) SessionVersion(ctx context.Context, sessionID, userID, runID string) (storage.SessionVersion, bool, error) {
	s.versions.Add(1)
	return s.savesCounter.SessionVersion(ctx, sessionID, userID, runID)
}

func (s *readsCounter) HistoryRuns(ctx context.Context, q storage.HistoryQuery) ([]*run.Output, error) {
	s.histories.Add(1)
	return s.Store.HistoryRuns(ctx, q)
}

func (s *readsCounter) GetSession(ctx context.Context, sessionID string, opts storage.GetSessionOptions) (*storage.Session, error) {
	s.sessions.Add(1)
	return s.Store.GetSession(ctx, sessionID, opts)
}

// TestNewSessionIsNotLookedFor: a run without a session_id starts a session
// whose id the server makes up, so it reads nothing of it before its one
// commit; the next turn of that session reads the session's version only,
// its history coming from memory, and sees the first turn.
func TestNewSessionIsNotLookedFor(t *testing.T) {
	counter := &readsCounter{}
	s := newServer(t, []scripted.Reply{scripted.Text("Hello!"), scripted.Text("Again!")}, func(a *agent.Config, o *agentos.Config) {
		counter.Store = a.Store
		a.Store, o.Store = counter, counter
	})
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "stream": {"false"}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	first := decode[map[string]any](t, resp)
	require.Equal(t, "COMPLETED", first["status"])
	sessionID, _ := first["session_id"].(string)
	require.NotEmpty(t, sessionID)
	require.Zero(t, counter.versions.Load()+counter.histories.Load()+counter.sessions.Load(), "a made-up session is not read")
	require.Equal(t, int32(1), counter.saves.Load())

	resp = s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"again"}, "stream": {"false"}, "session_id": {sessionID}})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	second := decode[map[string]any](t, resp)
	require.Equal(t, "COMPLETED", second["status"])
	require.Equal(t, int32(1), counter.versions.Load(), "the second turn checks the session's version")
	require.Zero(t, counter.histories.Load()+counter.sessions.Load(), "and takes its history from memory")
	requests := s.model.Requests()
	require.Len(t, requests, 2)
	var contents []any
	for _, m := range requests[1].Messages {
		contents = append(contents, m.Content)
	}
	require.Equal(t, []any{"hi", "Hello!", "again"}, contents[len(contents)-3:], "the second turn saw the first")
}
