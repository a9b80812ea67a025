package agentos

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coder/websocket"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// GET /workflows/ws is Agno's WebSocket for workflows (its os/router.py
// get_websocket_router): one connection carries JSON text messages both
// ways. The client sends {"action": …} messages — authenticate, ping,
// start-workflow, reconnect, continue-workflow — and the server answers
// each with control messages ({"event": "connected" | "authenticated" |
// "auth_error" | "auth_required" | "pong" | "replay" | "catch_up" |
// "subscribed" | "error", …}) and, for the run actions, every event of
// the run, each message the JSON an SSE frame of the run carries (with its
// event_index), up to the run's final event.
//
// A run started here is a background run, as Agno's WebSocket runs are:
// it goes on when the socket closes, and any connection (or POST
// …/resume) picks its events up again from the last event_index it saw.
// A connection follows several runs at once; every message is written
// whole, under Config.SSEWriteTimeout.
//
// Authentication is the connection's, not the upgrade's (a browser cannot
// set headers on a WebSocket): the upgrade is let through the auth
// middleware, and the client sends {"action":"authenticate","token":…}
// with the security key, a JWT or a service account's token (agno_pat_…).
// An upgrade that carries a valid Authorization header is authenticated
// from the start. A token names the caller as it does in a request's
// Authorization header: a service account's grants its account's scopes
// whatever the auth mode, even on a server without authentication, where
// every other caller is an admin.

// wsPath is the WebSocket's route.
const wsPath = "/workflows/ws"

// Bounds of one connection.
const (
	// wsMaxMessageBytes bounds a client's message: a longer one is read
	// to its end, dropped and answered with an error event.
	wsMaxMessageBytes = 1 << 20
	// wsHardReadLimit is the length past which a message is not even read
	// to its end: the connection is closed with 1009 (message too big).
	wsHardReadLimit = 16 << 20
	// wsMaxStreams caps the runs one connection follows at once.
	wsMaxStreams = 16
	// wsWaitPollInterval is how often a continuation checks whether the
	// execution that paused its run has finished letting go of it.
	wsWaitPollInterval = 5 * time.Millisecond
)

// The client's actions.
const (
	wsAuthenticate     = "authenticate"
	wsPing             = "ping"
	wsStartWorkflow    = "start-workflow"
	wsReconnect        = "reconnect"
	wsContinueWorkflow = "continue-workflow"
)

// wsActions lists the actions, for the error naming what to send.
var wsActions = []string{wsAuthenticate, wsPing, wsStartWorkflow, wsReconnect, wsContinueWorkflow}

// websocketRoutes mounts the workflows' WebSocket.
func (o *OS) websocketRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /workflows/ws", o.handleWorkflowWebSocket)
}

// isWebSocketRoute reports a request for the WebSocket, which withAuth lets
// through: the connection authenticates itself.
func isWebSocketRoute(r *http.Request) bool {
	return r.URL.Path == wsPath && (r.Method == http.MethodGet || r.Method == http.MethodHead)
}

// isUpgrade reports a WebSocket handshake: Connection: Upgrade and
// Upgrade: websocket.
func isUpgrade(r *http.Request) bool {
	return headerHasToken(r.Header, "Connection", "upgrade") && headerHasToken(r.Header, "Upgrade", "websocket")
}

// headerHasToken reports whether a comma-separated header holds token,
// case-insensitively.
func headerHasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for part := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(part), token) {
				return true
			}
		}
	}
	return false
}

// wsMessage is a client's message: the fields of every action.
type wsMessage struct {
	Action     string `json:"action"`
	Token      string `json:"token"`
	WorkflowID string `json:"workflow_id"`
	RunID      string `json:"run_id"`
	SessionID  string `json:"session_id"`
	UserID     string `json:"user_id"`
	// Message is the run's input: text, or JSON kept as its text.
	Message        json.RawMessage `json:"message"`
	SessionState   map[string]any  `json:"session_state"`
	Metadata       map[string]any  `json:"metadata"`
	LastEventIndex *int64          `json:"last_event_index"`
	// StepRequirements is a JSON array, or a string holding one (as the
	// form field of POST …/continue is).
	StepRequirements json.RawMessage `json:"step_requirements"`
}

// wsConn is one client's connection.
type wsConn struct {
	o    *OS
	conn *websocket.Conn
	// ctx ends when the connection does; it carries the upgrade request's
	// values.
	ctx context.Context
	// req is the upgrade request with ctx and, once the caller is known,
	// its Principal: what userScope, allowed and resumableRun read. Only
	// the reading goroutine changes it; the streams it starts get copies.
	req    *http.Request
	authed bool
	log    *slog.Logger

	streams sync.WaitGroup
	active  atomic.Int32 // streams following runs
	dropped atomic.Bool  // a write timed out: the client stopped reading
}

