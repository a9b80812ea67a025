package agentos_test

import (
	"bytes"
	"context"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/tool"
)

// upload is one file part of a multipart run request.
type upload struct {
	name, contentType string
	content           []byte
}

// postMultipart sends fields and files (under "files") as multipart/form-data.
func (s *server) postMultipart(t *testing.T, path string, fields url.Values, files ...upload) *http.Response {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	for k, vs := range fields {
		for _, v := range vs {
			require.NoError(t, mw.WriteField(k, v))
		}
	}
	for _, f := range files {
		h := textproto.MIMEHeader{}
		h.Set("Content-Disposition", `form-data; name="files"; filename="`+f.name+`"`)
		if f.contentType != "" {
			h.Set("Content-Type", f.contentType)
		}
		part, err := mw.CreatePart(h)
		require.NoError(t, err)
		_, err = part.Write(f.content)
		require.NoError(t, err)
	}
	require.NoError(t, mw.Close())
	resp, err := http.Post(s.URL+path, mw.FormDataContentType(), &body)
	require.NoError(t, err)
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// TestRunWithUploadedFiles: uploads reach the model on the user message,
// classified by content type or, for octet-stream, by extension; an
// unsupported or empty file is refused with 400 before the model is called.
func TestRunWithUploadedFiles(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("seen")}, nil)
	png := []byte("\x89PNG\r\n\x1a\nfake")
	resp := s.postMultipart(t, "/agents/assistant/runs", url.Values{"message": {"look"}, "stream": {"false"}},
		upload{"photo.png", "image/png", png},
		upload{"notes.md", "application/octet-stream", []byte("# Notes")},
		upload{"talk.mp3", "audio/mpeg", []byte("ID3")},
	)
	require.Equal(t, http.StatusOK, resp.StatusCode, readAll(t, resp))
	requests := s.model.Requests()
	require.Len(t, requests, 1)
	var user *run.Message
	for _, msg := range requests[0].Messages {
		if msg.Role == run.RoleUser {
			user = msg
		}
	}
	require.NotNil(t, user)
	require.Len(t, user.Images, 1)
	require.Equal(t, png, user.Images[0].Content)
	require.Equal(t, "image/png", user.Images[0].MimeType)
	require.Len(t, user.Files, 1)
	require.Equal(t, "notes.md", user.Files[0].Filename)
	require.Equal(t, "text/markdown", user.Files[0].MimeType, "octet-stream is classified by extension")
	require.Equal(t, []byte("# Notes"), user.Files[0].Content)
	require.Len(t, user.Audio, 1)
	require.Equal(t, "mp3", user.Audio[0].Format)

	bad := s.postMultipart(t, "/agents/assistant/runs", url.Values{"message": {"look"}, "stream": {"false"}},
		upload{"archive.zip", "application/zip", []byte("PK")})
	require.Equal(t, http.StatusBadRequest, bad.StatusCode)
	require.Contains(t, decode[map[string]any](t, bad)["detail"], "Unsupported file type: archive.zip (application/zip)")

	empty := s.postMultipart(t, "/agents/assistant/runs", url.Values{"message": {"look"}, "stream": {"false"}},
		upload{"blank.txt", "text/plain", nil})
	require.Equal(t, http.StatusBadRequest, empty.StatusCode)
	require.Contains(t, decode[map[string]any](t, empty)["detail"], "Empty file: blank.txt")
	require.Len(t, s.model.Requests(), 1, "refused uploads never reach the model")

	badJSON := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"look"}, "images": {"[{"}})
	require.Equal(t, http.StatusUnprocessableEntity, badJSON.StatusCode)
	require.Contains(t, readAll(t, badJSON), "images")
}

