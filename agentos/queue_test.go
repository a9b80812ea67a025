package agentos_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// refused is a model failure that is never retried: the run fails at once.
var refused = &model.Error{Provider: "Scripted", StatusCode: 400, Class: model.ClassBadRequest, Message: "the request was refused"}

// jobsPage is the paginated envelope of GET /queue/jobs.
type jobsPage struct {
	Data []map[string]any `json:"data"`
	Meta struct {
		Page       int `json:"page"`
		Limit      int `json:"limit"`
		TotalPages int `json:"total_pages"`
		TotalCount int `json:"total_count"`
	} `json:"meta"`
}

func (p jobsPage) ids() []string {
	ids := make([]string, len(p.Data))
	for i, j := range p.Data {
		ids[i] = j["id"].(string)
	}
	return ids
}

// pollJob reads GET /queue/jobs/{id} until the job has status.
func pollJob(t *testing.T, s *server, id, status string) map[string]any {
	t.Helper()
	var job map[string]any
	require.Eventually(t, func() bool {
		resp := s.get(t, "/queue/jobs/"+id)
		if resp.StatusCode != http.StatusOK {
			return false
		}
		job = decode[map[string]any](t, resp)
		return job["status"] == status
	}, 20*time.Second, 20*time.Millisecond, "job %s never became %s (last %v)", id, status, job)
	return job
}

// TestQueueJobsOverHTTP: a completed and a failed background run, listed,
// filtered, paged, read and counted; the failed one is requeued and
// completes.
func TestQueueJobsOverHTTP(t *testing.T) {
	s := newDurableServer(t, []scripted.Reply{scripted.Text("first answer"), scripted.Fail(refused), scripted.Text("second answer")}, nil, nil)
	resp := s.postBackground(t, url.Values{"message": {"one"}, "stream": {"false"}, "session_id": {"s1"}}, "key-1")
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	done := decode[map[string]any](t, resp)["run_id"].(string)
	require.Equal(t, "COMPLETED", pollRun(t, s, done, "s1")["status"])
	resp = s.postBackground(t, url.Values{"message": {"two"}, "stream": {"false"}, "session_id": {"s1"}}, "")
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	failed := decode[map[string]any](t, resp)["run_id"].(string)
	require.Equal(t, "ERROR", pollRun(t, s, failed, "s1")["status"])

	job := pollJob(t, s, done, "completed")
	require.Equal(t, "COMPLETED", job["run_status"])
	require.Equal(t, "assistant", job["agent_id"])
	require.Equal(t, "s1", job["session_id"])
	require.Equal(t, "key-1", job["idempotency_key"])
	require.EqualValues(t, 1, job["attempts"])
	require.NotContains(t, job, "error")
	job = pollJob(t, s, failed, "failed")
	require.Equal(t, "ERROR", job["run_status"])
	require.Contains(t, job["error"], "the request was refused")

	// The list: newest first by default, in the paginated envelope.
	resp = s.get(t, "/queue/jobs")
	require.Equal(t, http.StatusOK, resp.StatusCode)
	page := decode[jobsPage](t, resp)
	require.Equal(t, []string{failed, done}, page.ids())
	require.Equal(t, 2, page.Meta.TotalCount)
	require.Equal(t, 20, page.Meta.Limit)

	page = decode[jobsPage](t, s.get(t, "/queue/jobs?status=failed"))
	require.Equal(t, []string{failed}, page.ids())
	require.Equal(t, 1, page.Meta.TotalCount)
	page = decode[jobsPage](t, s.get(t, "/queue/jobs?status=failed&status=completed&limit=1&page=2&sort_order=asc"))
	require.Equal(t, []string{failed}, page.ids())
	require.Equal(t, 2, page.Meta.TotalCount)
	require.Equal(t, 2, page.Meta.TotalPages)
	require.Equal(t, 2, page.Meta.Page)
	page = decode[jobsPage](t, s.get(t, "/queue/jobs?status=queued,running"))
	require.Empty(t, page.Data)

	stats := decode[map[string]any](t, s.get(t, "/queue/stats"))
	require.Equal(t, map[string]any{"queued": 0.0, "running": 0.0, "paused": 0.0, "completed": 1.0, "failed": 1.0, "cancelled": 0.0}, stats["counts"])
	require.Contains(t, stats, "oldest_queued_age_seconds")
	require.Nil(t, stats["oldest_queued_age_seconds"])

	// Requeue: not a completed job; not within the grace unless forced.
	resp = s.postForm(t, "/queue/jobs/"+done+"/requeue", nil)
	require.Equal(t, http.StatusBadRequest, resp.StatusCode)
	require.Contains(t, detail(t, resp), "only failed or cancelled jobs are requeued")
	resp = s.postForm(t, "/queue/jobs/"+failed+"/requeue", nil)
	require.Equal(t, http.StatusConflict, resp.StatusCode)
	wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, wait)
	require.LessOrEqual(t, wait, 60)
	require.Contains(t, detail(t, resp), "force")
	resp = s.postForm(t, "/queue/jobs/"+failed+"/requeue?force=maybe", nil)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode)

	resp = s.postForm(t, "/queue/jobs/"+failed+"/requeue?force=true&clear_cancellation=true", nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	requeued := decode[map[string]any](t, resp)
	require.Equal(t, failed, requeued["id"])
	require.Contains(t, []any{"queued", "running", "completed"}, requeued["status"])
	out := pollRun(t, s, failed, "s1")
	require.Equal(t, "COMPLETED", out["status"])
	require.Equal(t, "second answer", out["content"])
	job = pollJob(t, s, failed, "completed")
	require.EqualValues(t, 2, job["attempts"])
	require.Len(t, s.model.Requests(), 3, "the failed model call is made once more")

	resp = s.postForm(t, "/queue/jobs/no-such-run/requeue?force=true", nil)
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "Job no-such-run not found", detail(t, resp))
	resp = s.get(t, "/queue/jobs/no-such-run")
	require.Equal(t, http.StatusNotFound, resp.StatusCode)
	require.Equal(t, "Job no-such-run not found", detail(t, resp))
}