// handleWorkflowWebSocket upgrades the request and serves the connection
// until the client leaves or the server shuts down.
func (o *OS) handleWorkflowWebSocket(w http.ResponseWriter, r *http.Request) {
	if !isUpgrade(r) {
		w.Header().Set("Upgrade", "websocket")
		w.Header().Set("Connection", "Upgrade")
		writeError(w, http.StatusUpgradeRequired, "GET "+wsPath+" is a WebSocket: connect with a WebSocket client (Connection: Upgrade, Upgrade: websocket)")
		return
	}
	if o.followers.Err() != nil {
		writeError(w, http.StatusServiceUnavailable, "the server is shutting down")
		return
	}
	if status, detail := o.handshakeProblem(r); detail != "" {
		if status == http.StatusBadRequest {
			w.Header().Set("Sec-WebSocket-Version", "13")
		}
		writeError(w, status, detail)
		return
	}
	p, authed, note := o.upgradeCaller(r)
	// The origin is checked above, as CORS checks it.
	conn, err := websocket.Accept(w, r, &websocket.AcceptOptions{InsecureSkipVerify: true})
	if err != nil {
		return // Accept answered the handshake's problem
	}
	conn.SetReadLimit(wsHardReadLimit)
	// The request's context ends with its handler; the connection keeps its
	// values (the access record) and ends on its own.
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	c := &wsConn{o: o, conn: conn, ctx: ctx, log: o.log.With(slog.String("path", wsPath))}
	c.setCaller(r, p, authed)
	// At shutdown the connection is closed with 1001 (going away): its
	// runs go on, and the client reconnects to them elsewhere or later.
	stop := context.AfterFunc(o.followers, func() {
		_ = conn.Close(websocket.StatusGoingAway, "the server is shutting down; reconnect to follow your runs")
	})
	defer func() {
		cancel()
		c.streams.Wait()
		stop()
		_ = conn.CloseNow()
	}()

	requires := !authed
	connected := map[string]any{"event": "connected", "requires_auth": requires, "message": "Connected to AgentOS."}
	if requires {
		connected["message"] = "Connected to AgentOS. Please authenticate to continue."
		if note != "" {
			connected["message"] = "Connected to AgentOS. The Authorization header was not accepted (" + note + "): please authenticate to continue."
		}
	}
	if c.sendJSON(connected) != nil {
		return
	}
	for {
		data, problem, err := c.read()
		if err != nil {
			return // the client left or was dropped, or the server shuts down
		}
		if problem != "" {
			_ = c.sendError(problem)
			continue
		}
		c.handle(data)
	}
}

// handshakeProblem checks the handshake before it is accepted, so that a
// refusal has a JSON detail: the WebSocket version and key, and the
// browser origin — the request's own host, or one CORS allows
// (Config.CORSAllowedOrigins, else the defaults; "*" allows every origin).
func (o *OS) handshakeProblem(r *http.Request) (int, string) {
	if r.Header.Get("Sec-WebSocket-Version") != "13" {
		return http.StatusBadRequest, "unsupported WebSocket version: send Sec-WebSocket-Version: 13"
	}
	if len(r.Header.Values("Sec-WebSocket-Key")) != 1 {
		return http.StatusBadRequest, "the WebSocket handshake needs one Sec-WebSocket-Key"
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return 0, "" // not a browser
	}
	if u, err := url.Parse(origin); err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host) {
		return 0, ""
	}
	origins := o.cfg.CORSAllowedOrigins
	if len(origins) == 0 {
		origins = defaultCORSOrigins
	}
	if slices.Contains(origins, origin) || slices.Contains(origins, "*") {
		return 0, ""
	}
	return http.StatusForbidden, "Disallowed WebSocket origin " + origin + ": allow it with the server's CORS origins"
}

// upgradeCaller is the caller the upgrade request names: the caller of a
// valid Authorization header (authed); without one, every caller when
// there is no authentication (authed), else nobody yet — with why a header
// sent was not accepted (note).
func (o *OS) upgradeCaller(r *http.Request) (p Principal, authed bool, note string) {
	token, err := bearer(r)
	switch {
	case err != nil && !o.auth.enabled():
		return Principal{Admin: true}, true, ""
	case err != nil:
		return Principal{}, false, ""
	}
	p, _, detail := o.verifyWSToken(r, token)
	if detail != "" {
		return Principal{}, false, detail
	}
	return p, true, ""
}

