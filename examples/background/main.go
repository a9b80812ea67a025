// Command background runs an agent in the background on the durable queue,
// as `agnogo serve` does, and picks up the run's events again after losing
// its stream.
//
// It serves AgentOS with a durable queue on a SQLite database (the queue's
// tables live beside the runs), submits a run with background=true — the
// answer comes at once, and the run survives a crash or a restart of the
// server —, reads the first events of its stream and drops the connection,
// then calls POST /agents/assistant/runs/{run_id}/resume with the last
// event_index it saw to get the rest, reads the finished run, and stops.
//
//	go run ./examples/background                         # a scripted model: no key, no network
//	OPENAI_API_KEY=sk-… go run ./examples/background -model gpt-5-mini
//
// With curl, against any server with the durable queue:
//
//	curl -F message=hi -F background=true -F stream=false http://127.0.0.1:7777/agents/assistant/runs
//	curl -N -F session_id=… -F last_event_index=3 http://127.0.0.1:7777/agents/assistant/runs/RUN_ID/resume
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agnogo/agnogo/agent"
	"github.com/agnogo/agnogo/agentos"
	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/model/openai"
	"github.com/agnogo/agnogo/model/scripted"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage/sqlite"
)

// stopTimeout is how long stopping the queue waits for the runs executing
// here, as queue.stop_timeout_seconds does for `agnogo serve`; those still
// running then are handed back, to resume at the next start.
const stopTimeout = 30 * time.Second

func main() {
	if err := demo(); err != nil {
		fmt.Fprintln(os.Stderr, "background:", err)
		os.Exit(1)
	}
}

func demo() error {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on, HOST:PORT")
	db := flag.String("db", "agnogo.db", "SQLite database file")
	modelName := flag.String("model", "scripted", `"scripted", or an OpenAI model id such as gpt-5-mini`)
	flag.Parse()
	ctx := context.Background()
	// The queue's engine is chatty at Info.
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

	path, err := filepath.Abs(*db)
	if err != nil {
		return err
	}
	store, err := sqlite.Open(ctx, sqlite.Config{Path: path})
	if err != nil {
		return err
	}
	defer store.Close()
	m, err := newModel(*modelName)
	if err != nil {
		return err
	}
	assistant, err := agent.New(agent.Config{ID: "assistant", Model: m, Store: store, Instructions: "You are a helpful assistant."})
	if err != nil {
		return err
	}
	runners := []run.Runner{assistant}

	// The durable queue: it executes background runs, and shares its event
	// log with the server so that /resume reads their events.
	events := agentos.NewEventLog()
	queue, err := durable.New(ctx, durable.Config{
		DatabaseURL: "sqlite:file:" + path, // or the postgres:// URL of the store
		Store:       store,
		Runners:     runners,
		Events:      events,
		Logger:      logger,
	})
	if err != nil {
		return err
	}
	// Launch resumes the runs this process left unfinished, then executes
	// queued ones.
	if err := queue.Launch(); err != nil {
		_ = queue.Shutdown(0)
		return err
	}
	agentOS, err := agentos.New(agentos.Config{Runners: runners, Store: store, Queue: queue, Events: events, Logger: logger})
	if err != nil {
		_ = queue.Shutdown(0)
		return err
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		_ = queue.Shutdown(0)
		return err
	}
	serveCtx, stopServing := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- agentOS.Serve(serveCtx, ln, agentos.ServeOptions{}) }()
	client := &client{base: "http://" + ln.Addr().String()}
	demoErr := client.submitAndResume(ctx)
	stopServing()
	// The server stops first, then the queue, as `agnogo serve` does.
	return errors.Join(demoErr, <-served, queue.Shutdown(stopTimeout))
}

// newModel is the scripted model, which needs no key or network, or an
// OpenAI model (OPENAI_API_KEY; OPENAI_BASE_URL for another server).
func newModel(name string) (model.Model, error) {
	if name != "scripted" {
		return openai.New(openai.Config{ID: name})
	}
	answer := "Background runs keep going when their client leaves, and survive a restart of the server."
	return scripted.New([]scripted.Reply{{Content: answer, Chunks: 6}}), nil
}

// client speaks to the server as any AgentOS client does.
type client struct{ base string }

