package agentos_test

import (
	"net/http"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// TestMigrateDatabasesOverHTTP: a server opened on an empty database (schema
// check skipped, as migration tooling does) creates its tables through
// /databases/{db_id}/migrate, after which sessions work; a second migrate
// has nothing to do; bad targets and unknown databases are refused.
func TestMigrateDatabasesOverHTTP(t *testing.T) {
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "empty.db"), SkipSchemaCheck: true})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	s := newServer(t, nil, func(_ *agent.Config, o *agentos.Config) { o.Store = store })

	before := s.get(t, "/sessions")
	require.NotEqual(t, http.StatusOK, before.StatusCode, "the tables do not exist yet")

	resp := s.postForm(t, "/databases/agnogo-db/migrate", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode, readAll(t, resp))
	body := decode[map[string]any](t, s.postForm(t, "/databases/all/migrate", nil))
	require.Equal(t, "All databases migrated successfully to latest version", body["message"])
	for _, table := range body["tables"].(map[string]any)["agnogo-db"].([]any) {
		require.Equal(t, "up_to_date", table.(map[string]any)["action"], "the first migrate created everything")
	}
	require.Equal(t, http.StatusOK, s.get(t, "/sessions").StatusCode)
	_, err = store.UpsertSession(t.Context(), &storage.Session{SessionID: "s1", SessionType: storage.SessionTypeAgent, AgentID: "assistant"})
	require.NoError(t, err)

	for target, want := range map[string]int{"abc": http.StatusBadRequest, "99.0.0": http.StatusBadRequest, "2.0.0": http.StatusBadRequest} {
		resp := s.postForm(t, "/databases/agnogo-db/migrate?target_version="+target, nil)
		require.Equal(t, want, resp.StatusCode, target)
		require.NotEmpty(t, decode[map[string]any](t, resp)["detail"], target)
	}
	require.Equal(t, http.StatusNotFound, s.postForm(t, "/databases/other/migrate", nil).StatusCode)
}
