package main

import (
	"net"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// `agnogo health` exits 0 against a running server and 1 when nothing
// answers: the container's health check.
func TestHealthCommand(t *testing.T) {
	t.Parallel()
	dbURL, _ := tempDB(t)
	s := startServe(t, "--db", dbURL)
	addr := strings.TrimPrefix(s.url, "http://")

	got := agnogo(t, "health", "--addr", addr)
	require.Equal(t, exitOK, got.code, got.stderr)
	require.Equal(t, "ok\n", got.stdout)

	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	closed := ln.Addr().String()
	require.NoError(t, ln.Close())
	got = agnogo(t, "health", "--addr", closed)
	require.Equal(t, exitFailure, got.code)
	require.Contains(t, got.stderr, "health:")

	got = agnogo(t, "health", "--addr", "no-port")
	require.Equal(t, exitUsage, got.code)
}
