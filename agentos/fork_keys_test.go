package agentos_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/external"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// idleDriver is a harness that is never asked for a turn: it only names
// its session key.
type idleDriver struct{}

func (idleDriver) SDK() string             { return "idle-harness" }
func (idleDriver) Model() (string, string) { return "idle", "Idle" }
func (idleDriver) SessionKey() string      { return "idle_harness_session" }
func (idleDriver) Turn(context.Context, *external.TurnRequest) (*external.TurnResult, error) {
	return nil, errors.New("not used")
}

// TestForkDropsTheHarnessSessionKey: a fork of an external agent's session
// leaves out the session_data key its driver names (two sessions resuming
// one harness conversation would interleave their turns) and keeps the rest.
func TestForkDropsTheHarnessSessionKey(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	coder, err := external.New(external.Config{ID: "coder", Driver: idleDriver{}, Store: store, Cwd: t.TempDir()})
	require.NoError(t, err)
	os, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{coder}})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)

	_, err = store.UpsertSession(t.Context(), &storage.Session{SessionID: "s1", SessionType: storage.SessionTypeAgent, AgentID: "coder",
		SessionData: map[string]any{"idle_harness_session": "h-1", "kept": "yes"}})
	require.NoError(t, err)
	resp, err := http.Post(ts.URL+"/agents/coder/sessions/s1/fork", "application/json", nil)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	forked := decode[map[string]any](t, resp)
	fork, err := store.GetSession(t.Context(), forked["session_id"].(string), storage.GetSessionOptions{})
	require.NoError(t, err)
	require.NotContains(t, fork.SessionData, "idle_harness_session")
	require.Equal(t, "yes", fork.SessionData["kept"])
	source, err := store.GetSession(t.Context(), "s1", storage.GetSessionOptions{})
	require.NoError(t, err)
	require.Equal(t, "h-1", source.SessionData["idle_harness_session"], "the source keeps its harness session")
}