// TestQueueJobsValidation: bad query parameters are 422s naming them.
func TestQueueJobsValidation(t *testing.T) {
	s := newDurableServer(t, nil, nil, nil)
	for query, loc := range map[string][]any{
		"status=stuck":          {"query", "status", "0"},
		"status=failed,stuck":   {"query", "status", "1"},
		"limit=0":               {"query", "limit"},
		"limit=1001":            {"query", "limit"},
		"limit=ten":             {"query", "limit"},
		"page=-1":               {"query", "page"},
		"sort_order=sideways":   {"query", "sort_order"},
		"sort_by=session_id":    {"query", "sort_by"},
		"status=queued&limit=0": {"query", "limit"},
	} {
		resp := s.get(t, "/queue/jobs?"+query)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, query)
		issues := decode[map[string][]map[string]any](t, resp)["detail"]
		require.Len(t, issues, 1, query)
		require.Equal(t, loc, issues[0]["loc"], query)
		if loc[1] == "status" {
			require.Contains(t, issues[0]["msg"], `"stuck"`, "the bad value is named")
			require.Contains(t, issues[0]["msg"], "'failed'")
		}
	}
	require.Equal(t, http.StatusOK, s.get(t, "/queue/jobs?limit=1000&status=FAILED").StatusCode)
}

// TestQueueRoutesWithoutQueue: without a durable queue every queue route
// answers 503 and says how to turn it on.
func TestQueueRoutesWithoutQueue(t *testing.T) {
	s := newServer(t, nil, nil)
	for _, call := range []struct{ method, path string }{
		{http.MethodGet, "/queue/jobs"}, {http.MethodGet, "/queue/jobs/some-run"},
		{http.MethodPost, "/queue/jobs/some-run/requeue"}, {http.MethodGet, "/queue/stats"},
	} {
		resp := authCall(t, s.URL, call.method, call.path, "", nil)
		require.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, call.path)
		require.Equal(t, "the durable queue is not enabled; set queue.durable: true", detail(t, resp))
	}
}

// newQueueServer is a server with a durable queue and the given auth.
func newQueueServer(t *testing.T, auth agentos.AuthConfig) *server {
	t.Helper()
	path := filepath.Join(t.TempDir(), "os.db")
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	m := scripted.New(nil)
	a, err := agent.New(agent.Config{ID: "assistant", Name: "Assistant", Model: m, Store: store})
	require.NoError(t, err)
	events := agentos.NewEventLog()
	q, err := durable.New(t.Context(), durable.Config{DatabaseURL: "sqlite:file:" + path, Store: store, Runners: []run.Runner{a},
		Events: events, ExecutorID: "test", PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	require.NoError(t, q.Launch())
	t.Cleanup(func() { _ = q.Shutdown(time.Second) })
	os, err := agentos.New(agentos.Config{Store: store, Runners: []run.Runner{a}, Queue: q, Events: events, Auth: auth})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	return &server{Server: ts, model: m, store: store, os: os}
}

// TestQueueRoutesAdminOnly: under JWT, a caller without the admin scope
// gets 403 on every queue route, whatever other scopes it holds; an admin
// gets through.
func TestQueueRoutesAdminOnly(t *testing.T) {
	s := newQueueServer(t, agentos.AuthConfig{JWT: rsaJWT(t)})
	calls := []struct{ method, path string }{
		{http.MethodGet, "/queue/jobs"}, {http.MethodGet, "/queue/jobs/some-run"},
		{http.MethodPost, "/queue/jobs/some-run/requeue"}, {http.MethodGet, "/queue/stats"},
	}
	user := rs256(t, "ada", "agents:run", "agents:read", "sessions:read", "config:read", "config:write", "queue:read")
	for _, call := range calls {
		resp := authCall(t, s.URL, call.method, call.path, user, nil)
		require.Equal(t, http.StatusForbidden, resp.StatusCode, call.path)
		require.Contains(t, detail(t, resp), "agent_os:admin")
		require.Equal(t, http.StatusUnauthorized, authCall(t, s.URL, call.method, call.path, "", nil).StatusCode, call.path)
	}
	admin := rs256(t, "root", "agent_os:admin")
	resp := authCall(t, s.URL, http.MethodGet, "/queue/jobs", admin, nil)
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Empty(t, decode[jobsPage](t, resp).Data)
	require.Equal(t, http.StatusOK, authCall(t, s.URL, http.MethodGet, "/queue/stats", admin, nil).StatusCode)
	require.Equal(t, http.StatusNotFound, authCall(t, s.URL, http.MethodGet, "/queue/jobs/some-run", admin, nil).StatusCode)
}