// TestRunWithOutputSchema: a per-run output_schema makes the run's content
// the parsed object, named by the schema's title; a schema that does not
// describe an object is refused with 422 naming the field.
func TestRunWithOutputSchema(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text(`{"city":"Paris","celsius":21}`), scripted.Text("plain again")}, nil)
	schema := `{"title":"Weather","type":"object","properties":{"city":{"type":"string"},"celsius":{"type":"integer"}},"required":["city","celsius"]}`
	out := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{
		"message": {"weather?"}, "stream": {"false"}, "output_schema": {schema}, "session_id": {"s1"}}))
	require.Equal(t, "COMPLETED", out["status"])
	require.Equal(t, "Weather", out["content_type"])
	require.Equal(t, map[string]any{"city": "Paris", "celsius": float64(21)}, out["content"])
	format := s.model.Requests()[0].ResponseFormat
	require.NotNil(t, format, "the schema is sent to the model")
	require.Equal(t, "Weather", format.Name)

	// The next run without a schema answers text again.
	plain := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{
		"message": {"and now?"}, "stream": {"false"}, "session_id": {"s1"}}))
	require.Equal(t, "str", plain["content_type"])
	require.Equal(t, "plain again", plain["content"])

	for _, bad := range []string{`[1]`, `{"type":"array","items":{"type":"string"}}`, `not json`} {
		resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"x"}, "stream": {"false"}, "output_schema": {bad}})
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, bad)
		require.Contains(t, readAll(t, resp), "output_schema", bad)
	}
	require.Len(t, s.model.Requests(), 2, "a refused schema never reaches the model")
}

// TestRunCheckpoints: a run with a tool batch lists a checkpoint after the
// tool result and one at its end; a snapshot at the checkpoint holds the
// messages up to it, and an index between a tool call and its result is
// moved down to a safe cut.
func TestRunCheckpoints(t *testing.T) {
	lookup, err := tool.New(tool.Config{Name: "lookup"}, func(context.Context, struct{}) (string, error) { return "42", nil })
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.ToolCall("lookup", `{}`), scripted.Text("The answer is 42.")},
		func(c *agent.Config, _ *agentos.Config) { c.Tools = []tool.Tool{lookup} })
	out := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"answer?"}, "stream": {"false"}, "session_id": {"s1"}}))
	runID := out["run_id"].(string)
	messages := out["messages"].([]any)
	// user, assistant (tool call), tool result, assistant answer; a system message may lead.
	n := len(messages)
	require.GreaterOrEqual(t, n, 4)

	list := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID+"/checkpoints?session_id=s1"))
	require.Equal(t, runID, list["run_id"])
	entries := list["checkpoints"].([]any)
	require.Len(t, entries, 2)
	first, last := entries[0].(map[string]any), entries[1].(map[string]any)
	require.Equal(t, "checkpoint", first["reason"])
	require.Equal(t, float64(n-1), first["message_index"], "the checkpoint follows the tool result")
	require.Equal(t, "tool", first["message_role"])
	require.Equal(t, "42", first["message_preview"])
	require.Equal(t, false, first["is_latest"])
	require.Equal(t, "end", last["reason"])
	require.Equal(t, float64(n), last["message_index"])
	require.Equal(t, true, last["is_latest"])

	snap := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID+"/checkpoints/"+strconv.Itoa(n-1)+"?session_id=s1"))
	require.Equal(t, "snapshot", snap["checkpoint"].(map[string]any)["reason"])
	snapshot := snap["snapshot"].(map[string]any)
	require.Len(t, snapshot["messages"], n-1)
	require.Len(t, snapshot["tools"], 1)

	// Cutting between the tool call and its result keeps neither.
	cut := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID+"/checkpoints/"+strconv.Itoa(n-2)+"?session_id=s1"))
	require.Len(t, cut["snapshot"].(map[string]any)["messages"], n-3)
	require.Nil(t, cut["snapshot"].(map[string]any)["tools"])

	// The stored run is unchanged.
	again := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID+"?session_id=s1"))
	require.Len(t, again["messages"], n)

	require.Equal(t, http.StatusBadRequest, s.get(t, "/agents/assistant/runs/"+runID+"/checkpoints/"+strconv.Itoa(n+1)+"?session_id=s1").StatusCode)
	require.Equal(t, http.StatusUnprocessableEntity, s.get(t, "/agents/assistant/runs/"+runID+"/checkpoints/abc?session_id=s1").StatusCode)
	require.Equal(t, http.StatusNotFound, s.get(t, "/agents/assistant/runs/"+runID+"/checkpoints?session_id=other").StatusCode)
	require.Equal(t, http.StatusNotFound, s.get(t, "/agents/assistant/runs/nope/checkpoints?session_id=s1").StatusCode)
	require.Equal(t, http.StatusNotFound, s.get(t, "/agents/nobody/runs/"+runID+"/checkpoints?session_id=s1").StatusCode)
}