// verifyWSToken checks a token sent by a WebSocket client as the HTTP
// middleware checks a bearer token: a service account's token
// (agno_pat_…) in every mode, with its account's scopes; the security key,
// or a JWT when JWT is on; any other token on a server without
// authentication, as an admin. It refuses a caller without identity under
// user isolation. r is the upgrade request (its address and context). It
// returns the caller, or the refusal's status and why.
func (o *OS) verifyWSToken(r *http.Request, token string) (Principal, int, string) {
	a := o.auth
	var p Principal
	switch {
	case isServiceAccountToken(token):
		// Exactly as a request's bearer: the same cache, throttle and
		// checks, and a security key that happens to look like a
		// service account's token is still the key.
		withToken := r.Clone(r.Context())
		withToken.Header.Set("Authorization", "Bearer "+token)
		var (
			status int
			detail string
		)
		if p, status, detail = a.identify(withToken); detail != "" {
			return Principal{}, status, detail
		}
	case !a.enabled():
		p = Principal{Admin: true}
	case a.jwt != nil:
		var detail string
		if p, detail = a.jwt.verify(token); detail != "" {
			return Principal{}, http.StatusUnauthorized, detail
		}
	case !a.keyMatches(token):
		return Principal{}, http.StatusUnauthorized, "Invalid token"
	default:
		p = Principal{Admin: true}
	}
	if !p.Admin && o.cfg.Auth.UserIsolation && p.Subject == "" {
		return Principal{}, http.StatusForbidden, "User isolation is on and the token carries no user identity (claim " + a.userIDClaim() + ")"
	}
	return p, http.StatusOK, ""
}

// setCaller records the connection's caller.
func (c *wsConn) setCaller(r *http.Request, p Principal, authed bool) {
	c.req = r.WithContext(context.WithValue(c.ctx, principalKey{}, p))
	c.authed = authed
	if a := accessFrom(c.ctx); a != nil && authed && p.Subject != "" {
		a.user = p.Subject
	}
}

// principal is the connection's caller.
func (c *wsConn) principal() Principal { return principalFrom(c.req.Context()) }

// read reads the client's next message. A message that is not JSON text,
// or too long, is reported as a problem to answer, and the connection goes
// on; err ends it.
func (c *wsConn) read() (data []byte, problem string, err error) {
	typ, r, err := c.conn.Reader(c.ctx)
	if err != nil {
		return nil, "", err
	}
	data, err = io.ReadAll(io.LimitReader(r, wsMaxMessageBytes+1))
	if err != nil {
		return nil, "", err
	}
	if len(data) > wsMaxMessageBytes {
		// Read to its end (the read limit closes the connection past
		// wsHardReadLimit), so the next message can be read.
		if _, err := io.Copy(io.Discard, r); err != nil {
			return nil, "", err
		}
		return nil, fmt.Sprintf("message too large: a message holds at most %d bytes", wsMaxMessageBytes), nil
	}
	if typ != websocket.MessageText {
		return nil, `binary messages are not understood: send each action as a JSON text message, such as {"action":"ping"}`, nil
	}
	return data, "", nil
}

// handle answers one message.
func (c *wsConn) handle(data []byte) {
	if p := jsonTextProblem(data); p != "" {
		_ = c.sendError("the message " + p + "; send text without NUL characters, encoded as UTF-8")
		return
	}
	var msg wsMessage
	if err := json.Unmarshal(data, &msg); err != nil {
		_ = c.sendError(messageProblem(err))
		return
	}
	if msg.Action == wsAuthenticate {
		c.authenticate(msg.Token)
		return
	}
	if !c.authed {
		kind := "bearer token (the security key)"
		switch {
		case c.o.auth.jwt != nil:
			kind = "JWT"
		case !c.o.auth.enabled():
			kind = "token (a service account's is checked; this server needs no other)"
		}
		_ = c.sendJSON(map[string]any{"event": "auth_required",
			"error": "Authentication required. Send authenticate action with valid " + kind + "."})
		return
	}
	switch msg.Action {
	case wsPing:
		_ = c.sendJSON(map[string]any{"event": "pong"})
	case wsStartWorkflow:
		c.startWorkflow(&msg)
	case wsReconnect:
		c.reconnect(&msg)
	case wsContinueWorkflow:
		c.continueWorkflow(&msg)
	case "":
		_ = c.sendError("action is required: one of " + strings.Join(wsActions, ", "))
	default:
		_ = c.sendError("Unknown action: " + msg.Action + " (one of " + strings.Join(wsActions, ", ") + ")")
	}
}

