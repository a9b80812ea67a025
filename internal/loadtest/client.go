package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Client posts runs to one AgentOS server. It is safe for concurrent use.
type Client struct {
	baseURL string
	http    *http.Client
}

// NewClient returns a client for the server at baseURL (such as
// http://127.0.0.1:7777) that keeps up to conns connections open, so that
// conns concurrent callers never wait for a connection or redial.
func NewClient(baseURL string, conns int) *Client {
	transport := &http.Transport{
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     time.Minute,
		DisableCompression:  true,
	}
	return &Client{baseURL: strings.TrimRight(baseURL, "/"), http: &http.Client{Transport: transport}}
}

// Close closes the client's idle connections.
func (c *Client) Close() { c.http.CloseIdleConnections() }

// RunRequest is one run to start.
type RunRequest struct {
	// AgentID is the agent that runs; required.
	AgentID string
	// Message is the user's message; required.
	Message string
	// SessionID continues a session. Defaults to a new session, whose id the
	// server picks.
	SessionID string
}

// RunResult is a completed run as the server answered it.
type RunResult struct {
	RunID     string `json:"run_id"`
	SessionID string `json:"session_id"`
	Status    string `json:"status"`
	Content   any    `json:"content"`
}

// Run starts a run with stream=false and returns the run once the server
// answers. A run that is not COMPLETED is an error.
func (c *Client) Run(ctx context.Context, req RunRequest) (RunResult, error) {
	var out RunResult
	resp, err := c.post(ctx, req, false)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("decode run: %w", err)
	}
	if out.Status != "COMPLETED" {
		return out, fmt.Errorf("run %s ended %s, want COMPLETED", out.RunID, out.Status)
	}
	return out, nil
}

// StreamResult is a streamed run as the client saw it.
type StreamResult struct {
	// FirstEvent is the time from sending the request until the first
	// `event:` line arrived.
	FirstEvent time.Duration
	// Total is the time from sending the request until the stream ended.
	Total time.Duration
	// Events is the number of frames received.
	Events int
	// SessionID is the session the run belongs to, from its first frame.
	SessionID string
}

// Stream starts a run with stream=true, reads the Server-Sent Events to the
// end and times the first frame. A stream that does not end with
// RunCompleted is an error.
func (c *Client) Stream(ctx context.Context, req RunRequest) (StreamResult, error) {
	var out StreamResult
	start := time.Now()
	resp, err := c.post(ctx, req, true)
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	reader := bufio.NewReader(resp.Body)
	var last string
	for {
		line, err := reader.ReadString('\n')
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			if out.Events == 0 {
				out.FirstEvent = time.Since(start)
			}
			out.Events++
			last = strings.TrimSpace(name)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok && out.SessionID == "" {
			var frame struct {
				SessionID string `json:"session_id"`
			}
			if json.Unmarshal([]byte(data), &frame) == nil {
				out.SessionID = frame.SessionID
			}
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return out, fmt.Errorf("read stream: %w", err)
		}
	}
	out.Total = time.Since(start)
	if last != "RunCompleted" {
		return out, fmt.Errorf("stream of %d frames ended with %q, want RunCompleted", out.Events, last)
	}
	return out, nil
}

// post sends the run form and checks for 200 OK.
func (c *Client) post(ctx context.Context, req RunRequest, stream bool) (*http.Response, error) {
	form := url.Values{"message": {req.Message}, "stream": {fmt.Sprint(stream)}}
	if req.SessionID != "" {
		form.Set("session_id", req.SessionID)
	}
	target := c.baseURL + "/agents/" + url.PathEscape(req.AgentID) + "/runs"
	httpReq, err := http.NewRequestWithContext(ctx, http.MethodPost, target, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	httpReq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := c.http.Do(httpReq)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		return nil, fmt.Errorf("POST %s: %s: %s", target, resp.Status, strings.TrimSpace(string(body)))
	}
	return resp, nil
}