// pollRun reads a run until it reaches a terminal status.
func pollRun(t *testing.T, s *server, runID, sessionID string) map[string]any {
	t.Helper()
	return pollRunOf(t, s, "assistant", runID, sessionID)
}

// runTimeout bounds the wait for a run to end: generous, since a real CLI
// may start slowly on a busy machine.
const runTimeout = 60 * time.Second

// pollRunOf waits for a run of the given agent to end and returns it.
func pollRunOf(t *testing.T, s *server, agentID, runID, sessionID string) map[string]any {
	t.Helper()
	var out map[string]any
	poll(t, runTimeout, 20*time.Millisecond, func() bool {
		out = decode[map[string]any](t, s.get(t, "/agents/"+agentID+"/runs/"+runID+"?session_id="+sessionID))
		status, _ := run.ParseStatus(out["status"].(string))
		return status.Terminal()
	}, "run %s still not over", runID)
	return out
}

// TestBackgroundRun: background=true answers 202 with a PENDING run, which
// then completes; with stream=true the answer follows the run's events.
func TestBackgroundRun(t *testing.T) {
	s := newServer(t, []scripted.Reply{scripted.Text("done later"), scripted.Text("streamed later")}, nil)
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"later"}, "stream": {"false"}, "background": {"true"}, "session_id": {"bg"}})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	accepted := decode[map[string]any](t, resp)
	require.Equal(t, "PENDING", accepted["status"])
	require.Equal(t, "bg", accepted["session_id"])
	runID := accepted["run_id"].(string)

	out := pollRun(t, s, runID, "bg")
	require.Equal(t, "COMPLETED", out["status"])
	require.Equal(t, "done later", out["content"])

	streamed := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"again"}, "background": {"true"}, "session_id": {"bg"}})
	require.Equal(t, http.StatusOK, streamed.StatusCode)
	frames := readFrames(t, streamed.Body)
	require.Equal(t, "RunStarted", frames[0].event)
	require.Equal(t, "RunCompleted", frames[len(frames)-1].event)
	require.Equal(t, "streamed later", frames[len(frames)-1].data["content"])

	runs := decode[[]map[string]any](t, s.get(t, "/agents/assistant/runs?session_id=bg"))
	require.Len(t, runs, 2)
}

// TestBackgroundRunWaitsForASlotAndCancels: with one slot taken, a second
// background run stays PENDING; cancelling it ends it CANCELLED without
// calling the model, and cancelling the first ends it too.
func TestBackgroundRunWaitsForASlotAndCancels(t *testing.T) {
	started := make(chan struct{}, 1)
	slow, err := tool.New(tool.Config{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.ToolCall("slow", `{}`), scripted.Text("never")},
		func(c *agent.Config, o *agentos.Config) {
			c.Tools = []tool.Tool{slow}
			o.BackgroundMaxConcurrency = 1
		})
	first := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"one"}, "stream": {"false"}, "background": {"true"}, "session_id": {"a"}}))
	<-started
	second := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"two"}, "stream": {"false"}, "background": {"true"}, "session_id": {"b"}}))
	secondID := second["run_id"].(string)
	waiting := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+secondID+"?session_id=b"))
	require.Equal(t, "PENDING", waiting["status"])

	require.Equal(t, http.StatusOK, s.postForm(t, "/agents/assistant/runs/"+secondID+"/cancel", url.Values{"session_id": {"b"}}).StatusCode)
	require.Equal(t, "CANCELLED", pollRun(t, s, secondID, "b")["status"])

	firstID := first["run_id"].(string)
	cancelled := time.Now()
	require.Equal(t, http.StatusOK, s.postForm(t, "/agents/assistant/runs/"+firstID+"/cancel", url.Values{"session_id": {"a"}}).StatusCode)
	require.Equal(t, "CANCELLED", pollRun(t, s, firstID, "a")["status"])
	require.Less(t, time.Since(cancelled), 2*time.Second)
	require.Len(t, s.model.Requests(), 1, "the cancelled waiting run never called the model")
}