// messageProblem says what is wrong with a message that does not decode.
func messageProblem(err error) string {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return fmt.Sprintf("invalid message: field %s must be %s, not a JSON %s", typeErr.Field, jsonKind(typeErr.Type.Kind().String()), typeErr.Value)
	case errors.As(err, &typeErr):
		return `invalid message: send a JSON object with an action, such as {"action":"ping"}`
	case errors.As(err, &syntaxErr):
		return `the message is not valid JSON (` + err.Error() + `): send a JSON object with an action, such as {"action":"ping"}`
	}
	return "invalid message: " + err.Error()
}

// jsonKind names a Go kind as JSON does.
func jsonKind(kind string) string {
	switch kind {
	case "string":
		return "a string"
	case "map", "struct":
		return "an object"
	case "slice", "array":
		return "an array"
	case "int", "int64", "int32", "uint", "uint64", "float64":
		return "a number"
	case "bool":
		return "a boolean"
	}
	return "a " + kind
}

// authenticate handles the authenticate action. A failed attempt leaves
// the connection as it was.
func (c *wsConn) authenticate(token string) {
	if token == "" {
		_ = c.sendJSON(map[string]any{"event": "auth_error", "error": "Token is required"})
		return
	}
	p, status, detail := c.o.verifyWSToken(c.req, token)
	if detail != "" {
		errorType := "invalid_token"
		switch {
		case status == http.StatusTooManyRequests:
			errorType = "rate_limited"
		case status == http.StatusServiceUnavailable:
			errorType = "unavailable"
		case strings.Contains(strings.ToLower(detail), "expired"):
			errorType = "expired"
		}
		_ = c.sendJSON(map[string]any{"event": "auth_error", "error": detail, "error_type": errorType})
		return
	}
	c.setCaller(c.req, p, true)
	answer := map[string]any{"event": "authenticated", "message": "Authentication successful. You can now send commands."}
	switch {
	case p.ServiceAccountID != "":
		answer["message"] = "Service account authentication successful."
		answer["user_id"] = p.Subject
	case c.o.auth.jwt != nil:
		answer["message"] = "JWT authentication successful."
		answer["user_id"] = nilIfEmpty(p.Subject)
	}
	_ = c.sendJSON(answer)
}

// nilIfEmpty is s, or JSON null when empty.
func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// workflow resolves a workflow the caller may run: the error message
// names what to fix.
func (c *wsConn) workflow(id string) (run.Runner, string) {
	if id == "" {
		return nil, "workflow_id is required"
	}
	if !c.o.allowed(c.principal(), workflowComponent.resource, id, "run") {
		return nil, forbiddenDetail(workflowComponent.resource, id, "run")
	}
	runner, ok := c.o.runnerOf(workflowComponent, id)
	if !ok {
		return nil, "Workflow " + id + " not found"
	}
	return runner, ""
}

// reserveStream counts a stream about to start; false (answered) when the
// connection follows as many runs as it may.
func (c *wsConn) reserveStream() bool {
	if c.active.Add(1) > wsMaxStreams {
		c.active.Add(-1)
		_ = c.sendError(fmt.Sprintf("this connection already follows %d runs: wait for one to end, or open another connection", wsMaxStreams))
		return false
	}
	return true
}

// goStream runs a stream reserved with reserveStream in its own goroutine:
// the connection keeps reading meanwhile.
func (c *wsConn) goStream(stream func()) {
	c.streams.Add(1)
	go func() {
		defer c.streams.Done()
		defer c.active.Add(-1)
		stream()
	}()
}

// startWorkflow starts a workflow run in the background and streams its
// events.
func (c *wsConn) startWorkflow(msg *wsMessage) {
	runner, problem := c.workflow(msg.WorkflowID)
	if problem != "" {
		_ = c.sendError(problem)
		return
	}
	input, problem := messageText(msg.Message)
	if problem != "" {
		_ = c.sendError(problem)
		return
	}
	if c.o.cfg.Store == nil {
		_ = c.sendError("a workflow run started over the WebSocket is a background run, and background runs need a database to record them in: configure a db")
		return
	}
	if !c.reserveStream() {
		return
	}
	in := &run.Input{
		InputContent:   input,
		SessionID:      cmp.Or(msg.SessionID, newID()),
		UserID:         c.o.userScope(c.req, msg.UserID),
		SessionState:   msg.SessionState,
		Metadata:       msg.Metadata,
		RunID:          newID(),
		PersistOnStart: true,
	}
	runID, err := c.o.startWSRun(c.req, runner, in)
	if err != nil {
		c.active.Add(-1)
		_ = c.sendRunError(err)
		return
	}
	c.goStream(func() { c.followRun(runID, -1, in.UserID) })
}

