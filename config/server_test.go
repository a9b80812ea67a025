package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestParseServerBounds(t *testing.T) {
	t.Parallel()
	file := mustParse(t, `
server:
  body_timeout_seconds: 5
  upload_min_bytes_per_second: 1024
  max_connections: 200
  idle_timeout_seconds: 30
  sse_write_timeout_seconds: 7
  release_startup_memory: false
`, nil)
	require.Equal(t, Server{BodyTimeoutSeconds: 5, UploadMinBytesPerSecond: 1024, MaxConnections: 200, IdleTimeoutSeconds: 30,
		SSEWriteTimeoutSeconds: 7}, file.Server)

	file = mustParse(t, "server: {body_timeout_seconds: 0, upload_min_bytes_per_second: 0, max_connections: 0, sse_write_timeout_seconds: 0}\n", nil)
	require.Equal(t, Server{IdleTimeoutSeconds: DefaultIdleTimeoutSeconds, ReleaseStartupMemory: true}, file.Server, "0 turns each bound off")

	file = mustParse(t, "server: {max_connections: ${MAX_CONNS:-50}}\n", nil)
	require.Equal(t, 50, file.Server.MaxConnections)
	require.Equal(t, DefaultBodyTimeoutSeconds, file.Server.BodyTimeoutSeconds, "the keys left out keep their defaults")
}

func TestServerBoundsDefaults(t *testing.T) {
	t.Parallel()
	want := Server{BodyTimeoutSeconds: 60, UploadMinBytesPerSecond: 65536, MaxConnections: 10000, IdleTimeoutSeconds: 120,
		SSEWriteTimeoutSeconds: 30, ReleaseStartupMemory: true}
	for _, yaml := range []string{"", "name: x\n", "server:\n", "server: {}\n"} {
		require.Equal(t, want, mustParse(t, yaml, nil).Server, "%q", yaml)
	}
	file, err := Default(env(nil))
	require.NoError(t, err)
	require.Equal(t, want, file.Server, "no config file: the same defaults")
}

func TestParseServerBoundsErrors(t *testing.T) {
	t.Parallel()
	for yaml, want := range map[string]string{
		"server: {max_connection: 5}\n":                `agnogo.yaml:1: unknown key "max_connection" in server; did you mean "max_connections"?`,
		"server: {read_timeout: 5}\n":                  `agnogo.yaml:1: unknown key "read_timeout" in server; known keys: body_timeout_seconds, upload_min_bytes_per_second, max_connections, idle_timeout_seconds, sse_write_timeout_seconds, release_startup_memory`,
		"server: {body_timeout_seconds: -1}\n":         `agnogo.yaml:1: body_timeout_seconds in server: want a number of at least 0, got -1`,
		"server: {idle_timeout_seconds: 0}\n":          `agnogo.yaml:1: idle_timeout_seconds in server: want a number of at least 1, got 0`,
		"server: {max_connections: many}\n":            `agnogo.yaml:1: max_connections in server: want a whole number, got "many"`,
		"server: {upload_min_bytes_per_second: 1.5}\n": `agnogo.yaml:1: upload_min_bytes_per_second in server: want a whole number`,
		"server: {sse_write_timeout_seconds: [1]}\n":   `agnogo.yaml:1: sse_write_timeout_seconds in server: want a whole number, got a list`,
		"server: {release_startup_memory: maybe}\n":    `agnogo.yaml:1: release_startup_memory in server: want true or false`,
		"server: 60\n":                  `agnogo.yaml:1: server: want a mapping of keys`,
		"servr: {max_connections: 5}\n": `agnogo.yaml:1: unknown key "servr" at top level; did you mean "server"?`,
		"server:\n  max_connections: 5\n  max_connections: 6\n": `agnogo.yaml:3: duplicate key "max_connections" in server`,
	} {
		_, err := parse([]byte(yaml), "agnogo.yaml", env(nil))
		require.ErrorContains(t, err, want, yaml)
	}
}

func TestServerSSEWriteTimeout(t *testing.T) {
	t.Parallel()
	built, opts, _ := serverOS(t, "db: ${DB}\n", nil)
	require.Equal(t, 30*time.Second, built.Server(opts).SSEWriteTimeout)

	built, opts, _ = serverOS(t, "db: ${DB}\nserver: {sse_write_timeout_seconds: 5}\n", nil)
	require.Equal(t, 5*time.Second, built.Server(opts).SSEWriteTimeout)

	built, opts, _ = serverOS(t, "db: ${DB}\nserver: {sse_write_timeout_seconds: 0}\n", nil)
	require.Negative(t, built.Server(opts).SSEWriteTimeout, "0: no bound, which agentos takes as a negative value")
}
