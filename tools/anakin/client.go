package anakin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/toolkit"
)

// Job statuses Anakin reports; any other is read as still running.
const (
	statusCompleted = "completed"
	statusFailed    = "failed"
)

// page is one crawled page.
type page struct {
	URL      string          `json:"url"`
	Status   string          `json:"status"`
	Markdown string          `json:"markdown"`
	Error    json.RawMessage `json:"error"`
}

// job is what Anakin answers about a job: its status and, once completed,
// its result (a scrape's markdown, a crawl's pages, a map's links).
type job struct {
	JobID          string          `json:"jobId"`
	JobIDSnake     string          `json:"job_id"`
	ID             string          `json:"id"`
	Status         string          `json:"status"`
	Error          json.RawMessage `json:"error"`
	Message        string          `json:"message"`
	URL            string          `json:"url"`
	Markdown       string          `json:"markdown"`
	CleanedHTML    string          `json:"cleanedHtml"`
	Results        []page          `json:"results"`
	TotalPages     int             `json:"totalPages"`
	CompletedPages int             `json:"completedPages"`
	Links          []string        `json:"links"`
	TotalLinks     int             `json:"totalLinks"`
}

// id is the job's id, under whichever name Anakin gave it.
func (j *job) id() string {
	switch {
	case j.JobID != "":
		return j.JobID
	case j.JobIDSnake != "":
		return j.JobIDSnake
	}
	return j.ID
}

// errorText is an "error" field's message: a string, or an object's
// "message" (and "code").
func errorText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var object struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
	if json.Unmarshal(raw, &object) == nil && (object.Message != "" || object.Code != "") {
		if object.Code != "" && object.Message != "" {
			return object.Code + ": " + object.Message
		}
		return object.Code + object.Message
	}
	return string(raw)
}

// do sends one request to the API and decodes its JSON answer into out. A
// failure is an [*toolkit.Error].
func (k *kit) do(ctx context.Context, method, path string, body, out any) error {
	header := http.Header{"X-Api-Key": {k.apiKey}, "Authorization": {"Bearer " + k.apiKey}}
	return toolkit.DoJSON(ctx, k.client, Name, toolkit.Request{Method: method, URL: k.base + path, Header: header, Body: body,
		StatusError: func(resp *http.Response, data []byte) error { return statusError(resp.StatusCode, data) }}, k.network.MaxBytes(), out)
}

// statusError is the error of an HTTP error answer. Anakin answers
// {"error": "code", "message": "…"} or {"error": {"code", "message"}}; the
// message quotes both.
func statusError(status int, body []byte) *toolkit.Error {
	e := toolkit.StatusError(Name, status, body)
	var fields struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(body, &fields) == nil {
		code := errorText(fields.Error)
		switch {
		case code != "" && fields.Message != "":
			e.Message = code + ": " + fields.Message
		case code != "":
			e.Message = code
		}
	}
	return e
}

// run creates a job with a POST to path and reads its status at
// path/{id} until it is completed, failed, or max_wait has passed. what
// names the job for messages ("scrape of https://…"). The job id never
// reaches the model: not in the result, not in an error.
func (k *kit) run(ctx context.Context, path, what string, body any) (*job, error) {
	var submitted job
	if err := k.do(ctx, http.MethodPost, path, body, &submitted); err != nil {
		return nil, err
	}
	id := submitted.id()
	if id == "" {
		return nil, &toolkit.Error{Toolkit: Name, Class: run.ClassUnknown,
			Message: fmt.Sprintf("Anakin accepted the %s but gave no job id to follow", what)}
	}
	if submitted.Status == statusFailed {
		return nil, failed(what, &submitted)
	}
	deadline := time.Now().Add(k.maxWait)
	pollCtx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	statusPath := path + "/" + url.PathEscape(id)
	last := or(submitted.Status, "pending")
	for {
		var status job
		err := k.do(pollCtx, http.MethodGet, statusPath, nil, &status)
		if err != nil {
			if ctx.Err() == nil && errors.Is(pollCtx.Err(), context.DeadlineExceeded) {
				return nil, k.tooLong(what, last)
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, err
		}
		last = or(status.Status, last)
		switch strings.ToLower(status.Status) {
		case statusCompleted:
			return &status, nil
		case statusFailed:
			return nil, failed(what, &status)
		}
		if time.Now().Add(k.pollInterval).After(deadline) {
			return nil, k.tooLong(what, last)
		}
		timer := time.NewTimer(k.pollInterval)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, ctx.Err()
		case <-timer.C:
		}
	}
}

// or is s, or def when s is empty.
func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// failed is the error of a job Anakin reports failed, with its message.
func failed(what string, j *job) error {
	msg := or(errorText(j.Error), j.Message)
	if msg == "" {
		msg = "Anakin gave no reason"
	}
	return &toolkit.Error{Toolkit: Name, Class: run.ClassServer, Message: fmt.Sprintf("the %s failed: %s", what, msg)}
}

// tooLong is the error of a job still running at max_wait.
func (k *kit) tooLong(what, status string) error {
	return &toolkit.Error{Toolkit: Name, Class: run.ClassTimeout,
		Message: fmt.Sprintf("the %s was still %s after %s (max_wait_seconds): try again later, or ask for less", what, status, k.maxWait)}
}
