package agentos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The page side of the agent-ui tests (agentui_test.go): a port of the UI's
// requests, stream handling and history rebuild, each naming the UI file it
// follows.

// chatUI is the state the UI keeps in the page: the mode (agent or team,
// kept in memory only), the selected agent or team and its database and the
// session (all in the URL), the agents and teams the entity selector lists,
// the sidebar's sessions, the chat, and the error text of a failed reply.
type chatUI struct {
	browser                          *browser
	token                            string
	mode                             string // "agent" (the store's default) or "team"
	agentID, teamID, dbID, sessionID string
	selectedModel                    string
	agents, teams                    []string // ids, as the entity selector lists them
	sidebar                          []uiSession
	messages                         []uiMessage
	streamingError                   string
	// failures are what the page would show as an error toast, or swallow
	// and show as an empty list; a working server causes none.
	failures []string
}

// uiSession is a sidebar entry (SessionEntry in the UI's src/types/os.ts).
type uiSession struct {
	SessionID   string
	SessionName string
	CreatedAt   int64
}

// uiMessage is a chat message (ChatMessage in src/types/os.ts), without the
// media, audio, reasoning and reference fields agnogo does not stream.
type uiMessage struct {
	Role           string // "user" or "agent"
	Content        string
	CreatedAt      int64
	ToolCalls      []map[string]any
	StreamingError bool
}

// shownMessage is what the chat displays for a message: its text and, for
// replies, a chip per tool call (its name; its tool_call_id keys the chip).
type shownMessage struct {
	Role    string
	Content string
	Tools   []string
}

func chatView(messages []uiMessage) []shownMessage {
	out := make([]shownMessage, 0, len(messages))
	for _, m := range messages {
		shown := shownMessage{Role: m.Role, Content: m.Content}
		for _, call := range m.ToolCalls {
			shown.Tools = append(shown.Tools, fmt.Sprintf("%v (%v)", call["tool_name"], call["tool_call_id"]))
		}
		out = append(out, shown)
	}
	return out
}

func withoutTimes(sessions []uiSession) []uiSession {
	out := make([]uiSession, len(sessions))
	for i, s := range sessions {
		out[i] = uiSession{SessionID: s.SessionID, SessionName: s.SessionName}
	}
	return out
}

func newChatUI(endpoint, token string) *chatUI {
	return &chatUI{browser: &browser{base: endpoint, origin: agentUIOrigin}, token: token, mode: "agent"}
}

// jsonHeaders are the headers of every call in src/api/os.ts: a JSON
// Content-Type even without a body, and the bearer token when one is set.
func (ui *chatUI) jsonHeaders() http.Header {
	h := http.Header{"Content-Type": {"application/json"}}
	if ui.token != "" {
		h.Set("Authorization", "Bearer "+ui.token)
	}
	return h
}

// getJSON is a GET as src/api/os.ts sends it, decoding a 2xx answer into
// into unless it is nil.
func (ui *chatUI) getJSON(ctx context.Context, path string, into any) (status int, err error) {
	resp, err := ui.browser.fetch(ctx, http.MethodGet, path, ui.jsonHeaders(), nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 || into == nil {
		return resp.StatusCode, nil
	}
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		return resp.StatusCode, fmt.Errorf("GET %s: %w", path, err)
	}
	return resp.StatusCode, nil
}

// initialize follows initialize in src/hooks/useChatActions.ts: the status
// check must answer exactly 200; then teams and agents are listed (a failed
// listing is an error toast and an empty list). With neither an agent nor a
// team in the URL, the first entity of the page's mode is selected, and only
// that mode's list is kept; otherwise both lists are kept and the URL's agent
// (else the first agent) or, without one, the URL's team (else the first
// team) is selected, which sets the mode. The selection brings its db_id and
// model: initialize shows a team's model.provider, but the entity
// selector's effect (src/components/chat/Sidebar/EntitySelector.tsx) then
// shows model.model for either kind.
func (ui *chatUI) initialize(ctx context.Context) error {
	status, err := ui.getJSON(ctx, "/health", nil) // only the status is read
	if err != nil {
		return err
	}
	if status != http.StatusOK {
		return fmt.Errorf("GET /health answered %d: the UI shows the endpoint as down", status)
	}
	teams := ui.listEntities(ctx, "/teams")
	agents := ui.listEntities(ctx, "/agents")
	selectFrom := func(list []map[string]any, wanted string) map[string]any {
		if i := slices.IndexFunc(list, func(e map[string]any) bool { return e["id"] == wanted }); i >= 0 {
			return list[i]
		}
		if len(list) > 0 {
			return list[0]
		}
		return nil
	}
	var chosen map[string]any
	if ui.agentID == "" && ui.teamID == "" {
		switch {
		case ui.mode == "team" && len(teams) > 0:
			chosen, ui.teams = teams[0], entityIDs(teams)
		case ui.mode == "agent" && len(agents) > 0:
			chosen, ui.agents = agents[0], entityIDs(agents)
		}
	} else {
		ui.agents, ui.teams = entityIDs(agents), entityIDs(teams)
		if ui.agentID != "" {
			chosen = selectFrom(agents, ui.agentID)
			if chosen != nil {
				ui.mode = "agent"
			}
		} else {
			chosen = selectFrom(teams, ui.teamID)
			if chosen != nil {
				ui.mode = "team"
			}
		}
	}
	if chosen == nil {
		return fmt.Errorf("no %s to select", ui.mode)
	}
	id, _ := chosen["id"].(string)
	if ui.mode == "team" {
		ui.teamID, ui.agentID = id, ""
	} else {
		ui.agentID, ui.teamID = id, ""
	}
	ui.dbID, _ = chosen["db_id"].(string)
	if m, ok := chosen["model"].(map[string]any); ok {
		ui.selectedModel, _ = m["model"].(string)
	}
	return nil
}

