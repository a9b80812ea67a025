package testdb

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
)

// TestPrivatePostgres: a private cluster keeps what was committed across a
// restart and a crash-like stop; a session open at the restart is ended,
// and nothing answers while the cluster is stopped.
func TestPrivatePostgres(t *testing.T) {
	t.Parallel()
	cluster := PrivatePostgres(t)
	connect := func() (*pgx.Conn, error) {
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		return pgx.Connect(ctx, cluster.URL())
	}
	count := func() int {
		conn, err := connect()
		require.NoError(t, err)
		defer conn.Close(context.WithoutCancel(t.Context()))
		var n int
		require.NoError(t, conn.QueryRow(t.Context(), `SELECT count(*) FROM kept`).Scan(&n))
		return n
	}

	conn, err := connect()
	require.NoError(t, err)
	defer conn.Close(context.WithoutCancel(t.Context()))
	_, err = conn.Exec(t.Context(), `CREATE TABLE kept (n int); INSERT INTO kept VALUES (1)`)
	require.NoError(t, err)

	cluster.Restart(t)
	_, err = conn.Exec(t.Context(), `SELECT 1`)
	require.Error(t, err, "a session open at the restart is terminated")
	require.Equal(t, 1, count())

	busy, err := connect()
	require.NoError(t, err)
	defer busy.Close(context.WithoutCancel(t.Context()))
	_, err = busy.Exec(t.Context(), `INSERT INTO kept VALUES (2)`)
	require.NoError(t, err)
	cluster.Stop(t)
	_, err = connect()
	require.Error(t, err, "nothing answers while the cluster is stopped")
	cluster.Start(t)
	require.Equal(t, 2, count(), "a committed row survives a crash-like stop")
	require.Contains(t, cluster.Log(), "database system is ready to accept connections")
}
