package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agnogo/agnogo/internal/fakeopenai"
)

// TestAgentUIRereadsNeverLoseTheReply replays, against `agnogo serve`, the
// requests with which Agno's chat UI (agent-ui) rebuilds a chat while a reply
// streams: it starts a new chat, and as soon as RunStarted names the new
// session it re-reads the session's runs and replaces the chat with them; it
// reads them again once RunCompleted arrives. The model answers after 50–100
// ms. Every view of the run the server returns must hold at least the text
// streamed before the request was sent (the UI would otherwise erase it),
// and the view read after RunCompleted the whole reply: the run is saved
// before its terminal event goes out. 50 turns, with and without a security
// key.
func TestAgentUIRereadsNeverLoseTheReply(t *testing.T) {
	t.Parallel()
	binary := buildBinary(t)
	const turns = 50
	for _, tc := range []struct{ name, securityKey string }{{"open", ""}, {"security key", "ui-secret"}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fake := fakeopenai.New(t)
			auth := ""
			if tc.securityKey != "" {
				auth = fmt.Sprintf("auth: {security_key: %s}\n", tc.securityKey)
			}
			dir := t.TempDir()
			config := filepath.Join(dir, "agnogo.yaml")
			require.NoError(t, os.WriteFile(config, []byte(fmt.Sprintf(`name: UI
db: sqlite://%s
%smodels:
  fake: {provider: openai, id: gpt-test, base_url: %q, api_key: sk-fake}
agents:
  - id: assistant
    model: fake
`, filepath.Join(dir, "agnogo.db"), auth, fake.URL)), 0o600))
			server := startBinary(t, binary, config)
			ui := &uiClient{base: server.url, key: tc.securityKey}

			for i := range turns {
				reply := fmt.Sprintf("Reply %d: the quick brown fox jumps over the lazy dog, %d times over.", i, i)
				fake.Enqueue(fakeopenai.Text(reply).WithDelay(time.Duration(50+i%51) * time.Millisecond))
				ui.turn(t, fmt.Sprintf("message %d", i), reply)
			}
		})
	}
}

// uiClient sends what the chat UI sends: multipart runs and JSON reads,
// with its bearer token when it has one.
type uiClient struct {
	base, key string
}

// request builds a request with the UI's headers.
func (c *uiClient) request(t *testing.T, method, path string, body *bytes.Buffer, contentType string) *http.Request {
	t.Helper()
	if body == nil {
		body = &bytes.Buffer{}
	}
	req, err := http.NewRequestWithContext(t.Context(), method, c.base+path, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", contentType)
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	return req
}

// reread is one GET of the session's runs: the text the UI had streamed
// when it sent the request, and the content the server returned for the
// run.
type reread struct {
	when     string
	streamed string
	content  string
	status   string
	err      error
}

// sessionRun reads the session's runs as the UI does and returns the run's
// content and status.
func (c *uiClient) sessionRun(t *testing.T, sessionID, runID string) (content, status string, err error) {
	resp, err := http.DefaultClient.Do(c.request(t, http.MethodGet, "/sessions/"+sessionID+"/runs?type=agent&db_id=agnogo-db", nil, "application/json"))
	if err != nil {
		return "", "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", "", fmt.Errorf("GET runs: HTTP %d", resp.StatusCode)
	}
	var runs []struct {
		RunID   string `json:"run_id"`
		Content any    `json:"content"`
		Status  string `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&runs); err != nil {
		return "", "", err
	}
	for _, r := range runs {
		if r.RunID == runID {
			text, _ := r.Content.(string)
			return text, r.Status, nil
		}
	}
	return "", "", fmt.Errorf("run %s is not listed in session %s (%d runs)", runID, sessionID, len(runs))
}

// turn sends one message in a new chat and checks every re-read.
func (c *uiClient) turn(t *testing.T, message, reply string) {
	t.Helper()
	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	require.NoError(t, form.WriteField("message", message))
	require.NoError(t, form.WriteField("stream", "true"))
	require.NoError(t, form.WriteField("session_id", ""))
	require.NoError(t, form.Close())
	resp, err := http.DefaultClient.Do(c.request(t, http.MethodPost, "/agents/assistant/runs", &body, form.FormDataContentType()))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	var (
		streamed         strings.Builder
		sessionID, runID string
		wg               sync.WaitGroup
		mu               sync.Mutex
		rereads          []reread
		completed        bool
	)
	fire := func(when string) {
		snapshot := streamed.String()
		wg.Go(func() {
			content, status, err := c.sessionRun(t, sessionID, runID)
			mu.Lock()
			rereads = append(rereads, reread{when: when, streamed: snapshot, content: content, status: status, err: err})
			mu.Unlock()
		})
	}
	lines := bufio.NewScanner(resp.Body)
	lines.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for lines.Scan() {
		data, ok := strings.CutPrefix(lines.Text(), "data: ")
		if !ok {
			continue
		}
		var event struct {
			Event     string `json:"event"`
			RunID     string `json:"run_id"`
			SessionID string `json:"session_id"`
			Content   any    `json:"content"`
		}
		require.NoError(t, json.Unmarshal([]byte(data), &event), data)
		switch event.Event {
		case "RunStarted":
			sessionID, runID = event.SessionID, event.RunID
			fire("right after RunStarted")
		case "RunContent":
			if text, ok := event.Content.(string); ok {
				first := streamed.Len() == 0
				streamed.WriteString(text)
				if first {
					fire("mid-stream, after the first delta")
				}
			}
		case "RunCompleted":
			completed = true
			require.Equal(t, reply, event.Content)
			require.Equal(t, reply, streamed.String(), "the streamed deltas make the reply")
			content, status, err := c.sessionRun(t, sessionID, runID)
			require.NoError(t, err)
			require.Equal(t, "COMPLETED", status, "the run is saved before RunCompleted goes out")
			require.Equal(t, reply, content, "read right after RunCompleted")
		case "RunError":
			t.Fatalf("the run failed: %v", event.Content)
		}
	}
	require.NoError(t, lines.Err())
	require.True(t, completed, "the stream ended without RunCompleted")
	wg.Wait()
	require.Len(t, rereads, 2)
	for _, r := range rereads {
		require.NoError(t, r.err, r.when)
		require.True(t, strings.HasPrefix(r.content, r.streamed),
			"%s the server returned %q (status %s) while %q had been streamed: the UI would erase the reply", r.when, r.content, r.status, r.streamed)
		if r.status == "COMPLETED" {
			require.Equal(t, reply, r.content, r.when)
		}
	}
}
