package agentos_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/storage/sqlite"
	"github.com/agnogo/agnogo/workflow"
)

// echoAgent answers "<prefix>(<its input>)" and counts its model calls.
func echoAgent(t *testing.T, store storage.Store, id, prefix string) (*agent.Agent, *atomic.Int64) {
	t.Helper()
	calls := new(atomic.Int64)
	m := scripted.New([]scripted.Reply{scripted.Respond(func(req *model.Request) scripted.Reply {
		calls.Add(1)
		return scripted.Reply{Content: fmt.Sprintf("%s(%v)", prefix, req.Messages[len(req.Messages)-1].Content)}
	})}, scripted.Loop())
	a, err := agent.New(agent.Config{ID: id, Name: id, Model: m, Store: store})
	require.NoError(t, err)
	return a, calls
}

// ownFrames are the workflow's own frames: every frame but its agents'.
func ownFrames(frames []frame) []frame {
	var out []frame
	for _, f := range frames {
		if _, agentEvent := f.data["agent_id"]; !agentEvent {
			out = append(out, f)
		}
	}
	return out
}

// pipeline is a workflow of every step type: draft, a CEL condition, a
// parallel fan-out, a loop until a CEL condition, and a confirmation.
func pipeline(t *testing.T, store storage.Store) (*workflow.Workflow, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	writer, writes := echoAgent(t, store, "writer", "w")
	checker, checks := echoAgent(t, store, "checker", "c")
	wf, err := workflow.New("pipeline", workflow.WithStore(store), workflow.WithDescription("Drafts and checks."),
		workflow.Step("draft", writer),
		workflow.Condition("check", workflow.CEL(`previous_step_content.contains("ok")`), workflow.Step("polish", checker)).
			Else(workflow.Step("redo", writer)),
		workflow.Parallel("fan", workflow.Step("a", writer), workflow.Step("b", checker)),
		workflow.Loop("refine", 3, workflow.CEL(`iteration >= 2`), workflow.Step("again", writer)),
		workflow.Step("publish", checker).Review(workflow.HumanReview{RequiresConfirmation: true, ConfirmationMessage: "Publish?", OnReject: workflow.OnRejectCancel}),
	)
	require.NoError(t, err)
	return wf, writes, checks
}

