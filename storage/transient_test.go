package storage_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"

	"github.com/agnogo/agnogo/storage"
)

func TestTransient(t *testing.T) {
	transient := []error{
		fmt.Errorf("save run r1: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}),
		&pgconn.PgError{Code: "08006", Message: "connection failure"},
		&pgconn.PgError{Code: "40001", Message: "could not serialize access"},
		&pgconn.PgError{Code: "40P01", Message: "deadlock detected"},
		&pgconn.PgError{Code: "53300", Message: "too many connections"},
		fmt.Errorf("dial: %w", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}),
		syscall.ECONNRESET,
		fmt.Errorf("read: %w", net.ErrClosed),
		fmt.Errorf("saving the finished run failed: %w", pgconn.ErrConnClosed), // closed under a statement
	}
	for _, err := range transient {
		require.True(t, storage.Transient(err), "%v", err)
	}
	permanent := []error{
		nil,
		&pgconn.PgError{Code: "23505", Message: "duplicate key"},
		&pgconn.PgError{Code: "22021", Message: "invalid byte sequence for encoding UTF8"},
		&pgconn.PgError{Code: "42P01", Message: "relation does not exist"},
		fmt.Errorf("save: %w", storage.ErrNotFound),
		fmt.Errorf("save: %w", storage.ErrInvalid),
		context.Canceled,
		fmt.Errorf("save: %w", context.DeadlineExceeded),
		errors.New("something else"),
	}
	for _, err := range permanent {
		require.False(t, storage.Transient(err), "%v", err)
	}
}

// TestTransientSQLiteBusy: a write refused because another connection
// holds the database is transient; a constraint failure is not.
func TestTransientSQLiteBusy(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	holder, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	t.Cleanup(func() { holder.Close() })
	_, err = holder.Exec(`CREATE TABLE t (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	tx, err := holder.Begin()
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback() })
	_, err = tx.Exec(`INSERT INTO t (id) VALUES (1)`)
	require.NoError(t, err)

	other, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(0)")
	require.NoError(t, err)
	t.Cleanup(func() { other.Close() })
	_, err = other.Exec(`INSERT INTO t (id) VALUES (2)`)
	require.Error(t, err)
	require.True(t, storage.Transient(fmt.Errorf("save run: %w", err)), "%v", err)

	require.NoError(t, tx.Commit())
	_, err = other.Exec(`INSERT INTO t (id) VALUES (1)`)
	require.Error(t, err)
	require.False(t, storage.Transient(err), "a constraint failure: %v", err)
}
