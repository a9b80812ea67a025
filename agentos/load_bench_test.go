package agentos_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/internal/loadtest"
	"github.com/agnogo/agnogo/internal/testdb"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/postgres"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// The server benchmarks serve the agent `agnogo serve` builds by default
// (history on, the last 3 runs) over real loopback HTTP, with a scripted
// model that answers at once: a request's latency is the time the server
// (HTTP, the agent loop, the store) adds to a model call.

// loadReply is what the scripted model answers every run.
const loadReply = "Hello! How can I help you today?"

// loadStores are the databases the server benchmarks run on, each opened
// fresh for every benchmark round with the server's default settings.
var loadStores = []struct {
	name string
	open func(b *testing.B) storage.Store
}{
	{"sqlite", openLoadSQLite},
	{"postgres", openLoadPostgres},
}

// openLoadSQLite opens a new SQLite file under b.TempDir(), as `agnogo
// serve --db sqlite://PATH` does (WAL, synchronous=FULL, one writer).
func openLoadSQLite(b *testing.B) storage.Store {
	store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "agnogo.db")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	return store
}

// openLoadPostgres opens a new schema on the test server, with the pool
// `agnogo serve --db postgres://…` gets (pgxpool's default size). Without a
// server it skips, saying so on stderr even without -v, or fails when
// CI=true.
func openLoadPostgres(b *testing.B) storage.Store {
	b.Cleanup(func() {
		if b.Skipped() {
			fmt.Fprintf(os.Stderr, "SKIPPING %s: PostgreSQL is not reachable (run with -v for the reason; with CI=true this fails)\n", b.Name())
		}
	})
	url := testdb.PostgresURL(b)
	schema := testdb.UniqueName(b, "agnogo_load")
	store, err := postgres.Open(b.Context(), postgres.Config{URL: url, Schema: schema})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		store.Close()
		conn, err := pgx.Connect(context.Background(), url)
		if err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(context.Background(), fmt.Sprintf("DROP SCHEMA IF EXISTS %q CASCADE", schema)); err != nil {
			b.Errorf("drop schema %s: %v", schema, err)
		}
	})
	return store
}

// loadServer starts an AgentOS over store on a loopback port and returns a
// client with a connection for each of clients.
func loadServer(b *testing.B, store storage.Store, clients int) *loadtest.Client {
	m := scripted.New([]scripted.Reply{scripted.Text(loadReply)}, scripted.Loop(), scripted.NoRecord())
	a, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: m, Store: store,
		AddHistoryToContext: true, NumHistoryRuns: 3})
	if err != nil {
		b.Fatal(err)
	}
	agentOS, err := agentos.New(agentos.Config{Runners: []run.Runner{a}, Store: store})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(agentOS)
	client := loadtest.NewClient(srv.URL, clients)
	b.Cleanup(func() {
		client.Close()
		srv.Close()
	})
	return client
}

// BenchmarkServerRuns measures non-streamed runs (stream=false) through
// POST /agents/assistant/runs: clients concurrent clients, each sending its
// next run as soon as the last is answered. With session=new every run
// starts a session (a chat's first message); with session=10-turn each
// client keeps a session for 10 runs, then starts another, so the agent
// reads up to 3 earlier runs as history. One op is one run; runs/s is the
// throughput and p50-ms/p99-ms the request latency. Every answer is checked
// (COMPLETED, the scripted text, the session continued), and the last run
// is read back from the store.
func BenchmarkServerRuns(b *testing.B) {
	for _, db := range loadStores {
		for _, turns := range []int{1, 10} {
			for _, clients := range []int{1, 32} {
				session := "new"
				if turns > 1 {
					session = fmt.Sprintf("%d-turn", turns)
				}
				b.Run(fmt.Sprintf("store=%s/session=%s/clients=%d", db.name, session, clients), func(b *testing.B) {
					store := db.open(b)
					client := loadServer(b, store, clients)
					sessions := make([]string, clients)
					lastRuns := make([]string, clients)
					b.ReportAllocs()
					b.ResetTimer()
					result, err := loadtest.Drive(b.Context(), clients, b.N, func(ctx context.Context, c, turn int) error {
						if turn%turns == 0 {
							sessions[c] = ""
						}
						out, err := client.Run(ctx, loadtest.RunRequest{AgentID: "assistant", Message: "Hi there", SessionID: sessions[c]})
						if err != nil {
							return err
						}
						if out.Content != loadReply || out.SessionID == "" || (sessions[c] != "" && out.SessionID != sessions[c]) {
							return fmt.Errorf("run %s answered %v in session %s, want %q in session %q", out.RunID, out.Content, out.SessionID, loadReply, sessions[c])
						}
						sessions[c], lastRuns[c] = out.SessionID, out.RunID
						return nil
					})
					b.StopTimer()
					if err != nil {
						b.Fatal(err)
					}
					checkStored(b, store, lastRuns)
					reportLoad(b, result)
				})
			}
		}
	}
}

// BenchmarkServerFirstEvent measures streamed runs (stream=true, a new
// session each): first-event-p50-ms/p99-ms is the time from sending the
// request until the first `event:` line arrives, p50-ms/p99-ms the time
// until the stream ends with RunCompleted. One op is one run.
func BenchmarkServerFirstEvent(b *testing.B) {
	for _, db := range loadStores {
		for _, clients := range []int{1, 32} {
			b.Run(fmt.Sprintf("store=%s/clients=%d", db.name, clients), func(b *testing.B) {
				client := loadServer(b, db.open(b), clients)
				var firstEvent loadtest.Latencies
				b.ReportAllocs()
				b.ResetTimer()
				result, err := loadtest.Drive(b.Context(), clients, b.N, func(ctx context.Context, _, _ int) error {
					out, err := client.Stream(ctx, loadtest.RunRequest{AgentID: "assistant", Message: "Hi there"})
					if err != nil {
						return err
					}
					if out.SessionID == "" {
						return fmt.Errorf("stream of %d events named no session", out.Events)
					}
					firstEvent.Add(out.FirstEvent)
					return nil
				})
				b.StopTimer()
				if err != nil {
					b.Fatal(err)
				}
				reportLoad(b, result)
				b.ReportMetric(loadtest.Milliseconds(firstEvent.Quantile(0.50)), "first-event-p50-ms")
				b.ReportMetric(loadtest.Milliseconds(firstEvent.Quantile(0.99)), "first-event-p99-ms")
			})
		}
	}
}

// checkStored reads back the last run of the first client that ran one
// and checks it was saved COMPLETED.
func checkStored(b *testing.B, store storage.Store, lastRuns []string) {
	for _, runID := range lastRuns {
		if runID == "" {
			continue // with b.N below the client count, some clients sent nothing
		}
		rec, err := store.GetRun(b.Context(), runID, "")
		if err != nil {
			b.Fatalf("read back run %s: %v", runID, err)
		}
		if rec.Run.Status != run.StatusCompleted {
			b.Fatalf("run %s stored as %s, want COMPLETED", runID, rec.Run.Status)
		}
		return
	}
	b.Fatal("no run was sent")
}

// reportLoad reports a drive's throughput and latency percentiles.
func reportLoad(b *testing.B, result loadtest.Result) {
	b.ReportMetric(result.PerSecond(), "runs/s")
	b.ReportMetric(loadtest.Milliseconds(result.Latencies.Quantile(0.50)), "p50-ms")
	b.ReportMetric(loadtest.Milliseconds(result.Latencies.Quantile(0.99)), "p99-ms")
}