// submitAndResume submits a background run, reads its stream until the
// first piece of the answer, drops the connection, resumes the stream from
// the last event seen, and reads the run.
func (c *client) submitAndResume(ctx context.Context) error {
	first, err := c.post(ctx, "/agents/assistant/runs", url.Values{"message": {"What is a background run?"}, "background": {"true"}, "stream": {"true"}})
	if err != nil {
		return err
	}
	var runID, sessionID string
	last := int64(-1)
	for f := range frames(first.Body) {
		fmt.Println(f)
		runID, sessionID, last = f.RunID, f.SessionID, f.EventIndex
		if f.Event == run.EventRunContent || f.terminal() {
			break
		}
	}
	first.Body.Close() // the connection is lost; the run goes on
	if runID == "" {
		return errors.New("the run's stream ended before its first event")
	}
	fmt.Printf("-- stream dropped after event_index %d; resuming\n", last)

	resumed, err := c.post(ctx, "/agents/assistant/runs/"+runID+"/resume",
		url.Values{"session_id": {sessionID}, "last_event_index": {fmt.Sprint(last)}})
	if err != nil {
		return err
	}
	defer resumed.Body.Close()
	for f := range frames(resumed.Body) {
		fmt.Println(f)
		if f.Event == "error" {
			return fmt.Errorf("resume: %s", f.Error)
		}
	}

	var stored struct {
		Status  string `json:"status"`
		Content string `json:"content"`
	}
	if err := c.get(ctx, "/agents/assistant/runs/"+runID+"?session_id="+url.QueryEscape(sessionID), &stored); err != nil {
		return err
	}
	fmt.Printf("run %s: %s: %s\n", runID, stored.Status, stored.Content)
	if stored.Status != string(run.StatusCompleted) {
		return fmt.Errorf("the run ended %s", stored.Status)
	}

	// The queue's record of the run (GET /queue/jobs/{id}, admins only)
	// ends a moment after the run's row, once its event stream is closed.
	var job struct {
		Status   string `json:"status"`
		Attempts int    `json:"attempts"`
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		if err := c.get(ctx, "/queue/jobs/"+runID, &job); err != nil {
			return err
		}
		if job.Status != "running" || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("queue job %s: %s after %d attempt(s)\n", runID, job.Status, job.Attempts)
	return nil
}

// post sends a form and returns the response, which must be 2xx.
func (c *client) post(ctx context.Context, path string, form url.Values) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+path, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return do(req)
}

// get reads a JSON answer into v.
func (c *client) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(v)
}

// do sends req and fails on an answer that is not 2xx.
func do(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s: HTTP %d: %s", req.Method, req.URL.Path, resp.StatusCode, body)
	}
	return resp, nil
}

// frame is what this client reads of a Server-Sent Events frame.
type frame struct {
	Event      string `json:"event"`
	EventIndex int64  `json:"event_index"`
	RunID      string `json:"run_id"`
	SessionID  string `json:"session_id"`
	Content    any    `json:"content"`
	Error      string `json:"error"`
}

// String is the frame as the demo prints it: a run event with its index
// and content; a control frame (catch_up, replay, subscribed) by its name.
func (f frame) String() string {
	if !strings.HasPrefix(f.Event, "Run") {
		return "  (" + f.Event + ")"
	}
	text := fmt.Sprintf("  %-13s event_index=%d", f.Event, f.EventIndex)
	if f.Content != nil {
		text += fmt.Sprintf(" %q", fmt.Sprint(f.Content))
	}
	return text
}

// terminal reports the last event of a run.
func (f frame) terminal() bool {
	switch f.Event {
	case run.EventRunCompleted, run.EventRunError, run.EventRunCancelled, run.EventRunPaused:
		return true
	}
	return false
}

// frames yields the data of each frame of an SSE body until it ends.
func frames(body io.Reader) iter.Seq[frame] {
	return func(yield func(frame) bool) {
		scanner := bufio.NewScanner(body)
		scanner.Buffer(make([]byte, 64<<10), 4<<20)
		for scanner.Scan() {
			data, ok := strings.CutPrefix(scanner.Text(), "data: ")
			if !ok {
				continue
			}
			var f frame
			if json.Unmarshal([]byte(data), &f) == nil && !yield(f) {
				return
			}
		}
	}
}
