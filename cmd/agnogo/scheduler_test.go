package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// scheduledOS is a server with JWT auth and user isolation whose scheduler
// is on, and a way to call it as a user with scopes.
type scheduledOS struct {
	url   string
	token func(sub string, scopes ...string) string
}

// scheduleScopes are what a user who schedules their own agent runs holds.
var scheduleScopes = []string{"schedules:read", "schedules:write", "schedules:delete", "agents:read", "agents:run"}

// schedulerConfigFile writes an agnogo.yaml over db with JWT auth, user
// isolation, the scheduler polling every second, and agents a and b on the
// fake model.
func schedulerConfigFile(t *testing.T, db, modelURL, public, extra string) string {
	t.Helper()
	indented := "        " + strings.ReplaceAll(strings.TrimSpace(public), "\n", "\n        ")
	config := filepath.Join(t.TempDir(), "agnogo.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`db: %s
scheduler: {enabled: true, poll_interval_seconds: 1}
%s
auth:
  user_isolation: true
  jwt:
    authorization: true
    verification_keys:
      - |
%s
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - {id: a, model: fake, tools: [scheduler]}
  - {id: b, model: fake}
`, db, extra, indented, modelURL)), 0o600))
	return config
}

// do calls the server as user with scopes and decodes a JSON answer.
func (s *scheduledOS) do(t *testing.T, method, path, user string, scopes []string, body any) (int, map[string]any) {
	t.Helper()
	var reader io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		require.NoError(t, err)
		reader = strings.NewReader(string(data))
	}
	req, err := http.NewRequestWithContext(t.Context(), method, s.url+path, reader)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.token(user, scopes...))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	var out map[string]any
	if len(raw) > 0 {
		require.NoError(t, json.Unmarshal(raw, &out), "%s %s: %s", method, path, raw)
	}
	return resp.StatusCode, out
}

// form posts a form as user with the run scopes and decodes the answer.
func (s *scheduledOS) form(t *testing.T, path, user string, fields map[string]string) (int, map[string]any) {
	t.Helper()
	values := neturl.Values{}
	for k, v := range fields {
		values.Set(k, v)
	}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, s.url+path, strings.NewReader(values.Encode()))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+s.token(user, scheduleScopes...))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	return resp.StatusCode, out
}

// scheduleRuns lists a schedule's attempts, newest first.
func (s *scheduledOS) scheduleRuns(t *testing.T, id, user string) []map[string]any {
	t.Helper()
	code, page := s.do(t, http.MethodGet, "/schedules/"+id+"/runs?limit=100", user, scheduleScopes, nil)
	require.Equal(t, http.StatusOK, code, "%v", page)
	var runs []map[string]any
	for _, r := range page["data"].([]any) {
		runs = append(runs, r.(map[string]any))
	}
	return runs
}

// TestAScheduleFiresOnItsMinute: on SQLite and on Postgres, a schedule with
// a one-minute cron on an agent fires within 75 s and records a success
// linked to a COMPLETED run owned by the schedule's owner. Another user
// can neither see nor trigger it, and a non-admin can schedule neither an
// endpoint that is not a run nor an agent they may not run.
func TestAScheduleFiresOnItsMinute(t *testing.T) {
	for _, db := range []string{"sqlite", "postgres"} {
		t.Run(db, func(t *testing.T) {
			t.Parallel()
			url := "sqlite://" + filepath.Join(t.TempDir(), "agnogo.db")
			if db == "postgres" {
				url = freshDatabase(t)
			}
			fake := fakeopenai.New(t)
			// Agent a schedules its own runs with the scheduler toolkit.
			fake.Enqueue(fakeopenai.ToolCalls(fakeopenai.Call("create_schedule",
				`{"name":"agent made","cron":"* * * * *","payload":"{\"message\":\"from the agent\"}"}`)), fakeopenai.Text("scheduled"))
			for i := range 4 {
				fake.Enqueue(fakeopenai.Text(fmt.Sprintf("tick %d", i)))
			}
			public, token := jwtKeys(t)
			served := startServe(t, "--config", schedulerConfigFile(t, url, fake.URL, public, ""))
			s := &scheduledOS{url: served.url, token: token}

			// The toolkit's schedule carries its provenance; pointed at
			// another agent, it is disabled at its next fire.
			code, ran := s.form(t, "/agents/a/runs", "alice", map[string]string{"message": "schedule yourself every minute", "stream": "false"})
			require.Equal(t, http.StatusOK, code, "%v", ran)
			require.Equal(t, "COMPLETED", ran["status"], "%v", ran)
			code, page := s.do(t, http.MethodGet, "/schedules", "alice", scheduleScopes, nil)
			require.Equal(t, http.StatusOK, code)
			require.Len(t, page["data"], 1, "%v", page)
			made := page["data"].([]any)[0].(map[string]any)
			require.Equal(t, "agent made", made["name"])
			require.Equal(t, "alice", made["user_id"], "the toolkit's schedule is the run's user's")
			require.Equal(t, "/agents/a/runs", made["endpoint"])
			require.Equal(t, "scheduler_tools", made["managed_by"])
			require.Equal(t, "agent", made["target_type"])
			require.Equal(t, "a", made["target_id"])
			madeID := made["id"].(string)
			code, patched := s.do(t, http.MethodPatch, "/schedules/"+madeID, "alice", scheduleScopes, map[string]any{"endpoint": "/agents/b/runs"})
			require.Equal(t, http.StatusOK, code, "%v", patched)
			code, refused := s.do(t, http.MethodPatch, "/schedules/"+madeID, "alice", scheduleScopes, map[string]any{"target_id": "b"})
			require.Equal(t, http.StatusUnprocessableEntity, code, "provenance is not updatable: %v", refused)
			require.Contains(t, fmt.Sprint(refused["detail"]), "target_id")

			code, created := s.do(t, http.MethodPost, "/schedules", "alice", scheduleScopes, map[string]any{
				"name": "every minute", "cron_expr": "* * * * *", "endpoint": "/agents/a/runs", "payload": map[string]any{"message": "tick"},
			})
			require.Equal(t, http.StatusCreated, code, "%v", created)
			id := created["id"].(string)
			require.Equal(t, "alice", created["user_id"])
			require.Equal(t, "POST", created["method"])
			require.Equal(t, "UTC", created["timezone"])
			next := int64(created["next_run_at"].(float64))
			require.Zero(t, next%60, "a one-minute cron fires on the minute")
			require.LessOrEqual(t, next-time.Now().Unix(), int64(60))

			// Bob sees nothing of alice's and cannot trigger it.
			code, page = s.do(t, http.MethodGet, "/schedules", "bob", scheduleScopes, nil)
			require.Equal(t, http.StatusOK, code)
			require.Empty(t, page["data"])
			code, _ = s.do(t, http.MethodGet, "/schedules/"+id, "bob", scheduleScopes, nil)
			require.Equal(t, http.StatusNotFound, code)
			code, _ = s.do(t, http.MethodPost, "/schedules/"+id+"/trigger", "bob", scheduleScopes, nil)
			require.Equal(t, http.StatusNotFound, code)
			code, _ = s.do(t, http.MethodGet, "/schedules/"+id+"/runs", "bob", scheduleScopes, nil)
			require.Equal(t, http.StatusNotFound, code)
			// A non-admin schedules only the runs they may start.
			code, refused = s.do(t, http.MethodPost, "/schedules", "bob", scheduleScopes, map[string]any{
				"name": "wipe", "cron_expr": "0 * * * *", "endpoint": "/sessions", "method": "DELETE",
			})
			require.Equal(t, http.StatusForbidden, code, "%v", refused)
			require.Contains(t, refused["detail"], "Only admins can schedule an endpoint that is not a run endpoint")
			code, refused = s.do(t, http.MethodPost, "/schedules", "bob", []string{"schedules:write", "agents:b:run"}, map[string]any{
				"name": "not mine", "cron_expr": "0 * * * *", "endpoint": "/agents/a/runs", "payload": map[string]any{"message": "x"},
			})
			require.Equal(t, http.StatusForbidden, code, "%v", refused)
			require.Contains(t, refused["detail"], "agents:a:run")
			// Alice's name is hers: bob may use it, she may not twice.
			code, _ = s.do(t, http.MethodPost, "/schedules", "bob", scheduleScopes, map[string]any{
				"name": "every minute", "cron_expr": "0 0 * * *", "endpoint": "/agents/a/runs", "payload": map[string]any{"message": "x"},
			})
			require.Equal(t, http.StatusCreated, code)
			code, conflict := s.do(t, http.MethodPost, "/schedules", "alice", scheduleScopes, map[string]any{
				"name": "every minute", "cron_expr": "0 0 * * *", "endpoint": "/agents/a/runs", "payload": map[string]any{"message": "x"},
			})
			require.Equal(t, http.StatusConflict, code)
			require.Equal(t, "Schedule with name 'every minute' already exists", conflict["detail"])

			var runs []map[string]any
			require.True(t, poll(75*time.Second, 250*time.Millisecond, func() bool {
				runs = s.scheduleRuns(t, id, "alice")
				return len(runs) > 0 && runs[len(runs)-1]["status"] != "running"
			}), "the schedule fired and its run ended within 75 s: %v\n%s", runs, served.log)
			first := runs[len(runs)-1]
			require.Equal(t, "success", first["status"], "%v", first)
			require.EqualValues(t, 1, first["attempt"])
			require.Equal(t, "alice", first["user_id"])
			require.EqualValues(t, next, first["triggered_at"], "it fired on its minute")
			require.Contains(t, fmt.Sprint(first["output"]), "tick 0")
			runID, sessionID := first["run_id"].(string), first["session_id"].(string)
			code, ran = s.do(t, http.MethodGet, "/agents/a/runs/"+runID+"?session_id="+sessionID, "alice", scheduleScopes, nil)
			require.Equal(t, http.StatusOK, code, "%v", ran)
			require.Equal(t, "COMPLETED", ran["status"])
			require.Equal(t, "alice", ran["user_id"], "the run is the schedule owner's")
			require.Equal(t, id, ran["metadata"].(map[string]any)["schedule_id"])
			code, _ = s.do(t, http.MethodGet, "/agents/a/runs/"+runID+"?session_id="+sessionID, "bob", scheduleScopes, nil)
			require.Equal(t, http.StatusNotFound, code, "bob cannot read alice's scheduled run")

			code, schedule := s.do(t, http.MethodGet, "/schedules/"+id, "alice", scheduleScopes, nil)
			require.Equal(t, http.StatusOK, code)
			require.Greater(t, int64(schedule["next_run_at"].(float64)), next, "the schedule moved on to its next minute")

			// The drifted schedule fired on the same minute: refused, and
			// disabled with its reason.
			var drifted map[string]any
			require.True(t, poll(10*time.Second, 100*time.Millisecond, func() bool {
				_, drifted = s.do(t, http.MethodGet, "/schedules/"+madeID, "alice", scheduleScopes, nil)
				return drifted["enabled"] == false
			}), "the drifted schedule is disabled: %v", drifted)
			require.Equal(t, "endpoint_drift:/agents/b/runs!=agent:a", drifted["disabled_reason"])
			refusedRuns := s.scheduleRuns(t, madeID, "alice")
			require.Len(t, refusedRuns, 1)
			require.Equal(t, "failed", refusedRuns[0]["status"])
			require.Contains(t, refusedRuns[0]["error"], "does not match its provenance target agent:a; refusing to execute")
			require.Nil(t, refusedRuns[0]["run_id"], "nothing ran")
			code, refused = s.do(t, http.MethodPost, "/schedules/"+madeID+"/enable", "alice", scheduleScopes, nil)
			require.Equal(t, http.StatusConflict, code, "%v", refused)
			require.Contains(t, refused["detail"], "endpoint_drift")
		})
	}
}

// TestTwoSchedulersFireEachMinuteOnce: two replicas on one Postgres
// database both run the scheduler; a one-minute schedule fires once a
// minute for three minutes — no minute missed, none fired twice — while
// the replica executing the second minute's run is killed with SIGKILL
// mid-run: the survivor takes the run and its attempt over, and the
// attempt ends a success with the one run it started.
func TestTwoSchedulersFireEachMinuteOnce(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	fake := fakeopenai.New(t)
	fake.Enqueue(
		fakeopenai.Text("minute 1"),
		fakeopenai.Text("lost with its replica").StallAfter(1), // minute 2, in flight when its replica is killed
		fakeopenai.Text("minute 2, on the survivor"),
		fakeopenai.Text("minute 3"),
		fakeopenai.Text("minute 4"),
	)
	public, token := jwtKeys(t)
	config := schedulerConfigFile(t, freshDatabase(t), fake.URL, public, "queue: {lock_grace_seconds: 5}")
	replicas := map[string]*process{
		"replica-a": startReplica(t, binary, config, "replica-a"),
		"replica-b": startReplica(t, binary, config, "replica-b"),
	}
	s := &scheduledOS{url: replicas["replica-a"].url, token: token}
	code, created := s.do(t, http.MethodPost, "/schedules", "alice", scheduleScopes, map[string]any{
		"name": "each minute", "cron_expr": "* * * * *", "endpoint": "/agents/a/runs", "payload": map[string]any{"message": "tick"},
	})
	require.Equal(t, http.StatusCreated, code, "%v", created)
	id := created["id"].(string)
	firstMinute := int64(created["next_run_at"].(float64))

	// The second minute's run is in flight: kill the replica executing it.
	var runs []map[string]any
	require.True(t, poll(150*time.Second, 100*time.Millisecond, func() bool {
		runs = s.scheduleRuns(t, id, "alice")
		return len(fake.Requests()) >= 2 && len(runs) == 2 && runs[0]["run_id"] != nil
	}), "the second minute fired and its run is in flight: %v", runs)
	inFlight := runs[0]["run_id"].(string)
	code, job := s.do(t, http.MethodGet, "/queue/jobs/"+inFlight, "ops", []string{"agent_os:admin"}, nil)
	require.Equal(t, http.StatusOK, code, "%v", job)
	executor := job["executor_id"].(string)
	require.Contains(t, replicas, executor)
	replicas[executor].kill(t)
	delete(replicas, executor)
	var survivor *process
	for _, p := range replicas {
		survivor = p
	}
	s.url = survivor.url

	require.True(t, poll(150*time.Second, 250*time.Millisecond, func() bool {
		runs = s.scheduleRuns(t, id, "alice")
		if len(runs) < 3 {
			return false
		}
		for _, r := range runs[len(runs)-3:] {
			if r["status"] == "running" {
				return false
			}
		}
		return true
	}), "three minutes fired and ended: %v\n%s", runs, survivor.log)
	oldestFirst := runs
	for i, j := 0, len(oldestFirst)-1; i < j; i, j = i+1, j-1 {
		oldestFirst[i], oldestFirst[j] = oldestFirst[j], oldestFirst[i]
	}
	seenRuns := map[string]bool{}
	for i, r := range oldestFirst[:3] {
		require.Equal(t, "success", r["status"], "minute %d: %v\n%s", i+1, r, survivor.log)
		require.EqualValues(t, 1, r["attempt"], "minute %d fired once, and needed no retry", i+1)
		require.EqualValues(t, firstMinute+int64(60*i), r["triggered_at"], "minute %d fired on its minute", i+1)
		runID := r["run_id"].(string)
		require.False(t, seenRuns[runID], "each minute has its own run")
		seenRuns[runID] = true
		code, ran := s.do(t, http.MethodGet, "/agents/a/runs/"+runID, "alice", scheduleScopes, nil)
		require.Equal(t, http.StatusOK, code, "%v", ran)
		require.Equal(t, "COMPLETED", ran["status"])
		require.Equal(t, "alice", ran["user_id"])
	}
	require.Equal(t, inFlight, oldestFirst[1]["run_id"], "the killed replica's run is the one its attempt recorded")
	require.Contains(t, fmt.Sprint(oldestFirst[1]["output"]), "minute 2, on the survivor")
	for _, r := range oldestFirst[3:] {
		require.Greater(t, r["triggered_at"], oldestFirst[2]["triggered_at"], "no minute fired twice: %v", oldestFirst)
	}
	// Each fire's run has its own session: one session per fire means no
	// takeover started a second run.
	code, page := s.do(t, http.MethodGet, "/sessions?type=agent&component_id=a&limit=100", "alice", []string{"sessions:read"}, nil)
	require.Equal(t, http.StatusOK, code, "%v", page)
	require.EqualValues(t, len(oldestFirst), page["meta"].(map[string]any)["total_count"], "one run per fire, none started twice by a takeover")
}

// TestSchedulesCommand: `agnogo schedules` creates and lists a schedule in
// the database directly, and its trigger is picked up by a server whose
// scheduler is on; --wait prints the attempt's end, and runs lists it.
func TestSchedulesCommand(t *testing.T) {
	t.Parallel()
	db, _ := tempDB(t)
	fake := fakeopenai.New(t)
	fake.Enqueue(fakeopenai.Text("triggered from the command line"))

	// The server makes the database; the commands read and write it.
	config := filepath.Join(t.TempDir(), "agnogo.yaml")
	require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`db: %s
scheduler: {enabled: true, poll_interval_seconds: 1}
models:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - {id: a, model: fake}
`, db, fake.URL)), 0o600))
	startServe(t, "--config", config)
	r := agnogo(t, "schedules", "create", "--db", db, "--name", "weekday report", "--cron", "0 9 * * 1-5",
		"--timezone", "Europe/Paris", "--agent", "a", "--message", "report", "--user", "ana")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "created schedule")
	r = agnogo(t, "schedules", "create", "--db", db, "--name", "bad", "--cron", "0 9 * *", "--agent", "a", "--message", "x")
	require.NotEqual(t, 0, r.code)
	require.Contains(t, r.stderr, "Invalid cron expression: 0 9 * *")
	r = agnogo(t, "schedules", "list", "--db", db, "--user", "ana", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var listed struct {
		Data []struct {
			ID, Name, Endpoint, UserID string
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &listed), r.stdout)
	require.Len(t, listed.Data, 1)
	require.Equal(t, "weekday report", listed.Data[0].Name)
	require.Equal(t, "/agents/a/runs", listed.Data[0].Endpoint)
	id := listed.Data[0].ID
	r = agnogo(t, "schedules", "list", "--db", db, "--user", "bob")
	require.Equal(t, 0, r.code, r.stderr)
	require.NotContains(t, r.stdout, id, "bob's list has none of ana's")

	r = agnogo(t, "schedules", "trigger", id, "--db", db, "--user", "ana", "--wait=60s")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "success")
	r = agnogo(t, "schedules", "runs", id, "--db", db, "--user", "ana", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	require.Contains(t, r.stdout, "triggered from the command line")
}