// messageText is a run's input as the message carries it: its text, or
// the JSON it holds as text; a problem when there is none.
func messageText(raw json.RawMessage) (string, string) {
	var text string
	switch {
	case len(raw) == 0 || string(raw) == "null":
	case raw[0] == '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return "", "invalid message: field message must be text"
		}
	default:
		text = string(raw) // a structured input, kept as its JSON
	}
	if strings.TrimSpace(text) == "" {
		return "", "message is required: the workflow's input, as text (or JSON)"
	}
	return text, ""
}

// startWSRun accepts a background run as POST …/runs with background=true
// does — on the durable queue when there is one, else in this process —
// and returns its run id.
func (o *OS) startWSRun(r *http.Request, runner run.Runner, in *run.Input) (string, error) {
	if admitter, ok := runner.(run.Admitter); ok {
		if err := admitter.Admit(r.Context(), in, o.cfg.Queue != nil); err != nil {
			return "", err
		}
	}
	if o.cfg.Queue != nil {
		accepted, err := o.cfg.Queue.Submit(r.Context(), durable.Submission{AgentID: runner.ID(), Input: in, Stream: true})
		if err != nil {
			return "", err
		}
		return accepted.RunID, nil
	}
	// The run outlives the connection but keeps its values (the caller).
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	done, ok := o.track(in.RunID, &inflightRun{runner: runner, sessionID: in.SessionID, userID: in.UserID, cancel: cancel})
	if !ok {
		cancel()
		return "", errShuttingDown
	}
	if err := o.savePending(r.Context(), runner, in); err != nil {
		cancel()
		done()
		return "", err
	}
	o.events.Register(in.RunID, run.StatusPending)
	go o.runBackground(ctx, cancel, done, runner, in)
	return in.RunID, nil
}

// errShuttingDown refuses a run once the server is shutting down.
var errShuttingDown = errors.New("the server is shutting down")

// continueWorkflow continues a paused workflow run in the background and
// streams its events.
func (c *wsConn) continueWorkflow(msg *wsMessage) {
	runner, problem := c.workflow(msg.WorkflowID)
	if problem != "" {
		_ = c.sendError(problem)
		return
	}
	if msg.RunID == "" {
		_ = c.sendError("run_id is required")
		return
	}
	continuer, ok := runner.(run.Continuer)
	if !ok {
		_ = c.sendError("this workflow's runs cannot be continued")
		return
	}
	reqs, problem := stepRequirements(msg.StepRequirements)
	if problem != "" {
		_ = c.sendError(problem)
		return
	}
	req := &run.ContinueRequest{RunID: msg.RunID, SessionID: msg.SessionID, UserID: c.o.userScope(c.req, msg.UserID), StepRequirements: reqs}
	ctx := c.req.Context()
	if checker, ok := runner.(continueChecker); ok {
		// Refused now, with what to fix, rather than failing the run once
		// it goes on.
		if err := checker.CheckContinue(ctx, req); err != nil {
			_ = c.sendRunError(err)
			return
		}
	}
	if !c.reserveStream() {
		return
	}
	if q := c.o.cfg.Queue; q != nil {
		parked, err := q.Parked(ctx, req.RunID, req.UserID)
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			c.active.Add(-1)
			_ = c.sendRunError(err)
			return
		}
		if parked {
			from := c.o.lastStreamed(ctx, req.RunID)
			if err := q.Continue(ctx, req); err != nil {
				c.active.Add(-1)
				_ = c.sendRunError(err)
				return
			}
			c.goStream(func() { c.followRun(req.RunID, from, req.UserID) })
			return
		}
	}
	from, failed, err := c.o.continueWSRun(ctx, runner, continuer, req)
	if err != nil {
		c.active.Add(-1)
		_ = c.sendRunError(err)
		return
	}
	c.goStream(func() {
		sent, err := c.follow(req.RunID, from)
		if sent == 0 && err == nil && c.ctx.Err() == nil {
			select {
			case err := <-failed: // it stopped before its first event
				_ = c.sendRunError(err)
			default:
			}
		}
	})
}

// stepRequirements reads step_requirements: a JSON array, or a string
// holding one.
func stepRequirements(raw json.RawMessage) ([]*run.StepRequirement, string) {
	const want = "step_requirements must be a JSON array of the run's step requirements, each resolved (confirmed, user_input, selected_choices or executor_requirements) and matched by step_id"
	if len(raw) == 0 || string(raw) == "null" {
		return nil, ""
	}
	if raw[0] == '"' {
		var text string
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, want
		}
		raw = json.RawMessage(text)
	}
	var reqs []*run.StepRequirement
	if err := json.Unmarshal(raw, &reqs); err != nil {
		return nil, want + " (" + err.Error() + ")"
	}
	return reqs, ""
}

