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