// listEntities follows getAgentsAPI and getTeamsAPI in src/api/os.ts: a
// JSON array, else an error toast and an empty list.
func (ui *chatUI) listEntities(ctx context.Context, path string) []map[string]any {
	var list []map[string]any
	if status, err := ui.getJSON(ctx, path, &list); err != nil || status != http.StatusOK {
		ui.failures = append(ui.failures, fmt.Sprintf("toast: failed to fetch %s (status %d, %v)", strings.TrimPrefix(path, "/"), status, err))
		return nil
	}
	return list
}

func entityIDs(list []map[string]any) []string {
	ids := make([]string, 0, len(list))
	for _, e := range list {
		id, _ := e["id"].(string)
		ids = append(ids, id)
	}
	return ids
}

// selectMode follows handleModeChange in
// src/components/chat/Sidebar/ModeSelector.tsx: a new mode clears the
// selection, the model, the chat and the session; the sidebar
// (src/components/chat/Sidebar/Sidebar.tsx) then initializes the page again,
// which selects the new mode's first entity.
func (ui *chatUI) selectMode(ctx context.Context, mode string) error {
	if mode == ui.mode {
		return nil
	}
	ui.mode = mode
	ui.agentID, ui.teamID, ui.selectedModel, ui.sessionID = "", "", "", ""
	ui.messages, ui.sidebar = nil, nil
	return ui.initialize(ctx)
}

// loadSessions follows getSessions in src/hooks/useSessionLoader.ts and
// getAllSessionsAPI in src/api/os.ts: the sessions of the mode's selected
// agent or team (type=agent or type=team); nothing is asked without one or
// without a db_id; the sidebar is the answer's data array, and any failure
// leaves it empty without a word.
func (ui *chatUI) loadSessions(ctx context.Context) error {
	selectedID := ui.agentID
	if ui.mode == "team" {
		selectedID = ui.teamID
	}
	if selectedID == "" || ui.dbID == "" {
		ui.failures = append(ui.failures, "sessions not loaded: no "+ui.mode+" or no db_id")
		return nil
	}
	// URLSearchParams.set keeps this order: type, component_id, db_id.
	path := "/sessions?type=" + ui.mode + "&component_id=" + url.QueryEscape(selectedID) + "&db_id=" + url.QueryEscape(ui.dbID)
	var page struct {
		Data []struct {
			SessionID   string `json:"session_id"`
			SessionName string `json:"session_name"`
			CreatedAt   int64  `json:"created_at"`
		} `json:"data"`
	}
	status, err := ui.getJSON(ctx, path, &page)
	if err != nil {
		return err
	}
	ui.sidebar = nil
	if status != http.StatusOK {
		ui.failures = append(ui.failures, fmt.Sprintf("sessions list answered %d: shown as empty", status))
		return nil
	}
	for _, s := range page.Data {
		ui.sidebar = append(ui.sidebar, uiSession{SessionID: s.SessionID, SessionName: s.SessionName, CreatedAt: s.CreatedAt})
	}
	return nil
}

