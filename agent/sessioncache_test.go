package agent_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// countingStore counts the reads a turn makes of a session and its
// history.
type countingStore struct {
	storage.Store
	sessions, histories atomic.Int64
}

func (s *countingStore) GetSession(ctx context.Context, sessionID string, opts storage.GetSessionOptions) (*storage.Session, error) {
	s.sessions.Add(1)
	return s.Store.GetSession(ctx, sessionID, opts)
}

func (s *countingStore) HistoryRuns(ctx context.Context, q storage.HistoryQuery) ([]*run.Output, error) {
	s.histories.Add(1)
	return s.Store.HistoryRuns(ctx, q)
}

func (s *countingStore) SessionVersion(ctx context.Context, sessionID, userID, runID string) (storage.SessionVersion, bool, error) {
	return s.Store.(storage.SessionVersioner).SessionVersion(ctx, sessionID, userID, runID)
}

func (s *countingStore) reads() int64 { return s.sessions.Load() + s.histories.Load() }

// TestHistoryWithTwoReplicasAlternating: two replicas of one agent — each
// its own connection to the database and its own memory — take turns in
// one conversation, and a third writer deletes one of its runs. Every
// model request carries exactly the history the database holds: the last
// three finished turns, none deleted. A turn that follows the same
// replica's turn, with nothing written in between, reads neither the
// session nor its history back; one that follows a write elsewhere does.
func TestHistoryWithTwoReplicasAlternating(t *testing.T) {
	backends := []struct {
		name string
		open func(t *testing.T) func() storage.Store
	}{
		{"sqlite", func(t *testing.T) func() storage.Store {
			path := filepath.Join(t.TempDir(), "shared.db")
			return func() storage.Store {
				store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
				require.NoError(t, err)
				t.Cleanup(func() { store.Close() })
				return store
			}
		}},
		{"postgres", func(t *testing.T) func() storage.Store {
			url, schema := testdb.PostgresURL(t), testdb.UniqueName(t, "history")
			return func() storage.Store {
				store, err := postgres.Open(t.Context(), postgres.Config{URL: url, Schema: schema, AutoMigrate: true})
				require.NoError(t, err)
				t.Cleanup(func() { store.Close() })
				return store
			}
		}},
	}
	for _, backend := range backends {
		t.Run(backend.name, func(t *testing.T) {
			open := backend.open(t)
			type replica struct {
				store *countingStore
				model *scripted.Model
				agent *agent.Agent
			}
			newReplica := func() *replica {
				r := &replica{store: &countingStore{Store: open()}, model: scripted.New([]scripted.Reply{scripted.Text("noted")}, scripted.Loop())}
				a, err := agent.New(agent.Config{ID: "assistant", Model: r.model, Instructions: "You are helpful.", Store: r.store,
					AddHistoryToContext: true, NumHistoryRuns: 3})
				require.NoError(t, err)
				r.agent = a
				return r
			}
			replicas := map[byte]*replica{'A': newReplica(), 'B': newReplica()}
			other := open()

			var finished []string // the inputs of the session's finished runs, in order
			runIDs := map[string]string{}
			last := byte(0)
			for turn, who := range []byte("AABABBAAAxABBAAxAB") {
				if who == 'x' {
					// Another writer deletes the oldest run the history still shows.
					victim := finished[len(finished)-3]
					require.NoError(t, other.DeleteRun(t.Context(), runIDs[victim], ""))
					finished = append(finished[:len(finished)-3:len(finished)-3], finished[len(finished)-2:]...)
					last = 'x'
					continue
				}
				r := replicas[who]
				input := fmt.Sprintf("turn %d", turn)
				readsBefore := r.store.reads()
				out, err := r.agent.Run(t.Context(), &run.Input{InputContent: input, SessionID: "conversation"})
				require.NoError(t, err)
				require.Equal(t, run.StatusCompleted, out.Status)

				requests := r.model.Requests()
				sent := requests[len(requests)-1].Messages
				history := userInputs(requests[len(requests)-1])
				want := finished[max(0, len(finished)-3):]
				require.Equal(t, append([]string(nil), want...), append([]string(nil), history...), "turn %d on %c: the history sent to the model", turn, who)
				require.Len(t, sent, 2+2*len(want), "turn %d: system, two messages per history run, the input", turn)
				require.Equal(t, input, sent[len(sent)-1].Content)

				reads := r.store.reads() - readsBefore
				if turn > 0 && last == who {
					require.Zero(t, reads, "turn %d on %c follows its own turn: nothing is read back", turn, who)
				} else if turn > 0 {
					require.NotZero(t, reads, "turn %d on %c follows a write elsewhere: the session is read again", turn, who)
				}
				finished = append(finished, input)
				runIDs[input] = out.RunID
				last = who
			}
		})
	}
}

// userInputs are the user messages of a request between its system
// message and its input: the history it carried.
func userInputs(req *model.Request) []string {
	var inputs []string
	for _, msg := range req.Messages[1 : len(req.Messages)-1] {
		if msg.Role == run.RoleUser {
			inputs = append(inputs, msg.Content.(string))
		}
	}
	return inputs
}

// TestHistoryOfRunsFinishingOutOfOrder: two runs of one session in one
// process, the first started finishing last. The next turn's history is
// the session's order — by when each run started — whether it comes
// from memory or from the database.
func TestHistoryOfRunsFinishingOutOfOrder(t *testing.T) {
	for _, cacheSize := range []int{0, -1} { // the default cache, and none
		t.Run(fmt.Sprintf("cache=%d", cacheSize), func(t *testing.T) {
			store, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "order.db")})
			require.NoError(t, err)
			t.Cleanup(func() { store.Close() })
			// The model answers at once, except to "slow", which waits for release.
			release, arrived := make(chan struct{}), make(chan struct{})
			m := scripted.New([]scripted.Reply{scripted.Respond(func(req *model.Request) scripted.Reply {
				if req.Messages[len(req.Messages)-1].Content == "slow" {
					close(arrived)
					<-release
				}
				return scripted.Text("noted")
			})}, scripted.Loop())
			a, err := agent.New(agent.Config{ID: "assistant", Model: m, Instructions: "You are helpful.", Store: store, AddHistoryToContext: true, SessionCacheSize: cacheSize})
			require.NoError(t, err)
			ctx := t.Context()
			turn := func(input string) error {
				_, err := a.Run(ctx, &run.Input{InputContent: input, SessionID: "s", PersistOnStart: true})
				return err
			}
			historyOf := func(input string) []string {
				for _, req := range m.Requests() {
					if req.Messages[len(req.Messages)-1].Content == input {
						return userInputs(req)
					}
				}
				t.Fatalf("no request for %q", input)
				return nil
			}
			require.NoError(t, turn("first"))
			require.Empty(t, historyOf("first"))

			slow := make(chan error, 1)
			go func() { slow <- turn("slow") }()
			<-arrived // the slow run is stored RUNNING, after "first"
			require.NoError(t, turn("fast"))
			require.Equal(t, []string{"first"}, historyOf("fast"), "fast: the slow run has not finished")
			close(release)
			require.NoError(t, <-slow)
			require.Equal(t, []string{"first"}, historyOf("slow"))

			require.NoError(t, turn("next"))
			require.Equal(t, []string{"first", "slow", "fast"}, historyOf("next"), "next: the runs in session order")
		})
	}
}