// TestWorkflowOverHTTP: a workflow of every step type is listed with its
// step dicts, runs over SSE with its events in order, pauses for a
// confirmation that /continue resolves, and its run and session are read
// back; rejected, it is cancelled as its on_reject says.
func TestWorkflowOverHTTP(t *testing.T) {
	onBackends(t, func(t *testing.T, store storage.Store) {
		wf, writes, checks := pipeline(t, store)
		s := serveRunners(t, store, wf)

		list := decode[[]map[string]any](t, s.get(t, "/workflows"))
		require.Len(t, list, 1)
		require.Equal(t, "pipeline", list[0]["id"])
		require.Equal(t, "Drafts and checks.", list[0]["description"])
		steps := list[0]["steps"].([]any)
		require.Len(t, steps, 5)
		require.Equal(t, "Step", steps[0].(map[string]any)["type"])
		require.Equal(t, "writer", steps[0].(map[string]any)["agent_id"])
		require.Equal(t, "Condition", steps[1].(map[string]any)["type"])
		require.Equal(t, true, steps[4].(map[string]any)["human_review"].(map[string]any)["requires_confirmation"])
		info := decode[map[string]any](t, s.get(t, "/info"))
		require.EqualValues(t, 1, info["workflow_count"])
		config := decode[map[string]any](t, s.get(t, "/config"))
		require.Len(t, config["workflows"], 1)
		require.Equal(t, http.StatusNotFound, s.get(t, "/workflows/nope").StatusCode)
		require.Equal(t, http.StatusNotFound, s.get(t, "/agents/pipeline").StatusCode, "a workflow is only under /workflows")

		resp := s.postForm(t, "/workflows/pipeline/runs", url.Values{"message": {"topic"}, "session_id": {"s1"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		frames := readFrames(t, resp.Body)
		own := frameNames(ownFrames(frames))
		// The Parallel's branches interleave; the rest is in order.
		require.Equal(t, []string{"WorkflowStarted", "StepStarted", "StepCompleted",
			"ConditionExecutionStarted", "StepStarted", "StepCompleted", "ConditionExecutionCompleted", "ParallelExecutionStarted"}, own[:8])
		require.Equal(t, []string{"ParallelExecutionCompleted", "LoopExecutionStarted",
			"LoopIterationStarted", "StepStarted", "StepCompleted", "LoopIterationCompleted",
			"LoopIterationStarted", "StepStarted", "StepCompleted", "LoopIterationCompleted",
			"LoopExecutionCompleted", "StepPaused", "WorkflowPaused"}, own[12:])
		var agentFrames int
		for _, f := range frames {
			if _, ok := f.data["agent_id"]; ok {
				agentFrames++
				require.Equal(t, "pipeline", f.data["workflow_id"], f.raw)
				require.NotEmpty(t, f.data["step_name"], f.raw)
			}
		}
		require.Positive(t, agentFrames, "the agents' events are in the stream")
		pausedFrame := frames[len(frames)-1].data
		runID := pausedFrame["run_id"].(string)
		require.Equal(t, "PAUSED", pausedFrame["status"])
		require.Equal(t, "publish", pausedFrame["paused_step_name"])
		reqs := pausedFrame["step_requirements"].([]any)
		require.Len(t, reqs, 1)
		require.Equal(t, "Publish?", reqs[0].(map[string]any)["confirmation_message"])
		require.EqualValues(t, 1, checks.Load(), "the checker ran for b only: check took its else branch, and publish waits")

		stored := decode[map[string]any](t, s.get(t, "/workflows/pipeline/runs/"+runID))
		require.Equal(t, "PAUSED", stored["status"])
		require.Len(t, stored["step_results"], 4)

		// An unresolved requirement is refused with what to send.
		requireRefused(t, s.postForm(t, "/workflows/pipeline/runs/"+runID+"/continue",
			url.Values{"step_requirements": {"[]"}, "session_id": {"s1"}}), http.StatusBadRequest, "confirmed")

		req := reqs[0].(map[string]any)
		req["confirmed"] = true
		answer, err := json.Marshal([]any{req})
		require.NoError(t, err)
		resp = s.postForm(t, "/workflows/pipeline/runs/"+runID+"/continue", url.Values{"step_requirements": {string(answer)}, "session_id": {"s1"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		cont := readFrames(t, resp.Body)
		require.Equal(t, []string{"WorkflowStarted", "StepContinued", "StepStarted", "StepCompleted", "WorkflowCompleted"}, frameNames(ownFrames(cont)))
		done := cont[len(cont)-1].data
		require.Equal(t, runID, done["run_id"])
		require.Len(t, done["step_results"], 5)
		require.Len(t, done["step_executor_runs"], 7, "draft, redo, a, b, again twice, publish")
		require.EqualValues(t, 5, writes.Load())
		require.EqualValues(t, 2, checks.Load())

		stored = decode[map[string]any](t, s.get(t, "/workflows/pipeline/runs/"+runID))
		require.Equal(t, "COMPLETED", stored["status"])
		require.Equal(t, done["content"], stored["content"])
		runs := decode[[]map[string]any](t, s.get(t, "/workflows/pipeline/runs?session_id=s1"))
		require.Len(t, runs, 1, "the agents' runs are not the workflow's")
		sessions := decode[map[string]any](t, s.get(t, "/sessions?type=workflow"))
		require.Len(t, sessions["data"], 1)
		require.Equal(t, "s1", sessions["data"].([]any)[0].(map[string]any)["session_id"])

		// Rejected, the run is cancelled (on_reject: cancel).
		resp = s.postForm(t, "/workflows/pipeline/runs", url.Values{"message": {"topic"}, "session_id": {"s2"}, "stream": {"false"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		second := decode[map[string]any](t, resp)
		require.Equal(t, "PAUSED", second["status"])
		req = second["step_requirements"].([]any)[0].(map[string]any)
		req["confirmed"] = false
		answer, err = json.Marshal([]any{req})
		require.NoError(t, err)
		resp = s.postForm(t, "/workflows/pipeline/runs/"+second["run_id"].(string)+"/continue",
			url.Values{"step_requirements": {string(answer)}, "session_id": {"s2"}, "stream": {"false"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		require.Equal(t, "CANCELLED", decode[map[string]any](t, resp)["status"])
		requireRefused(t, s.postForm(t, "/workflows/pipeline/runs/"+second["run_id"].(string)+"/continue",
			url.Values{"step_requirements": {string(answer)}, "session_id": {"s2"}}), http.StatusConflict, "PAUSED")
	})
}

// TestWorkflowInputAndReviewOverHTTP: user input a person gives reaches
// the step, and an output review's rejection runs the step again with the
// reviewer's feedback.
func TestWorkflowInputAndReviewOverHTTP(t *testing.T) {
	onBackends(t, func(t *testing.T, store storage.Store) {
		writer, writes := echoAgent(t, store, "writer", "w")
		wf, err := workflow.New("ask", workflow.WithStore(store),
			workflow.Step("write", writer).Review(workflow.HumanReview{RequiresUserInput: true, UserInputMessage: "Tone?",
				UserInputSchema: []run.UserInputField{{Name: "tone", FieldType: "str"}}}),
			workflow.Step("rewrite", writer).Review(workflow.HumanReview{RequiresOutputReview: true, OnReject: workflow.OnRejectRetry}),
		)
		require.NoError(t, err)
		s := serveRunners(t, store, wf)

		continueWith := func(runID string, edit func(map[string]any)) map[string]any {
			t.Helper()
			stored := decode[map[string]any](t, s.get(t, "/workflows/ask/runs/"+runID))
			req := stored["step_requirements"].([]any)[0].(map[string]any)
			edit(req)
			answer, err := json.Marshal([]any{req})
			require.NoError(t, err)
			resp := s.postForm(t, "/workflows/ask/runs/"+runID+"/continue", url.Values{"step_requirements": {string(answer)}, "stream": {"false"}})
			require.Equal(t, http.StatusOK, resp.StatusCode)
			return decode[map[string]any](t, resp)
		}
		resp := s.postForm(t, "/workflows/ask/runs", url.Values{"message": {"topic"}, "stream": {"false"}})
		first := decode[map[string]any](t, resp)
		runID := first["run_id"].(string)
		require.Equal(t, true, first["step_requirements"].([]any)[0].(map[string]any)["requires_user_input"])

		// A value of the wrong type is refused.
		stored := decode[map[string]any](t, s.get(t, "/workflows/ask/runs/"+runID))
		bad := stored["step_requirements"].([]any)[0].(map[string]any)
		bad["user_input"] = map[string]any{"tone": 3}
		answer, err := json.Marshal([]any{bad})
		require.NoError(t, err)
		requireRefused(t, s.postForm(t, "/workflows/ask/runs/"+runID+"/continue", url.Values{"step_requirements": {string(answer)}}),
			http.StatusBadRequest, "tone")

		review := continueWith(runID, func(r map[string]any) { r["user_input"] = map[string]any{"tone": "dry"} })
		require.Equal(t, "PAUSED", review["status"])
		req := review["step_requirements"].([]any)[0].(map[string]any)
		require.Equal(t, true, req["requires_output_review"])
		require.Equal(t, `w(w(topic

User input: {"tone":"dry"}))`, req["step_output"].(map[string]any)["content"])

		again := continueWith(runID, func(r map[string]any) { r["confirmed"], r["rejection_feedback"] = false, "shorter" })
		require.Equal(t, "PAUSED", again["status"])
		require.Contains(t, again["step_requirements"].([]any)[0].(map[string]any)["step_output"].(map[string]any)["content"], "shorter")
		require.EqualValues(t, 3, writes.Load())

		done := continueWith(runID, func(r map[string]any) { r["confirmed"] = true })
		require.Equal(t, "COMPLETED", done["status"])
		require.Contains(t, done["content"], "shorter")
		require.EqualValues(t, 3, writes.Load(), "approving runs nothing again")
	})
}

// TestWorkflowPausedSurvivesARestart: a workflow paused for review is
// continued by a server started afresh on the same database.
func TestWorkflowPausedSurvivesARestart(t *testing.T) {
	onBackends(t, func(t *testing.T, store storage.Store) {
		wf, _, _ := pipeline(t, store)
		first := serveRunners(t, store, wf)
		paused := decode[map[string]any](t, first.postForm(t, "/workflows/pipeline/runs", url.Values{"message": {"topic"}, "stream": {"false"}}))
		require.Equal(t, "PAUSED", paused["status"])
		first.Close()

		again, writes, _ := pipeline(t, store)
		second := serveRunners(t, store, again)
		req := paused["step_requirements"].([]any)[0].(map[string]any)
		req["confirmed"] = true
		answer, err := json.Marshal([]any{req})
		require.NoError(t, err)
		resp := second.postForm(t, "/workflows/pipeline/runs/"+paused["run_id"].(string)+"/continue",
			url.Values{"step_requirements": {string(answer)}, "stream": {"false"}})
		require.Equal(t, http.StatusOK, resp.StatusCode)
		done := decode[map[string]any](t, resp)
		require.Equal(t, "COMPLETED", done["status"])
		require.Len(t, done["step_results"], 5)
		require.EqualValues(t, 0, writes.Load(), "the steps done before the pause are not run again")
	})
}

// TestWorkflowCancelStopsEveryBranch: cancelling a run mid-Parallel
// cancels every branch's run.
func TestWorkflowCancelStopsEveryBranch(t *testing.T) {
	onBackends(t, func(t *testing.T, store storage.Store) {
		started := make(chan string, 3)
		hold := func(id string) *agent.Agent {
			a, err := agent.New(agent.Config{ID: id, Store: store, Model: holdModel{started: started, id: id}})
			require.NoError(t, err)
			return a
		}
		wf, err := workflow.New("fan", workflow.WithStore(store),
			workflow.Parallel("fan", workflow.Step("a", hold("a")), workflow.Step("b", hold("b")), workflow.Step("c", hold("c"))))
		require.NoError(t, err)
		s := serveRunners(t, store, wf)
		resp := s.postForm(t, "/workflows/fan/runs", url.Values{"message": {"go"}, "session_id": {"s1"}, "background": {"true"}, "stream": {"false"}})
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		runID := decode[map[string]any](t, resp)["run_id"].(string)
		for range 3 {
			<-started
		}
		require.Equal(t, http.StatusOK, s.postForm(t, "/workflows/fan/runs/"+runID+"/cancel", url.Values{}).StatusCode)
		poll(t, 30*time.Second, 10*time.Millisecond, func() bool {
			runs := storedRuns(t, store, "s1")
			if len(runs) != 4 {
				return false
			}
			for _, r := range runs {
				if r.Status != run.StatusCancelled {
					return false
				}
			}
			return true
		}, "every branch's run and the workflow's end CANCELLED")
	})
}

// holdModel answers only when its request is cancelled, after saying it
// started.
type holdModel struct {
	started chan<- string
	id      string
}

func (m holdModel) Info() model.Info { return model.Info{ID: "hold", Provider: "test"} }

func (m holdModel) Invoke(ctx context.Context, _ *model.Request) (*model.Response, error) {
	m.started <- m.id
	<-ctx.Done()
	return nil, ctx.Err()
}

func (m holdModel) Stream(ctx context.Context, req *model.Request) iter.Seq2[*model.Chunk, error] {
	return func(yield func(*model.Chunk, error) bool) {
		_, err := m.Invoke(ctx, req)
		yield(nil, err)
	}
}

// workflowReplica is one server with its own durable queue on the SQLite
// database at path, serving the runners build makes on its store.
func workflowReplica(t *testing.T, path, executor string, build func(store storage.Store) []run.Runner) (*server, *durable.Queue) {
	t.Helper()
	store, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	require.NoError(t, err)
	t.Cleanup(func() { store.Close() })
	runners := build(store)
	events := agentos.NewEventLog()
	q, err := durable.New(t.Context(), durable.Config{DatabaseURL: "sqlite:file:" + path, Store: store, Runners: runners, Events: events,
		ExecutorID: executor, PollInterval: 10 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	require.NoError(t, err)
	require.NoError(t, q.Launch())
	t.Cleanup(func() { _ = q.Shutdown(time.Second) })
	os, err := agentos.New(agentos.Config{Store: store, Runners: runners, Queue: q, Events: events})
	require.NoError(t, err)
	ts := httptest.NewServer(os)
	t.Cleanup(ts.Close)
	return &server{Server: ts, store: store, os: os}, q
}

// TestDurableWorkflowPausedAcrossARestart: a background workflow on the
// durable queue pauses for a confirmation, holding no worker; every server
// stops; a server started afresh continues it (background=true) to its
// end without running the steps done before the pause again.
func TestDurableWorkflowPausedAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "os.db")
	var writes *atomic.Int64
	build := func(store storage.Store) []run.Runner {
		wf, w, _ := pipeline(t, store)
		writes = w
		return []run.Runner{wf}
	}
	first, q := workflowReplica(t, path, "a", build)
	resp := first.postForm(t, "/workflows/pipeline/runs", url.Values{"message": {"topic"}, "session_id": {"s1"}, "background": {"true"}, "stream": {"false"}})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	runID := decode[map[string]any](t, resp)["run_id"].(string)
	var paused map[string]any
	poll(t, 30*time.Second, 10*time.Millisecond, func() bool {
		paused = decode[map[string]any](t, first.get(t, "/workflows/pipeline/runs/"+runID))
		return paused["status"] == "PAUSED"
	}, "the workflow pauses at publish")
	require.EqualValues(t, 5, writes.Load())
	first.Close()
	require.NoError(t, q.Shutdown(5*time.Second))

	second, _ := workflowReplica(t, path, "b", build)
	// The new server's queue takes the stopped server's workflow over and
	// parks it again.
	poll(t, 60*time.Second, 20*time.Millisecond, func() bool {
		resp := second.get(t, "/queue/jobs/"+runID)
		job := decode[map[string]any](t, resp)
		return job["status"] == "paused" && job["executor_id"] == "b"
	}, "replica b parks the workflow")
	req := paused["step_requirements"].([]any)[0].(map[string]any)
	req["confirmed"] = true
	answer, err := json.Marshal([]any{req})
	require.NoError(t, err)
	inline := second.postForm(t, "/workflows/pipeline/runs/"+runID+"/continue", url.Values{"step_requirements": {string(answer)}, "stream": {"false"}})
	require.Equal(t, http.StatusConflict, inline.StatusCode, "a run parked on the queue continues on the queue")
	resp = second.postForm(t, "/workflows/pipeline/runs/"+runID+"/continue",
		url.Values{"step_requirements": {string(answer)}, "stream": {"false"}, "background": {"true"}})
	require.Equal(t, http.StatusAccepted, resp.StatusCode, readAll(t, resp))
	var done map[string]any
	poll(t, 30*time.Second, 10*time.Millisecond, func() bool {
		done = decode[map[string]any](t, second.get(t, "/workflows/pipeline/runs/"+runID))
		return done["status"] == "COMPLETED"
	}, "the continued workflow completes")
	require.Len(t, done["step_results"], 5)
	require.EqualValues(t, 0, writes.Load(), "no step done before the pause ran again")
}