// loadSession follows getSession in src/hooks/useSessionLoader.ts and
// getSessionAPI in src/api/os.ts: the session's runs (type=agent with an
// agent in the URL, else type=team, as src/components/chat/Sidebar/Sessions/
// Sessions.tsx picks it) must be a JSON array; each run, whoever ran it (a
// team member's run too: nothing looks at agent_id, team_id or
// parent_run_id), becomes the user's message (run_input) and the reply
// (content, tools plus the tool-role reasoning_messages of extra_data), both
// dated by the run's created_at; list and object contents are turned into
// text. Any failure leaves the chat as it was.
func (ui *chatUI) loadSession(ctx context.Context, sessionID string) error {
	messages, problem, err := ui.sessionChat(ctx, sessionID)
	if err != nil {
		return err
	}
	if problem != "" {
		ui.failures = append(ui.failures, problem)
		return nil
	}
	ui.messages = messages
	return nil
}

// sessionChat reads a session's runs and rebuilds its chat; problem says
// why the UI would leave the chat unchanged instead.
func (ui *chatUI) sessionChat(ctx context.Context, sessionID string) (messages []uiMessage, problem string, err error) {
	entityType, selectedID := "agent", ui.agentID
	if ui.agentID == "" {
		entityType, selectedID = "team", ui.teamID
	}
	if selectedID == "" || ui.dbID == "" || sessionID == "" {
		return nil, "session not loaded: no agent or team, db_id or session", nil
	}
	path := "/sessions/" + url.PathEscape(sessionID) + "/runs?type=" + entityType + "&db_id=" + url.QueryEscape(ui.dbID)
	var answer any
	status, err := ui.getJSON(ctx, path, &answer)
	if err != nil {
		return nil, "", err
	}
	runs, isList := answer.([]any)
	if status != http.StatusOK || !isList {
		return nil, fmt.Sprintf("session runs answered %d (list: %t): chat left unchanged", status, isList), nil
	}
	for _, item := range runs {
		runMap, ok := item.(map[string]any)
		if !ok {
			continue
		}
		createdAt := int64Of(runMap["created_at"])
		messages = append(messages, uiMessage{Role: "user", Content: textOf(orEmpty(runMap["run_input"])), CreatedAt: createdAt})
		var toolCalls []map[string]any
		for _, call := range listOf(runMap["tools"]) {
			if m, ok := call.(map[string]any); ok {
				toolCalls = append(toolCalls, m)
			}
		}
		if extra, ok := runMap["extra_data"].(map[string]any); ok {
			for _, msg := range listOf(extra["reasoning_messages"]) {
				if m, ok := msg.(map[string]any); ok && m["role"] == "tool" {
					toolCalls = append(toolCalls, map[string]any{"role": "tool", "content": m["content"],
						"tool_call_id": m["tool_call_id"], "tool_name": m["tool_name"], "tool_args": m["tool_args"],
						"tool_call_error": m["tool_call_error"], "created_at": m["created_at"]})
				}
			}
		}
		messages = append(messages, uiMessage{Role: "agent", Content: textOf(orEmpty(runMap["content"])), ToolCalls: toolCalls, CreatedAt: createdAt})
	}
	return messages, "", nil
}

// deleteSession follows handleDeleteSession in
// src/components/chat/Sidebar/Sessions/SessionItem.tsx: any 2xx removes the
// entry and, for the open session, clears the chat.
func (ui *chatUI) deleteSession(ctx context.Context, sessionID string) error {
	resp, err := ui.browser.fetch(ctx, http.MethodDelete, "/sessions/"+url.PathEscape(sessionID)+"?db_id="+url.QueryEscape(ui.dbID), ui.jsonHeaders(), nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		ui.failures = append(ui.failures, fmt.Sprintf("toast: failed to delete session (status %d)", resp.StatusCode))
		return nil
	}
	ui.sidebar = slices.DeleteFunc(ui.sidebar, func(s uiSession) bool { return s.SessionID == sessionID })
	if ui.sessionID == sessionID {
		ui.sessionID, ui.messages = "", nil
	}
	return nil
}

