package bench

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	_ "modernc.org/sqlite" // database/sql driver "sqlite" for the peers' turn store
)

// The workload every framework runs.
const (
	instructions  = "You are helpful."
	toolName      = "get_weather"
	toolDesc      = "Current weather of a city."
	toolArgs      = `{"city":"Paris"}`
	toolResult    = "sunny in Paris"
	singleReply   = "Hello!"
	toolReply     = "It is sunny."
	convReply     = "Noted."
	convTurns     = 25
	historyTurns  = 3 // agnogo's default NumHistoryRuns; the peers send the same window
	usageInput    = 12
	usageOutput   = 3
	usageTotal    = usageInput + usageOutput
	toolCallID    = "call_1"
	singlePrompt  = "hi"
	toolPrompt    = "weather?"
	sessionPrefix = "s"
)

// weatherArgs are get_weather's arguments. No jsonschema tag: the three
// frameworks read that tag with different grammars.
type weatherArgs struct {
	City string `json:"city"`
}

// weather is the tool body shared by every framework; calls counts its runs
// so a benchmark can assert the tool really ran.
type weather struct{ calls atomic.Int64 }

func (w *weather) run(city string) string {
	w.calls.Add(1)
	return "sunny in " + city
}

// turnStore is the SQLite persistence the peers get, since neither ships a
// session store: per turn, one IMMEDIATE transaction that upserts the
// session row (turn count and accumulated token usage) and inserts one row
// per new message, the message being the framework's own message type
// encoded as JSON. History is not read back: the peers keep it in memory, as
// their APIs expect the caller to.
//
// The connection is set up like agnogo's sqlite store: WAL, foreign keys,
// busy timeout, immediate write transactions, one writer connection, the
// driver's default synchronous mode.
type turnStore struct {
	db *sql.DB
}

const turnSchema = `
CREATE TABLE IF NOT EXISTS sessions (
	session_id    TEXT PRIMARY KEY,
	framework     TEXT NOT NULL,
	turns         INTEGER NOT NULL,
	input_tokens  INTEGER NOT NULL,
	output_tokens INTEGER NOT NULL,
	total_tokens  INTEGER NOT NULL,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
	session_id TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
	turn       INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	role       TEXT NOT NULL,
	message    TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (session_id, turn, seq)
);`

func openTurnStore(b *testing.B) *turnStore {
	b.Helper()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "peer.db")+"?"+q.Encode())
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	if _, err := db.ExecContext(b.Context(), turnSchema); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	return &turnStore{db: db}
}

// storedMessage is one message row: its role and its JSON encoding.
type storedMessage struct {
	role string
	json []byte
}

// saveTurn persists one turn in one transaction.
func (s *turnStore) saveTurn(ctx context.Context, framework, session string, turn int, input, output, total int, msgs []storedMessage) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	now := time.Now().Unix()
	if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (session_id, framework, turns, input_tokens, output_tokens, total_tokens, created_at, updated_at)
VALUES (?, ?, 1, ?, ?, ?, ?, ?)
ON CONFLICT (session_id) DO UPDATE SET turns = turns + 1, input_tokens = input_tokens + excluded.input_tokens,
	output_tokens = output_tokens + excluded.output_tokens, total_tokens = total_tokens + excluded.total_tokens, updated_at = excluded.updated_at`,
		session, framework, input, output, total, now, now); err != nil {
		return fmt.Errorf("upsert session: %w", err)
	}
	for seq, m := range msgs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO messages (session_id, turn, seq, role, message, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			session, turn, seq, m.role, string(m.json), now); err != nil {
			return fmt.Errorf("insert message: %w", err)
		}
	}
	return tx.Commit()
}

// lastTurns returns the tail of history holding its last n turns of
// perTurn messages each.
func lastTurns[M any](history []M, n, perTurn int) []M {
	return history[max(0, len(history)-n*perTurn):]
}
