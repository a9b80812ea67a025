package agentos_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/tool"
)

// detailOf decodes an error answer's detail as text (a string, or the
// issues of a 422).
func detailOf(t *testing.T, resp *http.Response) string {
	t.Helper()
	var body struct {
		Detail json.RawMessage `json:"detail"`
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&body))
	var text string
	if json.Unmarshal(body.Detail, &text) == nil {
		return text
	}
	return string(body.Detail)
}

func TestScheduleValidation(t *testing.T) {
	s := newServer(t, nil, nil)
	valid := func() map[string]any {
		return map[string]any{"name": "nightly report", "cron_expr": "0 3 * * *", "endpoint": "/agents/assistant/runs", "payload": map[string]any{"message": "go"}}
	}
	for _, c := range []struct {
		name   string
		change func(map[string]any)
		want   string
	}{
		{"bad cron", func(b map[string]any) { b["cron_expr"] = "0 3 * *" }, "Invalid cron expression: 0 3 * *"},
		{"six fields", func(b map[string]any) { b["cron_expr"] = "0 0 3 * * *" }, "Invalid cron expression: 0 0 3 * * *"},
		{"bad timezone", func(b map[string]any) { b["timezone"] = "Mars/Base" }, "Invalid timezone: Mars/Base"},
		{"bad name", func(b map[string]any) { b["name"] = "-dash first" }, "String should match pattern"},
		{"a URL", func(b map[string]any) { b["endpoint"] = "http://example.com/agents/a/runs" }, "endpoint must start with '/'"},
		{"a scheme in the path", func(b map[string]any) { b["endpoint"] = "/x?u=http://evil" }, "not a URL"},
		{"whitespace", func(b map[string]any) { b["endpoint"] = "/agents/a b/runs" }, "whitespace"},
		{"method", func(b map[string]any) { b["method"] = "TRACE" }, "Input should be 'GET'"},
		{"timeout", func(b map[string]any) { b["timeout_seconds"] = 0 }, "greater than or equal to 1"},
		{"retries", func(b map[string]any) { b["max_retries"] = 11 }, "less than or equal to 10"},
		{"unknown agent", func(b map[string]any) { b["endpoint"] = "/agents/nobody/runs" }, "names agent 'nobody', which this server does not serve"},
		{"missing cron", func(b map[string]any) { delete(b, "cron_expr") }, "cron_expr"},
	} {
		body := valid()
		c.change(body)
		resp := s.callJSON(t, http.MethodPost, "/schedules", body)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, c.name)
		require.Contains(t, detailOf(t, resp), c.want, c.name)
	}

	resp := s.callJSON(t, http.MethodPost, "/schedules", valid())
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	created := decode[map[string]any](t, resp)
	id := created["id"].(string)
	require.Nil(t, created["user_id"], "no auth: the schedule is unowned")
	require.EqualValues(t, 3600, created["timeout_seconds"])
	require.EqualValues(t, 0, created["max_retries"])
	require.EqualValues(t, 60, created["retry_delay_seconds"])
	require.Equal(t, true, created["enabled"])
	require.Nil(t, created["managed_by"])

	// PATCH takes the mutable fields only, and no null for a required one.
	resp = s.callJSON(t, http.MethodPatch, "/schedules/"+id, map[string]any{"user_id": "mallory"})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, detailOf(t, resp), "Field 'user_id' cannot be updated")
	resp = s.callJSON(t, http.MethodPatch, "/schedules/"+id, map[string]any{"managed_by": "x", "locked_by": "y"})
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	detail := detailOf(t, resp)
	require.Contains(t, detail, "managed_by")
	require.Contains(t, detail, "locked_by")
	resp = s.callJSON(t, http.MethodPatch, "/schedules/"+id, `{"name": null}`)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	require.Contains(t, detailOf(t, resp), "cannot be null")
	resp = s.callJSON(t, http.MethodPatch, "/schedules/"+id, "")
	require.Equal(t, http.StatusOK, resp.StatusCode, "an empty body changes nothing")
	require.Equal(t, created["updated_at"], decode[map[string]any](t, resp)["updated_at"])
	resp = s.callJSON(t, http.MethodPatch, "/schedules/"+id, map[string]any{"cron_expr": "30 4 * * *", "description": "later"})
	require.Equal(t, http.StatusOK, resp.StatusCode)
	patched := decode[map[string]any](t, resp)
	require.Equal(t, "30 4 * * *", patched["cron_expr"])
	require.Equal(t, "later", patched["description"])
	require.Zero(t, (int64(patched["next_run_at"].(float64))-4*3600-30*60)%86400, "the next fire follows the new cron")

	// Disabled: no trigger; enabled again, the trigger needs a running
	// scheduler.
	resp = s.callJSON(t, http.MethodPost, "/schedules/"+id+"/disable", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Equal(t, false, decode[map[string]any](t, resp)["enabled"])
	resp = s.callJSON(t, http.MethodPost, "/schedules/"+id+"/trigger", nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	require.Equal(t, "Schedule is disabled", detailOf(t, resp))
	resp = s.callJSON(t, http.MethodPost, "/schedules/"+id+"/enable", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp = s.callJSON(t, http.MethodPost, "/schedules/"+id+"/trigger", nil)
	require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	require.Equal(t, "Scheduler is not running", detailOf(t, resp))

	resp = s.callJSON(t, http.MethodGet, "/schedules?enabled=maybe", nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)
	resp = s.callJSON(t, http.MethodDelete, "/schedules/"+id, nil)
	require.Equal(t, http.StatusNoContent, resp.StatusCode)
	resp = s.callJSON(t, http.MethodGet, "/schedules/"+id, nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
}

// POST /schedules/{id}/trigger answers the running attempt at once, and
// with wait=true its end, the run's answer in its output.
func TestTriggerASchedule(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("first"), scripted.Text("second")}, func(_ *agent.Config, c *agentos.Config) {
		c.Scheduler = agentos.SchedulerConfig{Enabled: true, PollInterval: 50 * time.Millisecond, RunPollInterval: 10 * time.Millisecond}
	})
	t.Cleanup(func() { _ = s.os.Shutdown(t.Context()) })
	resp := s.callJSON(t, http.MethodPost, "/schedules", map[string]any{"name": "yearly", "cron_expr": "0 0 1 1 *",
		"endpoint": "/agents/assistant/runs", "payload": map[string]any{"message": "hello", "stream": true, "metadata": map[string]any{"k": "v"}}})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	id := decode[map[string]any](t, resp)["id"].(string)

	resp = s.callJSON(t, http.MethodPost, "/schedules/"+id+"/trigger?wait=true", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	final := decode[map[string]any](t, resp)
	require.Equal(t, "success", final["status"], "%v", final)
	require.EqualValues(t, 202, final["status_code"])
	require.Equal(t, map[string]any{"content": "first", "content_type": "str"}, final["output"])
	runID := final["run_id"].(string)
	resp = s.get(t, fmt.Sprintf("/agents/assistant/runs/%s?session_id=%s", runID, final["session_id"]))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	ran := decode[map[string]any](t, resp)
	require.Equal(t, "COMPLETED", ran["status"])
	metadata := ran["metadata"].(map[string]any)
	require.Equal(t, "v", metadata["k"], "the payload's metadata is kept")
	require.Equal(t, id, metadata["schedule_id"])
	require.Equal(t, final["id"], metadata["schedule_run_id"])

	resp = s.callJSON(t, http.MethodPost, "/schedules/"+id+"/trigger", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	running := decode[map[string]any](t, resp)
	require.Equal(t, "running", running["status"], "without wait the answer comes at once")
	var runs map[string]any
	require.Eventually(t, func() bool {
		resp := s.get(t, "/schedules/"+id+"/runs")
		runs = decode[map[string]any](t, resp)
		for _, r := range runs["data"].([]any) {
			if r.(map[string]any)["id"] == running["id"] && r.(map[string]any)["status"] == "success" {
				return true
			}
		}
		return false
	}, 20*time.Second, 10*time.Millisecond, "the second trigger ends: %v", runs)
	require.EqualValues(t, 2, runs["meta"].(map[string]any)["total_count"])
	resp = s.get(t, "/schedules/"+id+"/runs/"+running["id"].(string))
	require.Equal(t, http.StatusOK, resp.StatusCode)
	resp = s.get(t, "/schedules/other/runs/"+running["id"].(string))
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "a run of another schedule is not found")
}

// Without an OS database, every schedules, approvals and service-accounts
// route answers 503 naming what to configure.
func TestOSDatabaseFeaturesWithoutADatabase(t *testing.T) {
	os, err := agentos.New(agentos.Config{})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	for _, c := range []struct{ method, path, tag string }{
		{http.MethodGet, "/schedules", "Schedules"},
		{http.MethodPost, "/schedules/s1/trigger", "Schedules"},
		{http.MethodGet, "/approvals", "Approvals"},
		{http.MethodPost, "/approvals/a1/resolve", "Approvals"},
		{http.MethodGet, "/service-accounts", "Service Accounts"},
		{http.MethodDelete, "/service-accounts/x", "Service Accounts"},
	} {
		resp, body := call(t, c.method, ts.URL+c.path, nil)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s %s", c.method, c.path)
		require.Contains(t, string(body), c.tag+" not available: pass a `db` to AgentOS to enable this feature.")
	}
}

// A service-account token on a server without authentication is still
// held to its scopes: it schedules only the runs it may start, and only
// its own schedules are its.
func TestAServiceAccountSchedulesOnlyWhatItMayRun(t *testing.T) {
	s := newServer(t, nil, nil)
	token := "agno_pat_schedulertesttoken0123456789abcdefghij"
	sum := sha256.Sum256([]byte(token))
	_, err := s.store.(storage.ServiceAccountStore).CreateServiceAccount(t.Context(), &storage.ServiceAccount{
		Name: "cron-bot", TokenHash: hex.EncodeToString(sum[:]), TokenPrefix: token[:16],
		Scopes: []string{"schedules:read", "schedules:write"},
	})
	require.NoError(t, err)
	do := func(method, path string, body any) *http.Response {
		t.Helper()
		data, err := json.Marshal(body)
		require.NoError(t, err)
		req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, bytes.NewReader(data))
		require.NoError(t, err)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		t.Cleanup(func() { resp.Body.Close() })
		return resp
	}
	resp := do(http.MethodPost, "/schedules", map[string]any{"name": "sneaky", "cron_expr": "0 3 * * *",
		"endpoint": "/agents/assistant/runs", "payload": map[string]any{"message": "go"}})
	require.Equal(t, http.StatusForbidden, resp.StatusCode)
	require.Contains(t, detailOf(t, resp), "agents:assistant:run")
	// The admin's schedule is not the account's to see.
	resp = s.callJSON(t, http.MethodPost, "/schedules", map[string]any{"name": "admin job", "cron_expr": "0 3 * * *",
		"endpoint": "/agents/assistant/runs", "payload": map[string]any{"message": "go"}})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	resp = do(http.MethodGet, "/schedules", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, decode[map[string]any](t, resp)["data"])
}

// A scheduled run that pauses for an approval ends its attempt paused,
// with the run's requirements, and the approval names the schedule and
// the attempt that started the run.
func TestAScheduledRunPausedForApproval(t *testing.T) {
	var sent atomic.Int32
	s := newServer(t, []scripted.Reply{scripted.ToolCall("send_email", `{"to":"ops@example.com"}`)}, func(a *agent.Config, c *agentos.Config) {
		a.Tools = []tool.Tool{emailTool(t, &sent)}
		c.Scheduler = agentos.SchedulerConfig{Enabled: true, PollInterval: 50 * time.Millisecond, RunPollInterval: 10 * time.Millisecond}
	})
	t.Cleanup(func() { _ = s.os.Shutdown(t.Context()) })
	resp := s.callJSON(t, http.MethodPost, "/schedules", map[string]any{"name": "mailer", "cron_expr": "0 0 1 1 *",
		"endpoint": "/agents/assistant/runs", "payload": map[string]any{"message": "mail ops"}})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	id := decode[map[string]any](t, resp)["id"].(string)
	resp = s.callJSON(t, http.MethodPost, "/schedules/"+id+"/trigger?wait=true", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	final := decode[map[string]any](t, resp)
	require.Equal(t, "paused", final["status"], "%v", final)
	require.Contains(t, fmt.Sprint(final["requirements"]), "send_email")
	require.Zero(t, sent.Load(), "nothing was sent before an approval")

	resp = s.get(t, "/approvals?schedule_id="+id)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	page := decode[approvalsPage](t, resp)
	require.Len(t, page.Data, 1)
	approval := page.Data[0]
	require.Equal(t, "pending", approval["status"])
	require.Equal(t, final["run_id"], approval["run_id"])
	require.Equal(t, id, approval["schedule_id"])
	require.Equal(t, final["id"], approval["schedule_run_id"])
}

// A schedule of an endpoint that is not a run (an admin's) calls it
// in-process with its JSON payload: a 2xx is a success.
func TestAScheduleCallsAnotherEndpoint(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("hi")}, func(_ *agent.Config, c *agentos.Config) {
		c.Scheduler = agentos.SchedulerConfig{Enabled: true, PollInterval: 50 * time.Millisecond, RunPollInterval: 10 * time.Millisecond}
	})
	t.Cleanup(func() { _ = s.os.Shutdown(t.Context()) })
	ran := s.runAgent(t, url.Values{"message": {"hello"}, "session_id": {"old-session"}})
	require.Equal(t, "COMPLETED", ran["status"])
	resp := s.callJSON(t, http.MethodPost, "/schedules", map[string]any{"name": "cleanup", "cron_expr": "@daily",
		"method": "delete", "endpoint": "/sessions/old-session"})
	require.Equal(t, http.StatusCreated, resp.StatusCode)
	id := decode[map[string]any](t, resp)["id"].(string)
	resp = s.callJSON(t, http.MethodPost, "/schedules/"+id+"/trigger?wait=true", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	final := decode[map[string]any](t, resp)
	require.Equal(t, "success", final["status"], "%v", final)
	require.EqualValues(t, http.StatusNoContent, final["status_code"])
	resp = s.get(t, "/sessions/old-session")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, "the scheduled call deleted the session")
	resp = s.callJSON(t, http.MethodPost, "/schedules/"+id+"/trigger?wait=true", nil)
	final = decode[map[string]any](t, resp)
	require.Equal(t, "failed", final["status"], "a 404 is a failure: %v", final)
	require.EqualValues(t, http.StatusNotFound, final["status_code"])
	require.Contains(t, final["error"], "not found")
}
