package agent_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// readFailingStore fails the reads a run starts with — its session, its
// history, the user's memories — with fail while down is above zero,
// counting down at each failed read.
type readFailingStore struct {
	storage.Store
	down   atomic.Int32
	failed atomic.Int32
	fail   error
	// only, when set, names the only reads that fail.
	only map[string]bool
}

func (s *readFailingStore) failing(read string) error {
	if (s.only != nil && !s.only[read]) || s.down.Add(-1) < 0 {
		return nil
	}
	s.failed.Add(1)
	return fmt.Errorf("read: %w", s.fail)
}

func (s *readFailingStore) SessionVersion(ctx context.Context, sessionID, userID, runID string) (storage.SessionVersion, bool, error) {
	if err := s.failing("SessionVersion"); err != nil {
		return storage.SessionVersion{}, false, err
	}
	return s.Store.(storage.SessionVersioner).SessionVersion(ctx, sessionID, userID, runID)
}

func (s *readFailingStore) GetSession(ctx context.Context, sessionID string, opts storage.GetSessionOptions) (*storage.Session, error) {
	if err := s.failing("GetSession"); err != nil {
		return nil, err
	}
	return s.Store.GetSession(ctx, sessionID, opts)
}

func (s *readFailingStore) HistoryRuns(ctx context.Context, q storage.HistoryQuery) ([]*run.Output, error) {
	if err := s.failing("HistoryRuns"); err != nil {
		return nil, err
	}
	return s.Store.HistoryRuns(ctx, q)
}

func (s *readFailingStore) ListMemories(ctx context.Context, q storage.MemoryQuery) ([]*storage.Memory, int, error) {
	if err := s.failing("ListMemories"); err != nil {
		return nil, 0, err
	}
	return s.Store.ListMemories(ctx, q)
}

// outageAgent is an agent with history and memories over a store whose
// reads fail with fail while told to, and the waits its runs made.
func outageAgent(t *testing.T, fail error, cacheSize int) (*agent.Agent, *readFailingStore, *scripted.Model, *[]time.Duration) {
	t.Helper()
	b := setup(t, []scripted.Reply{{Content: "first answer"}, {Content: "second answer"}}, nil)
	store := &readFailingStore{Store: b.store, fail: fail}
	var waits []time.Duration
	a, err := agent.New(agent.Config{
		ID: "assistant", Model: b.model, Store: store, AddHistoryToContext: true, AddMemoriesToContext: true, SessionCacheSize: cacheSize,
		Sleep: func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return ctx.Err() },
	})
	require.NoError(t, err)
	return a, store, b.model, &waits
}

// TestRunStartRidesOutADatabaseRestart: a run whose session, history or
// memories cannot be read for a moment (a Postgres restart: SQLSTATE
// 57P01) waits for the database and completes with its history, instead
// of failing before it began.
func TestRunStartRidesOutADatabaseRestart(t *testing.T) {
	for _, tc := range []struct {
		read      string
		cacheSize int // the session cache reads a version, the rest from memory
	}{
		{"SessionVersion", 0},
		{"GetSession", -1},
		{"HistoryRuns", -1},
		{"ListMemories", 0},
	} {
		t.Run(tc.read, func(t *testing.T) {
			a, store, model, waits := outageAgent(t, &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}, tc.cacheSize)
			in := func(msg string) *run.Input { return &run.Input{InputContent: msg, SessionID: "s1", UserID: "ada"} }
			_, err := a.Run(t.Context(), in("remember the first question"))
			require.NoError(t, err)

			store.only = map[string]bool{tc.read: true}
			store.down.Store(3)
			out, err := a.Run(t.Context(), in("and the second?"))
			require.NoError(t, err)
			require.Equal(t, run.StatusCompleted, out.Status)
			require.Equal(t, "second answer", out.Content)
			require.Equal(t, int32(3), store.failed.Load(), "%s failed while the database was away", tc.read)
			require.Equal(t, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond}, *waits,
				"each failed read was waited out, longer each time")
			var seen []string
			for _, msg := range model.Requests()[1].Messages {
				seen = append(seen, msg.ContentString())
			}
			require.Contains(t, seen, "first answer", "the run has its history")
		})
	}
}

// TestRunStartFailsOnAStoreRefusal: a read the database refuses for what
// was asked (not a transient failure) fails the run at once.
func TestRunStartFailsOnAStoreRefusal(t *testing.T) {
	refusal := errors.New("permission denied for table agno_sessions")
	a, store, _, waits := outageAgent(t, refusal, 0)
	store.down.Store(1)
	_, err := a.Run(t.Context(), &run.Input{InputContent: "hello", SessionID: "s1", UserID: "ada"})
	require.ErrorIs(t, err, refusal)
	require.Empty(t, *waits, "a refusal is not waited out")
	require.Equal(t, int32(1), store.failed.Load())
}
