package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestSchedulerKey(t *testing.T) {
	t.Parallel()
	os := &OS{File: mustParse(t, "scheduler: {enabled: true, poll_interval_seconds: 2}\n", nil)}
	cfg := os.Server(ServerOptions{Getenv: env(nil)})
	require.True(t, cfg.Scheduler.Enabled)
	require.Equal(t, 2*time.Second, cfg.Scheduler.PollInterval)

	os = &OS{File: mustParse(t, "name: x\n", nil)}
	cfg = os.Server(ServerOptions{Getenv: env(nil)})
	require.False(t, cfg.Scheduler.Enabled, "the scheduler is off by default")
	require.Equal(t, DefaultSchedulerPollSeconds*time.Second, cfg.Scheduler.PollInterval)

	_, err := parse([]byte("scheduler: {enabled: true, poll_interval_seconds: 0}\n"), "agnogo.yaml", env(nil))
	require.ErrorContains(t, err, "poll_interval_seconds")
	_, err = parse([]byte("scheduler: {enable: true}\n"), "agnogo.yaml", env(nil))
	require.ErrorContains(t, err, `unknown key "enable" in scheduler`)
}