// send follows handleStreamResponse in src/hooks/useAIStreamHandler.ts: a
// failed last exchange is dropped, the user's message and an empty reply
// are shown, and the run is posted — to /teams/{team}/runs in team mode,
// /agents/{agent}/runs in agent mode, nowhere (a failed reply) without a
// selection — as multipart form fields message, stream=true and session_id
// (empty for a new chat), with only the bearer token as an explicit header
// (the browser sets the multipart Content-Type).
func (ui *chatUI) send(ctx context.Context, message string) error {
	if n := len(ui.messages); n >= 2 && ui.messages[n-1].Role == "agent" && ui.messages[n-1].StreamingError && ui.messages[n-2].Role == "user" {
		ui.messages = ui.messages[:n-2]
	}
	now := time.Now().Unix()
	ui.messages = append(ui.messages,
		uiMessage{Role: "user", Content: message, CreatedAt: now},
		uiMessage{Role: "agent", ToolCalls: []map[string]any{}, CreatedAt: now + 1})

	var body bytes.Buffer
	form := multipart.NewWriter(&body)
	for _, field := range [][2]string{{"message", message}, {"stream", "true"}, {"session_id", ui.sessionID}} {
		if err := form.WriteField(field[0], field[1]); err != nil {
			return err
		}
	}
	if err := form.Close(); err != nil {
		return err
	}
	header := http.Header{"Content-Type": {form.FormDataContentType()}}
	if ui.token != "" {
		header.Set("Authorization", "Bearer "+ui.token)
	}
	turn := &streamTurn{message: message, startSessionID: ui.sessionID}
	var runPath string
	switch {
	case ui.mode == "team" && ui.teamID != "":
		runPath = "/teams/" + url.PathEscape(ui.teamID) + "/runs"
	case ui.mode == "agent" && ui.agentID != "":
		runPath = "/agents/" + url.PathEscape(ui.agentID) + "/runs"
	default:
		ui.streamFailed(turn, "Please select an agent or team first.")
		return nil
	}
	resp, err := ui.browser.fetch(ctx, http.MethodPost, runPath, header, &body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var failure struct {
			Detail any `json:"detail"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&failure) // a body that is not JSON fails the UI the same way
		ui.streamFailed(turn, fmt.Sprint(failure.Detail))
		return nil
	}
	return readRunStream(resp.Body, func(chunk map[string]any) { ui.applyChunk(ctx, turn, chunk) })
}

// streamTurn is what one send remembers while its stream is read.
type streamTurn struct {
	message        string
	startSessionID string // the URL's session when the message was sent
	lastContent    string // the previous RunContent's text
	newSessionID   string
}

// applyChunk is the onChunk handler of handleStreamResponse in
// src/hooks/useAIStreamHandler.ts, for the chat's text, tool calls, dates
// and errors. Besides, when RunStarted changes the URL's session, the
// session list component (src/components/chat/Sidebar/Sessions/Sessions.tsx)
// reloads that session's runs and replaces the chat with them while the
// stream goes on. That reload is done here at once, the earliest a browser
// could do it: the run may not be saved yet, and then the UI's getSession
// swallows the 404 and the chat stays as streamed; an answer that left the
// in-flight run out would blank the chat instead.
//
// A team's stream goes through the same cases: its Team* events and its
// members' own events (RunStarted, RunContent, ToolCallStarted,
// RunCompleted, … with their agent_id and parent_run_id) are not told
// apart, so a member's text and tool calls land in the one reply, and a
// member's RunCompleted replaces the reply's text until the team's
// TeamRunCompleted replaces it again.
func (ui *chatUI) applyChunk(ctx context.Context, turn *streamTurn, chunk map[string]any) {
	last := func() *uiMessage {
		if n := len(ui.messages); n > 0 && ui.messages[n-1].Role == "agent" {
			return &ui.messages[n-1]
		}
		return nil
	}
	event, _ := chunk["event"].(string)
	switch event {
	case "RunStarted", "TeamRunStarted", "ReasoningStarted", "TeamReasoningStarted":
		sessionID, _ := chunk["session_id"].(string)
		previous := ui.sessionID
		turn.newSessionID, ui.sessionID = sessionID, sessionID
		if sessionID != "" && turn.startSessionID != sessionID &&
			!slices.ContainsFunc(ui.sidebar, func(s uiSession) bool { return s.SessionID == sessionID }) {
			ui.sidebar = append([]uiSession{{SessionID: sessionID, SessionName: turn.message, CreatedAt: int64Of(chunk["created_at"])}}, ui.sidebar...)
		}
		if sessionID != previous {
			messages, problem, err := ui.sessionChat(ctx, sessionID)
			switch {
			case err != nil:
				ui.failures = append(ui.failures, "history reload during the stream: "+err.Error())
			case problem == "":
				ui.messages = messages
			}
		}
	case "ToolCallStarted", "TeamToolCallStarted", "ToolCallCompleted", "TeamToolCallCompleted":
		if m := last(); m != nil {
			m.ToolCalls = mergeToolCalls(chunk, m.ToolCalls)
		}
	case "RunContent", "TeamRunContent":
		m := last()
		content, present := chunk["content"]
		text, isText := content.(string)
		switch {
		case m != nil && isText:
			// Only the first occurrence of the previous chunk's text is cut,
			// as String.prototype.replace with a string pattern does.
			m.Content += strings.Replace(text, turn.lastContent, "", 1)
			turn.lastContent = text
			m.ToolCalls = mergeToolCalls(chunk, m.ToolCalls)
			if createdAt, ok := chunk["created_at"]; ok && createdAt != nil {
				m.CreatedAt = int64Of(createdAt)
			}
		case m != nil && (!present || content != nil):
			// An absent content is undefined, which is not null: the UI
			// appends an empty JSON block.
			block := jsonMarkdown(content)
			m.Content += block
			turn.lastContent = block
		}
	case "RunError", "TeamRunError", "TeamRunCancelled":
		text, _ := chunk["content"].(string)
		if text == "" {
			text = "Error during run"
			if event == "TeamRunCancelled" {
				text = "Run cancelled"
			}
		}
		ui.streamFailed(turn, text)
	case "RunCompleted", "TeamRunCompleted":
		if m := last(); m != nil {
			content, present := chunk["content"]
			if text, isText := content.(string); isText {
				m.Content = text
			} else if !present {
				m.Content = "" // JSON.stringify(undefined) is undefined: the reply shows no text
			} else {
				encoded, _ := json.Marshal(content)
				m.Content = string(encoded)
			}
			m.ToolCalls = mergeToolCalls(chunk, m.ToolCalls)
			if createdAt, ok := chunk["created_at"]; ok && createdAt != nil {
				m.CreatedAt = int64Of(createdAt)
			}
		}
	}
}

// streamFailed marks the reply as failed and drops the turn's new session
// from the sidebar (updateMessagesWithErrorState and the onError handler).
func (ui *chatUI) streamFailed(turn *streamTurn, message string) {
	if n := len(ui.messages); n > 0 && ui.messages[n-1].Role == "agent" {
		ui.messages[n-1].StreamingError = true
	}
	ui.streamingError = message
	if turn.newSessionID != "" {
		ui.sidebar = slices.DeleteFunc(ui.sidebar, func(s uiSession) bool { return s.SessionID == turn.newSessionID })
	}
}

// mergeToolCalls follows processChunkToolCalls and processToolCall in
// src/hooks/useAIStreamHandler.ts: the chunk's single tool, then each of its
// tools, is merged field by field into the call with the same tool_call_id
// (or, without ids, the same name and created_at), else appended.
func mergeToolCalls(chunk map[string]any, calls []map[string]any) []map[string]any {
	var incoming []map[string]any
	if one, ok := chunk["tool"].(map[string]any); ok {
		incoming = append(incoming, one)
	}
	for _, item := range listOf(chunk["tools"]) {
		if m, ok := item.(map[string]any); ok {
			incoming = append(incoming, m)
		}
	}
	for _, call := range incoming {
		fallbackKey := fmt.Sprintf("%v-%v", call["tool_name"], call["created_at"])
		index := slices.IndexFunc(calls, func(existing map[string]any) bool {
			if id, ok := existing["tool_call_id"].(string); ok && id != "" {
				return id == call["tool_call_id"]
			}
			return call["tool_name"] != nil && call["created_at"] != nil &&
				fmt.Sprintf("%v-%v", existing["tool_name"], existing["created_at"]) == fallbackKey
		})
		if index < 0 {
			calls = append(calls, call)
			continue
		}
		merged := map[string]any{}
		for k, v := range calls[index] {
			merged[k] = v
		}
		for k, v := range call {
			merged[k] = v
		}
		calls = slices.Clone(calls)
		calls[index] = merged
	}
	return calls
}

// textOf turns a message content into the text the chat shows, as the
// last step of getSession does: the text items of a list joined by spaces,
// a string as is, anything else as a fenced JSON block.
func textOf(content any) string {
	switch c := content.(type) {
	case string:
		return c
	case []any:
		var texts []string
		for _, item := range c {
			if m, ok := item.(map[string]any); ok && m["type"] == "text" {
				texts = append(texts, fmt.Sprint(m["text"]))
			}
		}
		return strings.Join(texts, " ")
	default:
		return jsonMarkdown(c)
	}
}

// jsonMarkdown follows getJsonMarkdown in src/lib/utils.ts: a fenced json
// block of the value indented by two spaces, an empty object for undefined.
func jsonMarkdown(v any) string {
	if v == nil {
		v = map[string]any{}
	}
	encoded, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return "```\n" + fmt.Sprint(v) + "\n```"
	}
	return "```json\n" + string(encoded) + "\n```"
}

// orEmpty is JavaScript's nullish coalescing to an empty string.
func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

func listOf(v any) []any {
	list, _ := v.([]any)
	return list
}

func int64Of(v any) int64 {
	f, _ := v.(float64)
	return int64(f)
}
