package clock_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/tools/clock"
)

func TestClock(t *testing.T) {
	now := time.Date(2026, 12, 2, 15, 4, 5, 0, time.UTC)
	tools := clock.Tools(func() time.Time { return now })
	require.Len(t, tools, 2)
	current, convert := tools[0], tools[1]

	out, err := current.Call(t.Context(), json.RawMessage(`{"timezone":"Asia/Tokyo"}`))
	require.NoError(t, err)
	require.JSONEq(t, `{"time":"2026-12-03T00:04:05+09:00","timezone":"Asia/Tokyo","weekday":"Thursday","unix":1796223845}`, out)
	out, err = current.Call(t.Context(), json.RawMessage(`{}`))
	require.NoError(t, err)
	require.Contains(t, out, `"time":"2026-12-02T15:04:05Z"`)

	out, err = convert.Call(t.Context(), json.RawMessage(`{"time":"2026-12-02T09:00:00+01:00","to":"America/New_York"}`))
	require.NoError(t, err)
	require.Contains(t, out, `"time":"2026-12-02T03:00:00-05:00"`)

	_, err = current.Call(t.Context(), json.RawMessage(`{"timezone":"Mars/Olympus"}`))
	require.ErrorContains(t, err, "unknown time zone")
	_, err = convert.Call(t.Context(), json.RawMessage(`{"time":"noon","to":"UTC"}`))
	require.ErrorContains(t, err, "RFC 3339")
}