// continueWSRun continues a paused run in the background in this process,
// tracked like any run in flight, its events numbered on from the last its
// run streamed (from). failed receives the error of a continuation that
// stopped before its first event.
func (o *OS) continueWSRun(ctx context.Context, runner run.Runner, continuer run.Continuer, req *run.ContinueRequest) (from int64, failed <-chan error, err error) {
	meta := &inflightRun{runner: runner, sessionID: req.SessionID, userID: req.UserID}
	if meta.sessionID == "" && o.cfg.Store != nil {
		if rec, err := o.cfg.Store.GetRun(ctx, req.RunID, req.UserID); err == nil {
			meta.sessionID = rec.SessionID
		}
	}
	// The execution that paused the run saves it, sends its final event,
	// then lets go of it: a client answering that event at once may get
	// here first.
	if !o.waitUntracked(ctx, req.RunID) {
		return 0, nil, fmt.Errorf("run %s is still executing: continue it once it has paused: %w", req.RunID, run.ErrNotContinuable)
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	meta.cancel = cancel
	done, ok := o.track(req.RunID, meta)
	if !ok {
		cancel()
		return 0, nil, errShuttingDown
	}
	from = o.lastStreamed(ctx, req.RunID)
	// Reopened before it starts, so that the stream is followed from here
	// rather than found ended.
	o.events.Register(req.RunID, run.StatusRunning)
	stopped := make(chan error, 1)
	go o.runContinuation(runCtx, cancel, done, meta, continuer, req, stopped)
	return from, stopped, nil
}

// waitUntracked waits, at most settleTimeout, until no execution of runID
// is in flight here.
func (o *OS) waitUntracked(ctx context.Context, runID string) bool {
	deadline := time.NewTimer(settleTimeout)
	defer deadline.Stop()
	tick := time.NewTicker(wsWaitPollInterval)
	defer tick.Stop()
	for {
		o.mu.Lock()
		_, busy := o.inflight[runID]
		o.mu.Unlock()
		if !busy {
			return true
		}
		select {
		case <-tick.C:
		case <-deadline.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// runContinuation executes a continuation and makes sure it ends in a
// terminal state in the event log (and in the store, when it failed along
// the way). One that fails before its first event changed nothing: its
// error goes to stopped, and the run's stream is PAUSED again.
func (o *OS) runContinuation(ctx context.Context, cancel context.CancelFunc, done func(), meta *inflightRun,
	continuer run.Continuer, req *run.ContinueRequest, stopped chan<- error) {
	defer done()
	defer cancel()
	var last run.Event
	own := ownRun(req.RunID)
	fail := func(err error) {
		if last == nil {
			stopped <- err // before Finish: the follower that Finish ends reads it
			o.events.Finish(req.RunID, run.StatusPaused)
			return
		}
		o.events.Finish(string(own), o.settleWS(&run.Input{RunID: string(own), SessionID: meta.sessionID, UserID: req.UserID}, meta.runner, err.Error()))
	}
	for event, err := range o.logFailure(ctx, meta, continuer.Continue(ctx, req)) {
		if err != nil {
			fail(err)
			return
		}
		o.events.AppendTo(own.of(event), event)
		last = event
	}
	if _, final := run.FinalStatus(last); !final {
		fail(errors.New("the run ended without a final state"))
	}
}

// settleWS ends a run that failed without its final event: ERROR in the
// store (when there is one) and a final event in the event log. It returns
// the run's final status.
func (o *OS) settleWS(in *run.Input, runner run.Runner, message string) run.Status {
	if o.cfg.Store != nil {
		return o.settle(in, runner, run.StatusError, message)
	}
	base := runnerBase(runner, in.RunID, in.SessionID)
	base.CreatedAt = o.cfg.Now().Unix()
	o.events.AppendTo(in.RunID, &run.RunError{BaseEvent: base, Content: message})
	return run.StatusError
}

// reconnect re-attaches the connection to a run's events after
// last_event_index, as POST …/resume does: a finished run is replayed, one
// in flight caught up and then followed live.
func (c *wsConn) reconnect(msg *wsMessage) {
	if msg.RunID == "" {
		_ = c.sendError("run_id is required for subscription")
		return
	}
	userID := c.o.userScope(c.req, msg.UserID)
	var runner run.Runner
	if msg.WorkflowID != "" {
		var problem string
		if runner, problem = c.workflow(msg.WorkflowID); problem != "" {
			_ = c.sendError(problem)
			return
		}
	} else {
		var ok bool
		if runner, ok = c.workflowOfRun(msg.RunID, userID); !ok {
			_ = c.sendError("Run " + msg.RunID + " not found")
			return
		}
		if !c.o.allowed(c.principal(), workflowComponent.resource, runner.ID(), "run") {
			_ = c.sendError(forbiddenDetail(workflowComponent.resource, runner.ID(), "run"))
			return
		}
	}
	last := int64(-1)
	if msg.LastEventIndex != nil {
		last = *msg.LastEventIndex
	}
	stored, err := c.o.resumableRun(c.req, runner, msg.RunID, msg.SessionID, userID)
	if err != nil {
		_ = c.sendError(err.Error())
		return
	}
	if !c.reserveStream() {
		return
	}
	c.goStream(func() { c.resume(msg.RunID, stored, last) })
}

// workflowOfRun finds the workflow of a run the caller may see: the one
// executing it here, else the one its stored row names.
func (c *wsConn) workflowOfRun(runID, userID string) (run.Runner, bool) {
	o := c.o
	o.mu.Lock()
	live, inflight := o.inflight[runID]
	o.mu.Unlock()
	if inflight && kindOf(live.runner) == run.KindWorkflow && live.userID == o.userScope(c.req, live.userID) {
		return live.runner, true
	}
	if o.cfg.Store == nil {
		return nil, false
	}
	rec, err := o.cfg.Store.GetRun(c.req.Context(), runID, userID)
	if err != nil {
		return nil, false
	}
	return o.runnerOf(workflowComponent, rec.Run.RunnerID())
}

// resume sends a run's events after last, as [OS.resume] writes them to an
// SSE stream: a replay of a finished run, or a catch-up and a live tail of
// one in flight; from the events stored on its row when the event log has
// nothing for it.
func (c *wsConn) resume(runID string, stored *run.Output, last int64) {
	o, ctx := c.o, c.ctx
	point, ok := o.resumePoint(ctx, runID, stored, last, "reconnect")
	if !ok {
		_ = c.sendError("Run " + runID + " not found")
		return
	}
	status, ending, all, missed, err := point.status, point.ending, point.all, point.missed, point.err
	replay := func() error {
		return c.control("replay", map[string]any{"run_id": runID, "status": status, "total_events": len(all),
			"total_buffered": len(missed), "last_event_index_requested": last,
			"message": "Run " + strings.ToLower(string(status)) + ". Replaying " + strconv.Itoa(len(missed)) + " missed events."})
	}
	switch {
	case ending && err == nil:
		if replay() == nil {
			_, _ = c.follow(runID, last)
		}
		return
	case len(missed) == 0 && stored != nil && (err != nil || status.Terminal()):
		c.replayStored(stored, last)
		return
	case status.Terminal():
		if replay() != nil {
			return
		}
		for _, entry := range missed {
			if c.send(entry.Data) != nil {
				return
			}
		}
		return
	}
	if len(missed) > 0 {
		if c.control("catch_up", map[string]any{"run_id": runID, "status": "running", "missed_events": len(missed), "current_event_count": len(all),
			"message": "Catching up on " + strconv.Itoa(len(missed)) + " missed events."}) != nil {
			return
		}
		for _, entry := range missed {
			if c.send(entry.Data) != nil {
				return
			}
			last = entry.Index
			if run.EndsRun(runID, entry.Name, entry.Data) {
				return
			}
		}
	}
	if c.control("subscribed", map[string]any{"run_id": runID, "status": "running", "current_event_count": len(all),
		"message": "Subscribed to workflow run. You will receive new events as they occur."}) != nil {
		return
	}
	_, _ = c.follow(runID, last)
}

// replayStored sends the events stored on the run row with an index above
// last, numbered as [replayStored] numbers them for SSE.
func (c *wsConn) replayStored(out *run.Output, last int64) {
	var send []run.Event
	var previous *int64
	for _, e := range out.Events {
		index := e.Base().EventIndex
		if index == nil && previous != nil {
			next := *previous + 1
			e.Base().EventIndex, index = &next, &next
		}
		previous = index
		if index == nil || *index > last {
			send = append(send, e)
		}
	}
	if c.control("replay", map[string]any{"run_id": out.RunID, "status": out.Status, "total_events": len(out.Events),
		"last_event_index_requested": last, "message": "Replaying the events stored with the run"}) != nil {
		return
	}
	for _, e := range send {
		data, err := run.EncodeEvent(e)
		if err != nil {
			continue
		}
		if c.send(data) != nil {
			return
		}
	}
}

// followRun streams the events after `after` of a background run, from
// wherever it executes; one whose events are gone and that streamed
// nothing is replayed from its row (see [OS.followRun]).
func (c *wsConn) followRun(runID string, after int64, userID string) {
	sent, err := c.follow(runID, after)
	if sent > 0 || err != nil || c.ctx.Err() != nil || c.o.cfg.Store == nil {
		return
	}
	rec, err := c.o.cfg.Store.GetRun(c.ctx, runID, userID)
	if err != nil || !rec.Run.Status.Terminal() {
		_ = c.sendError("the run's events are not available; read it with GET /workflows/{workflow_id}/runs/" + runID)
		return
	}
	c.replayStored(rec.Run, after)
}

// follow sends a run's events after `after` as they come, up to its final
// event; it reports how many it sent. A failure to read them ends with an
// error event saying how to go on.
func (c *wsConn) follow(runID string, after int64) (int, error) {
	sent := 0
	for item, err := range c.o.events.Follow(c.ctx, runID, after, 0) {
		if err != nil {
			if c.ctx.Err() == nil {
				_ = c.sendError("following the run failed; reconnect with its run_id and the last event_index received")
			}
			return sent, err
		}
		if item.Idle {
			continue
		}
		if err := c.send(item.Entry.Data); err != nil {
			return sent, err
		}
		sent++
		if run.EndsRun(runID, item.Entry.Name, item.Entry.Data) {
			break
		}
	}
	return sent, nil
}

// send writes one text message, under the write timeout: a client that has
// not taken it by then is dropped.
func (c *wsConn) send(data []byte) error {
	ctx := c.ctx
	if timeout := c.o.cfg.SSEWriteTimeout; timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	err := c.conn.Write(ctx, websocket.MessageText, data)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && c.ctx.Err() == nil && c.dropped.CompareAndSwap(false, true) {
		c.log.Info("WebSocket client dropped: it stopped reading", slog.String("run_id", frameRunID(data)),
			slog.Float64("write_timeout_s", c.o.cfg.SSEWriteTimeout.Seconds()))
	}
	return err
}

// sendJSON writes v as a text message.
func (c *wsConn) sendJSON(v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode a WebSocket message: %w", err)
	}
	return c.send(data)
}

// control writes a control message named name with fields.
func (c *wsConn) control(name string, fields map[string]any) error {
	fields["event"] = name
	return c.sendJSON(fields)
}

// sendError writes {"event":"error","error":message}.
func (c *wsConn) sendError(message string) error {
	return c.sendJSON(map[string]any{"event": "error", "error": message})
}

// sendRunError answers a run action the server refused or could not carry
// out: what the client can fix, or an internal error logged under an id.
func (c *wsConn) sendRunError(err error) error {
	var busy *run.SessionBusyError
	switch {
	case errors.As(err, &busy):
		return c.sendJSON(map[string]any{"event": "error", "error": busy.Error(), "error_type": run.ErrorTypeSessionBusy,
			"error_id": run.ErrorTypeSessionBusy, "run_id": busy.RunID})
	case errors.Is(err, run.ErrUnsupportedMedia):
		return c.sendJSON(map[string]any{"event": "error", "error": err.Error(), "error_type": run.ClassUnsupportedMedia.ErrorType()})
	case errors.Is(err, run.ErrRunNotFound), errors.Is(err, storage.ErrNotFound), errors.Is(err, run.ErrNotContinuable),
		errors.Is(err, storage.ErrInvalidText), errors.Is(err, run.ErrContinueOutOfRange), errors.Is(err, run.ErrInvalidContinue),
		errors.Is(err, run.ErrUnresolved), errors.Is(err, run.ErrInvalidInput), errors.Is(err, storage.ErrInvalid),
		errors.Is(err, durable.ErrNotParked), errors.Is(err, errShuttingDown):
		return c.sendError(err.Error())
	case errors.Is(err, durable.ErrQueueFull):
		return c.sendError(err.Error() + "; retry later")
	}
	var migration *storage.MigrationRequiredError
	if errors.As(err, &migration) {
		return c.sendJSON(map[string]any{"event": "error", "error": migration.Error(), "error_type": "migration_required_error"})
	}
	id := newID()
	c.log.Error("WebSocket action failed", slog.String("error_id", id), slog.Any("error", err))
	return c.sendJSON(map[string]any{"event": "error", "error": "Internal server error", "error_id": id})
}
