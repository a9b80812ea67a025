package agentos_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// restartingStore refuses the save of a finished run, failures times, as
// a Postgres restarting under it does (SQLSTATE 57P01).
type restartingStore struct {
	storage.Store
	failures atomic.Int32
	refused  atomic.Int32
}

func (s *restartingStore) SaveRun(ctx context.Context, session *storage.Session, rec storage.RunRecord) (*storage.Session, storage.RunRecord, error) {
	if rec.Run != nil && rec.Run.Status.Terminal() && s.failures.Add(-1) >= 0 {
		s.refused.Add(1)
		return nil, storage.RunRecord{}, fmt.Errorf("save run: %w",
			&pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"})
	}
	return s.Store.SaveRun(ctx, session, rec)
}

// TestRunOutlivesADatabaseRestart: on both databases, a run whose final
// save is refused by a restarting database — after the model answered —
// is saved when the database is back: the client gets the answer, and
// reading the run finds it COMPLETED with that answer. Nothing is lost.
func TestRunOutlivesADatabaseRestart(t *testing.T) {
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			var store storage.Store
			if backend == "sqlite" {
				lite, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "os.db")})
				require.NoError(t, err)
				t.Cleanup(func() { lite.Close() })
				store = lite
			} else {
				pg, err := postgres.Open(t.Context(), postgres.Config{URL: testdb.PostgresURL(t), Schema: testdb.UniqueName(t, "restart"), AutoMigrate: true})
				require.NoError(t, err)
				t.Cleanup(func() { pg.Close() })
				store = pg
			}
			flaky := &restartingStore{Store: store}
			flaky.failures.Store(2)
			m := scripted.New([]scripted.Reply{scripted.Text("kept through the restart")})
			a, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: m, Store: flaky})
			require.NoError(t, err)
			os, err := agentos.New(agentos.Config{Store: flaky, Runners: []run.Runner{a}})
			require.NoError(t, err)
			ts := httptest.NewServer(os)
			t.Cleanup(ts.Close)
			s := &server{Server: ts, model: m, store: flaky, os: os}

			resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"hi"}, "session_id": {"s1"}, "stream": {"false"}})
			require.Equal(t, http.StatusOK, resp.StatusCode)
			out := decode[map[string]any](t, resp)
			require.Equal(t, "COMPLETED", out["status"])
			require.Equal(t, "kept through the restart", out["content"])
			require.Equal(t, int32(2), flaky.refused.Load(), "the final save was refused twice, then made")

			stored := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+out["run_id"].(string)+"?session_id=s1"))
			require.Equal(t, "COMPLETED", stored["status"])
			require.Equal(t, "kept through the restart", stored["content"])
			require.Len(t, m.Requests(), 1, "the model was called once")
		})
	}
}