// TestBackgroundRunThatCannotStartEndsInError: a background run whose model
// fails is stored as ERROR rather than left PENDING; without a database a
// background run is refused with 400.
func TestBackgroundRunThatCannotStartEndsInError(t *testing.T) {
	s := newServer(t, []scripted.Reply{{Err: context.DeadlineExceeded}}, nil)
	resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"x"}, "stream": {"false"}, "background": {"true"}, "session_id": {"e"}})
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	runID := decode[map[string]any](t, resp)["run_id"].(string)
	require.Equal(t, "ERROR", pollRun(t, s, runID, "e")["status"])

	noStore := newServer(t, nil, func(_ *agent.Config, o *agentos.Config) { o.Store = nil })
	refused := noStore.postForm(t, "/agents/assistant/runs", url.Values{"message": {"x"}, "background": {"true"}})
	require.Equal(t, http.StatusBadRequest, refused.StatusCode)
	require.Contains(t, readAll(t, refused), "background runs need a database")
}

// TestShutdownSettlesBackgroundRuns: Shutdown cancels a running background
// run and one waiting for a slot; both are stored CANCELLED before it
// returns, and no accepted run is left PENDING or RUNNING.
func TestShutdownSettlesBackgroundRuns(t *testing.T) {
	started := make(chan struct{}, 1)
	slow, err := tool.New(tool.Config{Name: "slow"}, func(ctx context.Context, _ struct{}) (string, error) {
		started <- struct{}{}
		<-ctx.Done()
		return "", ctx.Err()
	})
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.ToolCall("slow", `{}`)},
		func(c *agent.Config, o *agentos.Config) {
			c.Tools = []tool.Tool{slow}
			o.BackgroundMaxConcurrency = 1
		})
	for _, session := range []string{"a", "b"} {
		resp := s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"go"}, "stream": {"false"}, "background": {"true"}, "session_id": {session}})
		require.Equal(t, http.StatusAccepted, resp.StatusCode)
		if session == "a" {
			<-started
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	require.NoError(t, s.os.Shutdown(ctx))
	for _, session := range []string{"a", "b"} {
		runs, _, err := s.store.GetRuns(t.Context(), storageQuery(session))
		require.NoError(t, err)
		require.Len(t, runs, 1)
		require.Equal(t, run.StatusCancelled, runs[0].Run.Status, session)
	}
}

// TestRunRowProgresses: a run's row is RUNNING from its start and updated
// after each tool batch, so a reader sees finished tool calls while the run
// is still going.
func TestRunRowProgresses(t *testing.T) {
	first, err := tool.New(tool.Config{Name: "first"}, func(context.Context, struct{}) (string, error) { return "one", nil })
	require.NoError(t, err)
	started, release := make(chan struct{}), make(chan struct{})
	second, err := tool.New(tool.Config{Name: "second"}, func(ctx context.Context, _ struct{}) (string, error) {
		close(started)
		<-release
		return "two", nil
	})
	require.NoError(t, err)
	s := newServer(t, []scripted.Reply{scripted.ToolCall("first", `{}`), scripted.ToolCall("second", `{}`), scripted.Text("done")},
		func(c *agent.Config, _ *agentos.Config) { c.Tools = []tool.Tool{first, second} })
	accepted := decode[map[string]any](t, s.postForm(t, "/agents/assistant/runs", url.Values{"message": {"go"}, "stream": {"false"}, "background": {"true"}, "session_id": {"p"}}))
	runID := accepted["run_id"].(string)
	<-started
	mid := decode[map[string]any](t, s.get(t, "/agents/assistant/runs/"+runID+"?session_id=p"))
	require.Equal(t, "RUNNING", mid["status"])
	tools := mid["tools"].([]any)
	require.Len(t, tools, 1, "the finished batch is stored; the one in flight is not")
	require.Equal(t, "one", tools[0].(map[string]any)["result"])
	close(release)
	require.Equal(t, "COMPLETED", pollRun(t, s, runID, "p")["status"])
}
