package agentos

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/agnogo/agnogo/internal/apidocs"
	"github.com/agnogo/agnogo/storage"
)

// This file is the one place the API is described: apiRoutes lists every
// route the server can mount, and GET /openapi.json (OpenAPI 3.1) and GET
// /redoc (an HTML page, no scripts, no CDN) are both rendered from it; GET
// /docs is Swagger UI over /openapi.json, served from the binary. A route
// is documented only when the server actually mounts it, and the package's
// tests fail when a mounted route has no entry here.

// apiRoute documents one route.
type apiRoute struct {
	// method and path are the route's ServeMux pattern: "GET",
	// "/agents/{agent_id}". The path of the root route is "/{$}".
	method, path string
	// id is the operationId, unique.
	id string
	// tag groups routes in the document and on /docs.
	tag string
	// summary is one line; description may say more.
	summary, description string
	// open routes answer without credentials.
	open bool
	// query lists the query parameters.
	query []apiParam
	// form lists the form fields of a multipart or urlencoded body.
	form []apiParam
	// body is the JSON request body's schema; nil when there is none.
	body *apiBody
	// ok is the success answer.
	ok apiResponse
	// errors lists the error statuses the route answers, besides 401/403
	// (every protected route) and 500 (every route).
	errors []apiError
	// osdb marks a route of a feature kept in the OS database (osdb.go):
	// when the store does not keep the feature, a 503 stub serves the
	// route's path, and the route is documented all the same.
	osdb bool
}

// apiParam is a query parameter or a form field.
type apiParam struct {
	name        string
	typ         string // string, integer, boolean, object (JSON text), array (JSON text), files (uploads)
	required    bool
	def         any
	enum        []string
	description string
}

// apiBody is a JSON request body.
type apiBody struct {
	schema      string // a name in apiSchemas
	required    bool
	description string
}

// apiResponse is a success answer.
type apiResponse struct {
	status      int
	description string
	// schema names the JSON body's schema in apiSchemas ("" for no body).
	schema string
	// array answers a JSON array of schema.
	array bool
	// sse also answers a text/event-stream of run events (stream=true).
	sse bool
	// contentType overrides application/json (for /docs).
	contentType string
}

// apiError is an error status a route answers, with when.
type apiError struct {
	status int
	when   string
}

// Query parameters shared by many routes.
var (
	qUserID       = apiParam{name: "user_id", typ: "string", description: "Act for this user. Forced to the caller's own id under user isolation, and for a service account that is not an admin."}
	qDBID         = apiParam{name: "db_id", typ: "string", description: "The database (see /config databases); this server has one, so it may be left out."}
	qTable        = apiParam{name: "table", typ: "string", description: "Accepted for compatibility with Agno; this server has one table per kind."}
	qLimit        = apiParam{name: "limit", typ: "integer", def: 20, description: "Page size, 1 to 1000 (more is a 422)."}
	qPage         = apiParam{name: "page", typ: "integer", def: 1, description: "Page number, from 1."}
	qSortOrder    = apiParam{name: "sort_order", typ: "string", def: "desc", enum: []string{"asc", "desc"}, description: "Sort direction."}
	qSessionType  = apiParam{name: "type", typ: "string", def: "agent", enum: []string{"agent", "team", "workflow"}, description: "Session kind (session_type is accepted too)."}
	qRunSessionID = apiParam{name: "session_id", typ: "string", required: true, description: "The session the run belongs to."}
)

// Errors shared by many routes.
var (
	eValidation = apiError{http.StatusUnprocessableEntity, "a field is missing or does not parse (the detail lists each one)"}
	eNoStore    = apiError{http.StatusServiceUnavailable, "the server has no database"}
	eBadRequest = apiError{http.StatusBadRequest, "the request is invalid (the detail says why)"}
	eDBNotFound = apiError{http.StatusNotFound, "db_id names a database this server does not have"}
	eNoQueue    = apiError{http.StatusServiceUnavailable, "the server has no durable queue (queue.durable: false)"}
)

// apiRoutes is every route the server can mount, in the order the document
// lists them: the system's, the same routes for agents and for teams, then
// the rest, and last the features kept in the OS database. It is built on
// first use, the first request for the documentation: a server nobody asks
// for it does not keep it in memory.
var apiRoutes = sync.OnceValue(func() []apiRoute {
	return slices.Concat(systemAPIRoutes, componentAPIRoutes(agentAPI), componentAPIRoutes(teamAPI), workflowAPIRoutes(), otherAPIRoutes,
		osdbAPIRoutes(scheduleTag, "schedules", scheduleAPIRoutes),
		osdbAPIRoutes("Approvals", "approvals", approvalAPIRoutes),
		osdbAPIRoutes(serviceAccountsTag, "service accounts", serviceAccountAPIRoutes))
})

// systemAPIRoutes document the routes a client probes first.
var systemAPIRoutes = []apiRoute{
	// System.
	{
		method: "GET", path: "/{$}", id: "root", tag: "System", open: true,
		summary: "Name of the AgentOS and links to health, info and docs",
		ok:      apiResponse{status: 200, description: "The server's name and version.", schema: "Root"},
	},
	{
		method: "GET", path: "/health", id: "health", tag: "System", open: true,
		summary: "Liveness check",
		ok:      apiResponse{status: 200, description: `{"status": "ok"} and when the server started.`, schema: "Health"},
	},
	{
		method: "GET", path: "/info", id: "get_info", tag: "System", open: true,
		summary: "Name, id and version of the AgentOS",
		ok:      apiResponse{status: 200, description: "The server's identity.", schema: "Info"},
	},
	{
		method: "GET", path: "/config", id: "get_config", tag: "System",
		summary: "What the AgentOS serves: its agents, teams, workflows and databases",
		ok:      apiResponse{status: 200, description: "The AgentOS configuration.", schema: "Config"},
	},
	{
		method: "GET", path: "/models", id: "get_models", tag: "System",
		summary: "The models the agents use, each once",
		ok:      apiResponse{status: 200, description: "A JSON array of {id, provider}.", schema: "ModelRef", array: true},
	},
	{
		method: "GET", path: "/openapi.json", id: "get_openapi", tag: "System", open: true,
		summary: "This document: OpenAPI 3.1 description of every mounted route",
		ok:      apiResponse{status: 200, description: "The OpenAPI document.", schema: "OpenAPI"},
	},
	{
		method: "GET", path: "/docs", id: "get_docs", tag: "System", open: true,
		summary: "An interactive explorer of this document (Swagger UI, served from the binary)",
		ok:      apiResponse{status: 200, description: "An HTML page that loads the explorer from /docs/assets/.", contentType: "text/html"},
	},
	{
		method: "GET", path: "/docs/assets/{file}", id: "get_docs_asset", tag: "System", open: true,
		summary: "A script, stylesheet or licence file of the explorer",
		ok:      apiResponse{status: 200, description: "The file, gzipped when the client accepts it.", contentType: "text/javascript"},
	},
	{
		method: "GET", path: "/redoc", id: "get_redoc", tag: "System", open: true,
		summary: "The routes as a self-contained HTML reference page, with no script",
		ok:      apiResponse{status: 200, description: "An HTML page listing every route.", contentType: "text/html"},
	},
}

// componentAPI describes the routes of one component kind, agents or
// teams: the same routes and handlers under /agents and /teams.
type componentAPI struct {
	// plural is the path's first segment and the tag's lower case:
	// "agents"; param is the path wildcard naming one: "agent_id".
	plural, param string
	// one is the kind in a sentence ("agent"), a its article ("an").
	one, a string
	// tag groups the routes; schema names the listing's item schema.
	tag, schema string
	// events describes the stream of a run.
	events string
	// createForm lists the form fields of run creation beyond the shared
	// ones.
	createForm []apiParam
}

// The documented components.
var (
	agentAPI = componentAPI{plural: "agents", param: "agent_id", one: "agent", a: "an", tag: "Agents", schema: "Agent",
		events: "RunStarted, RunContent deltas, tool-call events, then RunCompleted (whose content is the full answer), " +
			"RunError, RunCancelled or RunPaused"}
	teamAPI = componentAPI{plural: "teams", param: "team_id", one: "team", a: "a", tag: "Teams", schema: "Team",
		events: "the team's own events under their Team* names — TeamRunStarted, TeamRunContent deltas, TeamToolCallStarted " +
			"for each delegation, then TeamRunCompleted (whose content is the full answer), TeamRunError, TeamRunCancelled or " +
			"TeamRunPaused — with its members' events in between under their own names (RunStarted … RunCompleted, with the " +
			"member's agent_id and run_id and parent_run_id the team's run)",
		createForm: []apiParam{{name: "monitor", typ: "boolean", def: true, description: "Accepted for compatibility with Agno; not used."}}}
	workflowAPI = componentAPI{plural: "workflows", param: "workflow_id", one: "workflow", a: "a", tag: "Workflows", schema: "Workflow",
		events: "WorkflowStarted, then for each step StepStarted … StepCompleted (Loop*, Parallel*, Condition*, Router* and Steps* " +
			"events around composite steps), with the events of the steps' agents and teams in between under their own names " +
			"(stamped with workflow_id, workflow_run_id, step_id, step_name, step_index), then WorkflowCompleted (content, " +
			"step_results, step_executor_runs), WorkflowError, WorkflowCancelled or WorkflowPaused (step_requirements)",
		createForm: []apiParam{
			{name: "version", typ: "string", description: "Accepted for compatibility with Agno; agnogo's workflows have one version."},
			{name: "factory_input", typ: "object", description: "Accepted for compatibility with Agno; not used."},
		}}
)

// workflowAPIRoutes documents the workflow routes: an agent's run routes
// with a workflow's continue form (step_requirements), and no
// checkpoints or session forks.
func workflowAPIRoutes() []apiRoute {
	var out []apiRoute
	for _, r := range componentAPIRoutes(workflowAPI) {
		switch {
		case strings.Contains(r.path, "/checkpoints"), strings.HasSuffix(r.path, "/fork"):
			continue
		case strings.HasSuffix(r.path, "/continue"):
			r.summary = "Continue a paused workflow run"
			r.description = "A form. Resolves the step requirements of a PAUSED workflow run and runs it on from the step it paused at, " +
				"under the same run id. A step that waits for a confirmation takes confirmed true or false (false follows the step's " +
				"on_reject); one that asks for input takes user_input (each field of its user_input_schema, of its field_type); a router " +
				"that lets a person choose takes selected_choices; an output review takes confirmed, with rejection_feedback or " +
				"edited_output; a step whose agent or team paused takes executor_requirements, each with confirmation and " +
				"tool_execution.confirmed (or its result or user input) set."
			r.form = []apiParam{
				{name: "step_requirements", typ: "array", required: true, description: "JSON array of the run's step_requirements, resolved, matched by step_id."},
				{name: "session_id", typ: "string", description: "The session the run belongs to."},
				{name: "stream", typ: "boolean", def: true, description: "Answer with an SSE stream (true) or the finished run as JSON (false)."},
				{name: "background", typ: "boolean", def: false, description: "Continue after the request ends (a run paused on the durable queue continues only this way)."},
				{name: "user_id", typ: "string", description: "The user the run belongs to. Forced to the caller's own id under user isolation."},
				{name: "factory_input", typ: "object", description: "Accepted for compatibility with Agno; not used."},
			}
			r.errors = []apiError{
				{http.StatusBadRequest, "the form does not parse, a step requirement is left unresolved, or an answer is of the wrong type or names a route the step does not have; the detail says what to send"},
				{http.StatusNotFound, "no such workflow, or no such run of it"},
				{http.StatusConflict, "the run is not PAUSED (it ended, or was cancelled)"},
				eValidation,
				{http.StatusServiceUnavailable, "the server is shutting down"},
			}
		}
		out = append(out, r)
	}
	return out
}

// componentAPIRoutes documents the routes of a component kind.
func componentAPIRoutes(c componentAPI) []apiRoute {
	base := "/" + c.plural + "/{" + c.param + "}"
	notFound := apiError{http.StatusNotFound, "no " + c.one + " has this id"}
	runNotFound := apiError{http.StatusNotFound, "no such " + c.one + ", or no such run of it"}
	sessionQuery := apiParam{name: "session_id", typ: "string", description: "The session the run belongs to; a run of another session is not found."}
	return []apiRoute{
		{
			method: "GET", path: "/" + c.plural, id: "list_" + c.plural, tag: c.tag,
			summary: "List the " + c.plural + " the caller may see",
			ok:      apiResponse{status: 200, description: "A JSON array of " + c.plural + " (not paginated).", schema: c.schema, array: true},
		},
		{
			method: "GET", path: base, id: "get_" + c.one, tag: c.tag,
			summary: "One " + c.one,
			ok:      apiResponse{status: 200, description: "The " + c.one + ".", schema: c.schema},
			errors:  []apiError{notFound},
		},
		{
			method: "POST", path: base + "/runs", id: "create_" + c.one + "_run", tag: c.tag,
			summary: "Run " + c.a + " " + c.one + " on a message",
			description: "The request is a multipart/form-data or application/x-www-form-urlencoded form, not JSON. " +
				"With stream=true (the default) the answer is a Server-Sent-Events stream, one `event: Name` / `data: {JSON}` " +
				"frame per run event: " + c.events + ". With stream=false the answer is the finished run as JSON. " +
				"A client that disconnects cancels the run. Form fields that are not listed are passed to the run as metadata.",
			form: append([]apiParam{
				{name: "message", typ: "string", required: true, description: "The user's message."},
				{name: "stream", typ: "boolean", def: true, description: "Answer with an SSE stream of run events (true) or the finished run as JSON (false)."},
				{name: "session_id", typ: "string", description: "Continue this session; a new session id is made when left out."},
				{name: "user_id", typ: "string", description: "The user the run belongs to. Forced to the caller's own id under user isolation."},
				{name: "session_state", typ: "object", description: "JSON object merged into the session state."},
				{name: "metadata", typ: "object", description: "JSON object stored on the run."},
				{name: "dependencies", typ: "object", description: "JSON object of run dependencies (accepted, checked, not used by native agents)."},
				{name: "output_schema", typ: "object", description: `JSON Schema of a structured answer for this run (its root "type": "object"); the run's content is then the parsed object and content_type the schema's title.`},
				{name: "files", typ: "files", description: "Uploaded files (multipart only), each an image, audio clip, video or document (PDF, text, Markdown, CSV, JSON, HTML, Office), classified by content type or, for application/octet-stream, by extension."},
				{name: "files_metadata", typ: "array", description: "JSON array of objects, matched to files by position (accepted for compatibility)."},
				{name: "images", typ: "array", description: "JSON array of images ({url} or {content: base64, mime_type})."},
				{name: "audio", typ: "array", description: "JSON array of audio clips."},
				{name: "videos", typ: "array", description: "JSON array of videos."},
				{name: "input_files", typ: "array", description: "JSON array of files ({content: base64, mime_type, filename})."},
				{name: "background", typ: "boolean", def: false, description: "Run after the request ends: the run is stored as PENDING and the answer is 202 {run_id, session_id, status} (stream=false) or the run's event stream, which the client may leave without stopping the run (stream=true). Poll GET " + base + "/runs/{run_id}. Needs a database."},
			}, c.createForm...),
			ok: apiResponse{status: 200, description: "The finished run (stream=false) or its event stream (stream=true). A background run with stream=false answers 202 {run_id, session_id, status: \"PENDING\"} instead.", schema: "RunOutput", sse: true},
			errors: []apiError{
				{http.StatusBadRequest, "the form does not parse, an uploaded file is empty or of an unsupported type, or background=true without a database"},
				notFound, eValidation,
				{http.StatusServiceUnavailable, "the server is shutting down"},
			},
		},
		{
			method: "GET", path: base + "/runs", id: "list_" + c.one + "_runs", tag: c.tag,
			summary: "The " + c.one + "'s runs in one session",
			query: []apiParam{
				qRunSessionID,
				{name: "status", typ: "string", enum: []string{"PENDING", "RUNNING", "COMPLETED", "PAUSED", "CANCELLED", "ERROR"}, description: "Only runs with this status."},
				qUserID,
			},
			ok:     apiResponse{status: 200, description: "A JSON array of runs, oldest first.", schema: "RunOutput", array: true},
			errors: []apiError{notFound, eValidation, eNoStore},
		},
		{
			method: "GET", path: base + "/runs/{run_id}", id: "get_" + c.one + "_run", tag: c.tag,
			summary: "One run of the " + c.one,
			query:   []apiParam{sessionQuery, qUserID},
			ok:      apiResponse{status: 200, description: "The run.", schema: "RunOutput"},
			errors:  []apiError{runNotFound, eNoStore},
		},
		{
			method: "POST", path: base + "/runs/{run_id}/cancel", id: "cancel_" + c.one + "_run", tag: c.tag,
			summary: "Cancel a run in flight",
			description: "The run stops at its next step and is stored as CANCELLED; its stream ends with " + c.cancelled() + ". " +
				"Cancelling a run that already ended answers 200 and changes nothing.",
			query:  []apiParam{{name: "session_id", typ: "string", description: "The session the run belongs to."}, qUserID},
			ok:     apiResponse{status: 200, description: "An empty JSON object.", schema: "Empty"},
			errors: []apiError{runNotFound},
		},
		{
			method: "POST", path: base + "/runs/{run_id}/continue", id: "continue_" + c.one + "_run", tag: c.tag,
			summary: "Continue a run: resolve a pause, add a message, or fork",
			description: "A form, like run creation. Resolves the requirements of a PAUSED run (tools), or continues a finished " +
				"run with a new message (input), from its end or an earlier message (continue_from), optionally on a copy (fork).",
			form: []apiParam{
				{name: "session_id", typ: "string", required: true, description: "The session the run belongs to."},
				{name: "tools", typ: "array", description: "JSON array of tool executions: the paused run's calls, answered — confirmed true or false, " +
					"the values of user_input_schema filled in (each of its field_type), or the result of an external execution."},
				{name: "input", typ: "string", description: "A new user message."},
				{name: "continue_from", typ: "string", def: "end", description: `"end", "last_user", or a message index.`},
				{name: "fork", typ: "boolean", def: false, description: "Continue on a copy of the run, with a new run id."},
				{name: "stream", typ: "boolean", def: true, description: "Answer with an SSE stream (true) or the finished run as JSON (false)."},
				{name: "user_id", typ: "string", description: "The user the run belongs to. Forced to the caller's own id under user isolation."},
			},
			ok: apiResponse{status: 200, description: "The continued run (stream=false) or its event stream (stream=true).", schema: "RunOutput", sse: true},
			errors: []apiError{
				{http.StatusBadRequest, "the form does not parse, continue_from is invalid, a paused call is left unanswered, tools names a call the run " +
					"does not have or a value of the wrong type, or the " + c.one + "'s runs cannot be continued; the detail says what to send"},
				runNotFound,
				{http.StatusConflict, "the run cannot be continued (for example it was cancelled)"},
				eValidation,
				{http.StatusServiceUnavailable, "the server is shutting down"},
			},
		},
		{
			method: "POST", path: base + "/runs/{run_id}/resume", id: "resume_" + c.one + "_run", tag: c.tag,
			summary: "Pick up a run's event stream again",
			description: "An SSE stream of the run's events after last_event_index (every streamed event carries its event_index). " +
				"A finished run: a `replay` frame, then the events. A run in flight: `catch_up` and the missed events, `subscribed`, " +
				"then its live events until it ends, with a `: heartbeat` comment after 30 s of silence. A run no longer in the " +
				"server's event stream is answered from the events stored on its row (" + c.plural + " with store_events). An unknown run, " +
				"or one of another user, gets an `error` frame.",
			form: []apiParam{
				{name: "last_event_index", typ: "integer", def: -1, description: "The last event_index the client saw; -1 (or left out) for every event."},
				{name: "session_id", typ: "string", description: "The session the run belongs to."},
				{name: "user_id", typ: "string", description: "The user the run belongs to. Forced to the caller's own id under user isolation."},
			},
			ok:     apiResponse{status: 200, description: "The run's event stream.", sse: true},
			errors: []apiError{notFound, eValidation},
		},
		{
			method: "GET", path: base + "/runs/{run_id}/checkpoints", id: "list_" + c.one + "_run_checkpoints", tag: c.tag,
			summary: "The places a run can be continued from",
			description: "Derived from the stored run: every message marked as a checkpoint (the last tool result of a batch), " +
				"the run's last checkpoint, and the end of its messages. Continue from one with POST …/continue and " +
				"continue_from=<message_index>.",
			query:  []apiParam{sessionQuery, qUserID},
			ok:     apiResponse{status: 200, description: "{run_id, session_id, checkpoints: [...]}, in message order.", schema: "Checkpoints"},
			errors: []apiError{runNotFound, eNoStore},
		},
		{
			method: "GET", path: base + "/runs/{run_id}/checkpoints/{message_index}", id: "get_" + c.one + "_run_checkpoint", tag: c.tag,
			summary:     "The run as of one checkpoint",
			description: "The run cut after message_index messages (moved down so no tool call is separated from its results), with the tools and requirements of dropped messages pruned. The stored run is not changed.",
			query:       []apiParam{sessionQuery, qUserID},
			ok:          apiResponse{status: 200, description: "{checkpoint, snapshot}: the entry and the truncated run.", schema: "CheckpointSnapshot"},
			errors: []apiError{
				{http.StatusBadRequest, "message_index is beyond the run's messages"},
				runNotFound, eValidation, eNoStore,
			},
		},
		{
			method: "POST", path: base + "/sessions/{session_id}/fork", id: "fork_" + c.one + "_session", tag: c.tag,
			summary:     "Copy a session into a new one",
			description: "Deep-copies the session and its runs" + c.memberRuns() + "; every copied run gets a new run id.",
			query:       []apiParam{qUserID, qDBID},
			ok:          apiResponse{status: 200, description: "The new session's id and the one it was forked from.", schema: "ForkedSession"},
			errors:      []apiError{{http.StatusNotFound, "no such " + c.one + ", or no session of it with this id"}, eDBNotFound, eValidation, eNoStore},
		},
	}
}

// cancelled is the name of the event that ends a cancelled run's stream.
func (c componentAPI) cancelled() string {
	switch c.one {
	case "team":
		return "TeamRunCancelled"
	case "workflow":
		return "WorkflowCancelled"
	}
	return "RunCancelled"
}

// memberRuns says what else a fork copies.
func (c componentAPI) memberRuns() string {
	if c.one == "team" {
		return " (the members' runs too)"
	}
	return ""
}

// otherAPIRoutes document the routes after the agents' and teams'.
var otherAPIRoutes = []apiRoute{
	// The workflows' WebSocket (websocket.go).
	{
		method: "GET", path: "/workflows/ws", id: "workflow_websocket", tag: "Workflows", open: true,
		summary: "WebSocket: run, follow, reconnect to and continue workflow runs",
		description: "Agno's workflow WebSocket. Each message, both ways, is a JSON text message of at most 1 MiB. The server sends " +
			"{event: connected, requires_auth} first. The client sends {action: …}: authenticate {token} (the security key, a JWT or a " +
			"service account's agno_pat_ token, checked as the Authorization header is: a service account's binds the connection to its " +
			"account's scopes in every auth mode, even without authentication; answered authenticated or auth_error — every other action " +
			"answers auth_required until then, unless the upgrade carried a valid Authorization header, or the server has no authentication " +
			"and the upgrade no refused token); ping (pong); " +
			"start-workflow {workflow_id, message, session_id, user_id, session_state, metadata} (scope workflows:run; a background run, " +
			"which goes on when the socket closes); reconnect {run_id, workflow_id, session_id, last_event_index} (the run's events after " +
			"last_event_index: replay for a finished run, else catch_up then subscribed and the live events); continue-workflow " +
			"{workflow_id, run_id, step_requirements, session_id} (a PAUSED run, as POST …/runs/{run_id}/continue). A run's events are " +
			"sent one per message, each the JSON of its SSE frame with its event_index, up to WorkflowCompleted, WorkflowError, " +
			"WorkflowCancelled or WorkflowPaused. A refused or malformed action answers {event: error, error} saying what to fix; the " +
			"connection stays open. Under user isolation user_id is the caller's own, and another user's run is not found.",
		ok: apiResponse{status: http.StatusSwitchingProtocols, description: "Switching to the WebSocket protocol."},
		errors: []apiError{
			{http.StatusBadRequest, "the WebSocket handshake is malformed"},
			{http.StatusForbidden, "the Origin is not an allowed browser origin (the CORS origins)"},
			{http.StatusUpgradeRequired, "the request is not a WebSocket upgrade"},
			{http.StatusServiceUnavailable, "the server is shutting down"},
		},
	},

	// Databases.
	{
		method: "POST", path: "/databases/all/migrate", id: "migrate_all_databases", tag: "Database",
		summary:     "Migrate every database's schema",
		description: "Runs the schema migrations agnogo migrate runs, forward only, up to target_version (default: the newest this server writes). 207 when a database failed: failed maps its id to what failed; the cause is in the server log.",
		query:       []apiParam{{name: "target_version", typ: "string", description: "A dotted version such as 3.0.0; left out, the newest."}},
		ok:          apiResponse{status: 200, description: "{message, skipped, tables}; 207 {message, failed, skipped} when a database failed.", schema: "MigrationResult"},
		errors:      []apiError{{http.StatusBadRequest, "target_version is malformed, newer than this server, or older than the database"}, eNoStore},
	},
	{
		method: "POST", path: "/databases/{db_id}/migrate", id: "migrate_database", tag: "Database",
		summary:     "Migrate one database's schema",
		description: "As /databases/all/migrate, for one database.",
		query:       []apiParam{{name: "target_version", typ: "string", description: "A dotted version such as 3.0.0; left out, the newest."}},
		ok:          apiResponse{status: 200, description: "{message, tables}: what was done to each table.", schema: "MigrationResult"},
		errors: []apiError{
			{http.StatusBadRequest, "target_version is malformed, newer than this server, or older than the database"},
			{http.StatusNotFound, "no database with this id"}, eNoStore,
		},
	},

	// The durable queue.
	{
		method: "GET", path: "/queue/jobs", id: "list_queue_jobs", tag: "Queue",
		summary:     "List the durable queue's jobs (background runs), one page at a time",
		description: "Admin only. A job is one background run on the durable queue; its status is queued, running, paused, completed, failed or cancelled, and run_status is the run's own.",
		query: []apiParam{
			{name: "status", typ: "string", enum: []string{"queued", "running", "paused", "completed", "failed", "cancelled"}, description: "Only jobs in this state; repeat it (or separate with commas) for several."},
			{name: "limit", typ: "integer", def: 20, description: "Page size, 1 to 1000 (more is a 422)."},
			qPage,
			{name: "sort_by", typ: "string", def: "created_at", enum: []string{"created_at"}, description: "Sort key."},
			qSortOrder,
		},
		ok:     apiResponse{status: 200, description: "A page of jobs (the envelope).", schema: "JobPage"},
		errors: []apiError{eValidation, eNoQueue},
	},
	{
		method: "GET", path: "/queue/jobs/{job_id}", id: "get_queue_job", tag: "Queue",
		summary: "One job of the durable queue",
		ok:      apiResponse{status: 200, description: "The job.", schema: "Job"},
		errors:  []apiError{{http.StatusNotFound, "no job has this id (it may have been deleted by retention)"}, eNoQueue},
	},
	{
		method: "POST", path: "/queue/jobs/{job_id}/requeue", id: "requeue_queue_job", tag: "Queue",
		summary:     "Run a failed or cancelled job again",
		description: "Admin only. The run goes on from its last completed step: completed model and tool calls are not made again. Its row goes back to PENDING and it gets exactly one more attempt. Refused with 409 (and Retry-After) within the queue's lock grace (queue.lock_grace_seconds, 60 by default) of the job's end, while a worker may still hold it, unless force=true.",
		query: []apiParam{
			{name: "force", typ: "boolean", def: false, description: "Requeue even within the lock grace of the job's end."},
			{name: "clear_cancellation", typ: "boolean", def: false, description: "Accepted for Agno's clients; a requeue always clears the cancellation."},
		},
		ok: apiResponse{status: 200, description: "The job, queued again.", schema: "Job"},
		errors: []apiError{
			{http.StatusBadRequest, "the job is not failed or cancelled"},
			{http.StatusNotFound, "no job has this id"},
			{http.StatusConflict, "the job ended less than the lock grace ago; retry after Retry-After seconds, or send force=true"},
			eValidation, eNoQueue,
		},
	},
	{
		method: "GET", path: "/queue/stats", id: "get_queue_stats", tag: "Queue",
		summary: "How many jobs are in each state, and how long the oldest queued one has waited",
		ok:      apiResponse{status: 200, description: "The counts.", schema: "QueueStats"},
		errors:  []apiError{eNoQueue},
	},

	// Sessions.
	{
		method: "GET", path: "/sessions", id: "list_sessions", tag: "Sessions",
		summary: "List sessions, newest first, one page at a time",
		query: []apiParam{
			qSessionType,
			{name: "component_id", typ: "string", description: "Only sessions of this agent (team, workflow)."},
			qUserID,
			{name: "session_name", typ: "string", description: "Only sessions whose name contains this text."},
			qLimit, qPage,
			{name: "sort_by", typ: "string", def: "created_at", enum: []string{"created_at", "updated_at", "session_id", "session_name"}, description: "Sort key."},
			qSortOrder, qDBID, qTable,
		},
		ok:     apiResponse{status: 200, description: "A page of sessions (the envelope, never a bare array).", schema: "SessionPage"},
		errors: []apiError{eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "POST", path: "/sessions", id: "create_session", tag: "Sessions",
		summary: "Create an empty session",
		query:   []apiParam{qSessionType, qDBID},
		body:    &apiBody{schema: "CreateSession", description: "The new session; every field is optional."},
		ok:      apiResponse{status: 201, description: "The session.", schema: "Session"},
		errors:  []apiError{eDBNotFound, {http.StatusConflict, "a session with this id exists"}, eValidation, eNoStore},
	},
	{
		method: "DELETE", path: "/sessions", id: "delete_sessions", tag: "Sessions",
		summary: "Delete several sessions and their runs",
		query:   []apiParam{qUserID, qDBID, qTable},
		body:    &apiBody{schema: "DeleteSessions", required: true, description: "The ids to delete."},
		ok:      apiResponse{status: 204, description: "Deleted (ids that do not exist, or are another user's, are skipped)."},
		errors:  []apiError{{http.StatusBadRequest, "session_types is not as long as session_ids"}, eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "GET", path: "/sessions/{session_id}", id: "get_session", tag: "Sessions",
		summary: "One session",
		query:   []apiParam{qSessionType, qUserID, qDBID, qTable},
		ok:      apiResponse{status: 200, description: "The session.", schema: "Session"},
		errors:  []apiError{{http.StatusNotFound, "no such session (of this type)"}, eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "PATCH", path: "/sessions/{session_id}", id: "update_session", tag: "Sessions",
		summary: "Change a session's name, state, metadata or summary",
		query:   []apiParam{qSessionType, qUserID, qDBID, qTable},
		body:    &apiBody{schema: "UpdateSession", required: true, description: "The fields to change; the others are kept."},
		ok:      apiResponse{status: 200, description: "The updated session.", schema: "Session"},
		errors:  []apiError{{http.StatusNotFound, "no such session"}, eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "DELETE", path: "/sessions/{session_id}", id: "delete_session", tag: "Sessions",
		summary: "Delete a session and its runs",
		query:   []apiParam{qUserID, qDBID, qTable},
		ok:      apiResponse{status: 204, description: "Deleted."},
		errors:  []apiError{{http.StatusNotFound, "no such session"}, eDBNotFound, eNoStore},
	},
	{
		method: "POST", path: "/sessions/{session_id}/rename", id: "rename_session", tag: "Sessions",
		summary: "Rename a session",
		query:   []apiParam{qSessionType, qUserID, qDBID, qTable},
		body:    &apiBody{schema: "RenameSession", required: true, description: "The new name."},
		ok:      apiResponse{status: 200, description: "The renamed session.", schema: "Session"},
		errors:  []apiError{{http.StatusNotFound, "no such session"}, eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "GET", path: "/sessions/{session_id}/runs", id: "list_session_runs", tag: "Sessions",
		summary:     "A session's runs, oldest first, up to 1000 at a time",
		description: "While a run of the session is still in flight, the list includes it (status RUNNING). The answer is one page of the runs: without limit and page, the first 1000; the X-Total-Count header says how many runs match in all.",
		query: []apiParam{
			qSessionType, qUserID,
			{name: "created_after", typ: "integer", description: "Only runs created at or after this time (epoch seconds)."},
			{name: "created_before", typ: "integer", description: "Only runs created at or before this time (epoch seconds)."},
			{name: "limit", typ: "integer", def: 1000, description: "Page size, 1 to 1000 (more is a 422)."},
			qPage, qDBID, qTable,
		},
		ok:     apiResponse{status: 200, description: "A JSON array of runs (one page; X-Total-Count: the runs in all).", schema: "RunOutput", array: true},
		errors: []apiError{{http.StatusNotFound, "no such session"}, eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "GET", path: "/sessions/{session_id}/runs/{run_id}", id: "get_session_run", tag: "Sessions",
		summary: "One run of a session",
		query:   []apiParam{qSessionType, qUserID, qDBID, qTable},
		ok:      apiResponse{status: 200, description: "The run.", schema: "RunOutput"},
		errors:  []apiError{{http.StatusNotFound, "no such session, or no such run in it"}, eDBNotFound, eValidation, eNoStore},
	},

	// Memories.
	{
		method: "POST", path: "/memories", id: "create_memory", tag: "Memories",
		summary: "Store a user memory",
		query:   []apiParam{qDBID, qTable},
		body:    &apiBody{schema: "MemoryInput", required: true, description: "The memory; memory is required, and user_id unless the caller is user-scoped."},
		ok:      apiResponse{status: 200, description: "The stored memory.", schema: "Memory"},
		errors:  []apiError{{http.StatusBadRequest, "no user_id"}, eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "GET", path: "/memories", id: "list_memories", tag: "Memories",
		summary: "List user memories, one page at a time",
		query: []apiParam{
			qUserID,
			{name: "agent_id", typ: "string", description: "Only memories written by this agent."},
			{name: "team_id", typ: "string", description: "Only memories written by this team."},
			{name: "topics", typ: "string", description: "Only memories with one of these topics (repeat the parameter, or separate with commas)."},
			{name: "search_content", typ: "string", description: "Only memories whose text contains this."},
			qLimit, qPage,
			{name: "sort_by", typ: "string", def: "updated_at", enum: []string{"updated_at", "created_at", "memory_id"}, description: "Sort key."},
			qSortOrder, qDBID, qTable,
		},
		ok:     apiResponse{status: 200, description: "A page of memories.", schema: "MemoryPage"},
		errors: []apiError{eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "DELETE", path: "/memories", id: "delete_memories", tag: "Memories",
		summary: "Delete several memories",
		query:   []apiParam{qUserID, qDBID, qTable},
		body:    &apiBody{schema: "DeleteMemories", required: true, description: `{"memory_ids": [...], "user_id": ...}, or a bare JSON array of ids.`},
		ok:      apiResponse{status: 204, description: "Deleted (ids that do not exist are skipped)."},
		errors:  []apiError{eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "GET", path: "/memories/{memory_id}", id: "get_memory", tag: "Memories",
		summary: "One memory",
		query:   []apiParam{qUserID, qDBID, qTable},
		ok:      apiResponse{status: 200, description: "The memory.", schema: "Memory"},
		errors:  []apiError{{http.StatusNotFound, "no such memory"}, eDBNotFound, eNoStore},
	},
	{
		method: "PATCH", path: "/memories/{memory_id}", id: "update_memory", tag: "Memories",
		summary: "Change a memory's text or topics",
		query:   []apiParam{qUserID, qDBID, qTable},
		body:    &apiBody{schema: "MemoryUpdate", required: true, description: "The fields to change; the others are kept."},
		ok:      apiResponse{status: 200, description: "The updated memory.", schema: "Memory"},
		errors:  []apiError{{http.StatusNotFound, "no such memory"}, eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "DELETE", path: "/memories/{memory_id}", id: "delete_memory", tag: "Memories",
		summary: "Delete a memory",
		query:   []apiParam{qUserID, qDBID, qTable},
		ok:      apiResponse{status: 204, description: "Deleted."},
		errors:  []apiError{{http.StatusNotFound, "no such memory"}, eDBNotFound, eNoStore},
	},
	{
		method: "GET", path: "/memory_topics", id: "list_memory_topics", tag: "Memories",
		summary: "Every topic used by the memories",
		query:   []apiParam{qUserID, qDBID, qTable},
		ok:      apiResponse{status: 200, description: "A JSON array of topics, sorted.", schema: "Topic", array: true},
		errors:  []apiError{eDBNotFound, eNoStore},
	},
	{
		method: "GET", path: "/user_memory_stats", id: "user_memory_stats", tag: "Memories",
		summary: "How many memories each user has, one page at a time",
		query:   []apiParam{qUserID, qLimit, qPage, qDBID, qTable},
		ok:      apiResponse{status: 200, description: "A page of per-user counts.", schema: "UserMemoryStatsPage"},
		errors:  []apiError{eDBNotFound, eValidation, eNoStore},
	},

	// Traces.
	{
		method: "GET", path: "/traces", id: "get_traces", tag: "Traces",
		summary:     "List traces, newest first",
		description: "The traces the tracing exporter wrote (tracing.enabled); empty when tracing is off. Under user isolation a caller sees only their own.",
		query: []apiParam{
			{name: "run_id", typ: "string", description: "Only the trace of this run."},
			{name: "session_id", typ: "string", description: "Only traces of this session."},
			qUserID,
			{name: "agent_id", typ: "string", description: "Only traces of this agent."},
			{name: "team_id", typ: "string", description: "Only traces of this team."},
			{name: "workflow_id", typ: "string", description: "Only traces of this workflow."},
			{name: "status", typ: "string", enum: []string{"OK", "ERROR"}, description: "Only traces with this status."},
			{name: "start_time", typ: "string", description: "Only traces that started at or after this time (ISO-8601)."},
			{name: "end_time", typ: "string", description: "Only traces that ended at or before this time (ISO-8601)."},
			qPage, qLimit, qDBID,
		},
		ok:     apiResponse{status: 200, description: "A page of trace summaries.", schema: "TraceSummaryPage"},
		errors: []apiError{eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "GET", path: "/traces/filter-schema", id: "get_trace_filter_schema", tag: "Traces",
		summary: "The fields and operators POST /traces/search filters on",
		ok:      apiResponse{status: 200, description: "The filter's fields.", schema: "TraceFilterSchema"},
		errors:  []apiError{eNoStore},
	},
	{
		method: "GET", path: "/traces/{trace_id}", id: "get_trace", tag: "Traces",
		summary: "A trace with its spans as a tree (children under spans)",
		query: []apiParam{
			{name: "span_id", typ: "string", description: "Answer this span's node alone."},
			{name: "run_id", typ: "string", description: "The run the trace must belong to."},
			qDBID,
		},
		ok:     apiResponse{status: 200, description: "The trace (or the span's node, with span_id).", schema: "TraceDetail"},
		errors: []apiError{{http.StatusNotFound, "no such trace (or it is another user's), or no such span in it"}, eDBNotFound, eNoStore},
	},
	{
		method: "GET", path: "/trace_session_stats", id: "get_trace_session_stats", tag: "Traces",
		summary: "How many traces each session has",
		query: []apiParam{qUserID,
			{name: "agent_id", typ: "string", description: "Only this agent's traces."},
			{name: "team_id", typ: "string", description: "Only this team's traces."},
			{name: "workflow_id", typ: "string", description: "Only this workflow's traces."},
			{name: "start_time", typ: "string", description: "Only traces that started at or after this time (ISO-8601)."},
			{name: "end_time", typ: "string", description: "Only traces that ended at or before this time (ISO-8601)."},
			qPage, qLimit, qDBID},
		ok:     apiResponse{status: 200, description: "A page of per-session counts.", schema: "TraceSessionStatsPage"},
		errors: []apiError{eDBNotFound, eValidation, eNoStore},
	},
	{
		method: "POST", path: "/traces/search", id: "search_traces", tag: "Traces",
		summary:     "Search traces with a filter expression",
		description: "Agno's filter language: EQ, NEQ, GT, GTE, LT, LTE, CONTAINS, STARTSWITH and IN (with values) on a field, AND and OR of conditions, NOT of a condition; 10 levels at most. group_by run answers trace details, session per-session counts.",
		query:       []apiParam{qDBID},
		body:        &apiBody{schema: "TraceSearch", required: true, description: "The filter, grouping and page."},
		ok:          apiResponse{status: 200, description: "A page of trace details (group_by run) or of per-session counts (group_by session).", schema: "TraceDetailPage"},
		errors:      []apiError{eBadRequest, eDBNotFound, eNoStore},
	},

	// Metrics.
	{
		method: "GET", path: "/metrics", id: "get_metrics", tag: "Metrics",
		summary:     "Usage metrics per day",
		description: "Read from the daily aggregates the server keeps as runs are written (one row per user and day): the cost follows the days asked for, not the runs stored. A run counts on the day it was created once it ends; a session on the day it was created once a run of its own ends.",
		query: []apiParam{
			{name: "starting_date", typ: "string", description: "First day, YYYY-MM-DD."},
			{name: "ending_date", typ: "string", description: "Last day, YYYY-MM-DD."},
			qUserID, qDBID, qTable,
		},
		ok:     apiResponse{status: 200, description: "The days' metrics and when they were computed.", schema: "Metrics"},
		errors: []apiError{eDBNotFound, {http.StatusUnprocessableEntity, "a date does not parse, or starting_date is after ending_date"}, eNoStore},
	},
	{
		method: "POST", path: "/metrics/refresh", id: "refresh_metrics", tag: "Metrics",
		summary:     "Compute the daily metrics of up to 31 days again from the runs",
		description: "Recomputes each day of the window from the sessions and runs stored (runs a fork copied left out), for the caller's user scope, and answers the window's days. Days already counted need no refresh; it catches up days written before the aggregates existed, and drops what deleted sessions and runs counted.",
		query: []apiParam{
			{name: "starting_date", typ: "string", description: "First day, YYYY-MM-DD. Defaults to 30 days before ending_date."},
			{name: "ending_date", typ: "string", description: "Last day, YYYY-MM-DD. Defaults to today (UTC), or to 30 days after starting_date when that is earlier."},
			qUserID,
			{name: "background", typ: "boolean", def: false, description: "Accepted for Agno's clients; the refresh always runs before the answer."},
			qDBID, qTable,
		},
		ok: apiResponse{status: 200, description: "The window's days.", schema: "DayMetrics", array: true},
		errors: []apiError{eDBNotFound,
			{http.StatusUnprocessableEntity, "a date does not parse, starting_date is after ending_date, or the window is longer than 31 days"}, eNoStore},
	},
	{
		method: "GET", path: "/metrics/refresh/status", id: "metrics_refresh_status", tag: "Metrics",
		summary: "Whether a metrics refresh is running",
		query:   []apiParam{qDBID},
		ok:      apiResponse{status: 200, description: "Refreshes run inline, so the status is always idle.", schema: "RefreshStatus"},
		errors:  []apiError{eDBNotFound, eNoStore},
	},
}

// osdbAPIRoutes documents the routes of the features kept in the OS
// database (osdb.go). Every one answers 503 when the server's store does
// not keep the feature, and is documented either way: the server serves
// its path.
func osdbAPIRoutes(tag, what string, routes []apiRoute) []apiRoute {
	out := make([]apiRoute, 0, len(routes))
	for _, r := range routes {
		r.tag, r.osdb = tag, true
		r.errors = append(slices.Clone(r.errors), apiError{http.StatusServiceUnavailable,
			fmt.Sprintf("the server's database does not keep %s (or there is none): %q", what, featureDetail(tag))})
		out = append(out, r)
	}
	return out
}

// Errors of the schedule routes.
var (
	eScheduleNotFound   = apiError{http.StatusNotFound, "no schedule has this id, or it is another user's (a non-admin sees only their own)"}
	eScheduleEndpoint   = apiError{http.StatusForbidden, "with authentication on, the caller may not run the schedule's endpoint: a run endpoint needs the run scope of its component, any other endpoint the admin scope"}
	eScheduleValidation = apiError{http.StatusUnprocessableEntity, "a field is missing, out of range or does not parse: a bad cron expression (five fields or a descriptor such as @daily), an unknown time zone, an endpoint that is not a path of this server or names a component it does not serve (the detail lists each one)"}
)

// scheduleAPIRoutes documents /schedules (schedules.go). Like the approvals'
// and service accounts' routes below, apiRoutes lists them through
// osdbAPIRoutes.
var scheduleAPIRoutes = []apiRoute{
	{
		method: "GET", path: "/schedules", id: "list_schedules",
		summary:     "List schedules, newest first, one page at a time",
		description: "A non-admin sees only the schedules they own; an admin sees every schedule.",
		query: []apiParam{
			{name: "enabled", typ: "boolean", description: "Only enabled (true) or disabled (false) schedules; both when left out."},
			{name: "limit", typ: "integer", def: 100, description: "Page size, 1 to 1000 (more is a 422)."},
			qPage,
		},
		ok:     apiResponse{status: 200, description: "A page of schedules.", schema: "SchedulePage"},
		errors: []apiError{eValidation},
	},
	{
		method: "POST", path: "/schedules", id: "create_schedule",
		summary: "Create a schedule: an endpoint of this server to call on a cron",
		description: "The caller owns the schedule (a JWT's subject, sa:<name> for a service account; unowned for the security key, " +
			"an admin's own schedules and an open server). A run endpoint (POST /agents/{id}/runs, /teams/…, /workflows/…) starts a " +
			"background run of the component as the owner, with payload as its form fields; any other endpoint is called as the owner.",
		body: &apiBody{schema: "ScheduleCreate", required: true, description: "The schedule; name, cron_expr and endpoint are required."},
		ok:   apiResponse{status: 201, description: "The schedule, with its next_run_at when enabled.", schema: "ScheduleResponse"},
		errors: []apiError{
			eScheduleEndpoint,
			{http.StatusForbidden, "the caller's identity is the scheduler's own (__scheduler__), which may not own a schedule"},
			{http.StatusConflict, "the owner already has a schedule with this name"},
			eScheduleValidation,
		},
	},
	{
		method: "GET", path: "/schedules/{schedule_id}", id: "get_schedule",
		summary: "One schedule",
		ok:      apiResponse{status: 200, description: "The schedule.", schema: "ScheduleResponse"},
		errors:  []apiError{eScheduleNotFound},
	},
	{
		method: "PATCH", path: "/schedules/{schedule_id}", id: "update_schedule",
		summary: "Change a schedule's fields",
		description: "Only the fields sent change; an empty body answers the schedule unchanged. A change of cron_expr or timezone of " +
			"an enabled schedule moves its next fire; enabling it recomputes the next fire and clears disabled_reason. The endpoint " +
			"permission is checked again when endpoint or method changes, or the schedule is enabled.",
		body: &apiBody{schema: "ScheduleUpdate", description: "The fields to change."},
		ok:   apiResponse{status: 200, description: "The updated schedule.", schema: "ScheduleResponse"},
		errors: []apiError{
			eScheduleEndpoint, eScheduleNotFound,
			{http.StatusConflict, "the owner already has a schedule with the new name, or enabling it while its endpoint no longer runs its provenance target (endpoint_drift)"},
			{http.StatusUnprocessableEntity, "a key is not an updatable field, a field that needs a value is null, or a value is out of range or does not parse (the detail lists each one)"},
		},
	},
	{
		method: "DELETE", path: "/schedules/{schedule_id}", id: "delete_schedule",
		summary: "Delete a schedule and its runs",
		ok:      apiResponse{status: 204, description: "Deleted."},
		errors:  []apiError{eScheduleNotFound},
	},
	{
		method: "POST", path: "/schedules/{schedule_id}/enable", id: "enable_schedule",
		summary:     "Enable a schedule",
		description: "Computes its next fire from now and clears disabled_reason.",
		ok:          apiResponse{status: 200, description: "The schedule's state.", schema: "ScheduleStateResponse"},
		errors: []apiError{
			eScheduleEndpoint, eScheduleNotFound,
			{http.StatusConflict, "the schedule's endpoint no longer runs its provenance target (endpoint_drift): point it back first"},
			{http.StatusUnprocessableEntity, "the schedule's cron expression has no next fire"},
		},
	},
	{
		method: "POST", path: "/schedules/{schedule_id}/disable", id: "disable_schedule",
		summary: "Disable a schedule: it fires no more until enabled",
		ok:      apiResponse{status: 200, description: "The schedule's state.", schema: "ScheduleStateResponse"},
		errors:  []apiError{eScheduleNotFound},
	},
	{
		method: "POST", path: "/schedules/{schedule_id}/trigger", id: "trigger_schedule",
		summary: "Fire a schedule now, outside its cron",
		description: "Starts one attempt now (the next fire does not move) and answers at once with the running attempt; poll " +
			"GET /schedules/{schedule_id}/runs/{run_id} for its end, or send wait=true. Needs the scheduler (scheduler.enabled).",
		query: []apiParam{{name: "wait", typ: "boolean", def: false, description: "Answer the attempt once it ends (success, failed, paused or cancelled) instead of at once."}},
		ok:    apiResponse{status: 200, description: "The attempt: running, or its end with wait=true.", schema: "ScheduleRunResponse"},
		errors: []apiError{
			eScheduleEndpoint, eScheduleNotFound,
			{http.StatusConflict, "the schedule is disabled (Schedule is disabled), or its endpoint no longer runs its provenance target"},
			eValidation,
			{http.StatusServiceUnavailable, "the scheduler is not running on this server (Scheduler is not running)"},
		},
	},
	{
		method: "GET", path: "/schedules/{schedule_id}/runs", id: "list_schedule_runs",
		summary: "A schedule's attempts, newest first, one page at a time",
		query: []apiParam{
			{name: "limit", typ: "integer", def: 100, description: "Page size, 1 to 1000 (more is a 422)."},
			qPage,
		},
		ok:     apiResponse{status: 200, description: "A page of attempts.", schema: "ScheduleRunPage"},
		errors: []apiError{eScheduleNotFound, eValidation},
	},
	{
		method: "GET", path: "/schedules/{schedule_id}/runs/{run_id}", id: "get_schedule_run",
		summary:     "One attempt of a schedule",
		description: "run_id is the attempt's id (the id of a ScheduleRunResponse), not the id of the run it started.",
		ok:          apiResponse{status: 200, description: "The attempt.", schema: "ScheduleRunResponse"},
		errors:      []apiError{{http.StatusNotFound, "no such schedule, or no attempt of it with this id"}},
	},
}

// eApprovalNotFound is the 404 of an approval route.
var eApprovalNotFound = apiError{http.StatusNotFound, "no approval has this id, or it is another user's (a non-admin under user isolation sees only their own)"}

// approvalAPIRoutes documents /approvals (approvals.go).
var approvalAPIRoutes = []apiRoute{
	{
		method: "GET", path: "/approvals", id: "list_approvals",
		summary:     "List admin approvals, newest first, one page at a time",
		description: "An approval is recorded when a run pauses on a tool that requires an admin's approval. A pending approval past its expires_at reads expired.",
		query: []apiParam{
			{name: "status", typ: "string", enum: approvalStatuses, description: "Only approvals with this status."},
			{name: "source_type", typ: "string", description: "Only approvals of this kind of run: agent, team or workflow."},
			{name: "approval_type", typ: "string", enum: approvalTypes, description: "Only approvals of this type."},
			{name: "pause_type", typ: "string", description: "Only approvals of this pause: confirmation, user_input or external_execution."},
			{name: "agent_id", typ: "string", description: "Only approvals of this agent's runs."},
			{name: "team_id", typ: "string", description: "Only approvals of this team's runs."},
			{name: "workflow_id", typ: "string", description: "Only approvals of this workflow's runs."},
			qUserID,
			{name: "schedule_id", typ: "string", description: "Only approvals of this schedule's runs."},
			{name: "run_id", typ: "string", description: "Only approvals of this run."},
			{name: "limit", typ: "integer", def: 100, description: "Page size, 1 to 1000 (more is a 422)."},
			qPage,
		},
		ok:     apiResponse{status: 200, description: "A page of approvals.", schema: "ApprovalPage"},
		errors: []apiError{eValidation},
	},
	{
		method: "GET", path: "/approvals/count", id: "count_approvals",
		summary: "How many approvals are pending",
		query:   []apiParam{qUserID},
		ok:      apiResponse{status: 200, description: "{count}: the pending approvals.", schema: "ApprovalCount"},
	},
	{
		method: "GET", path: "/approvals/{approval_id}/status", id: "get_approval_status",
		summary:     "An approval's status, for polling",
		description: "Resolving an approval does not continue its run: a client polls this route, then calls the run's /continue.",
		ok:          apiResponse{status: 200, description: "The approval's status and who resolved it when.", schema: "ApprovalStatus"},
		errors:      []apiError{eApprovalNotFound},
	},
	{
		method: "GET", path: "/approvals/{approval_id}", id: "get_approval",
		summary: "One approval",
		ok:      apiResponse{status: 200, description: "The approval.", schema: "ApprovalResponse"},
		errors:  []apiError{eApprovalNotFound},
	},
	{
		method: "POST", path: "/approvals/{approval_id}/resolve", id: "resolve_approval",
		summary: "Approve or reject a pending approval",
		description: "Only a pending approval is resolved: of two admins racing, exactly one wins. resolved_by is the caller's subject " +
			"when it has one, whatever the body says. The run is not continued: its /continue applies the resolution.",
		body: &apiBody{schema: "ApprovalResolve", required: true, description: "The decision."},
		ok:   apiResponse{status: 200, description: "The resolved approval.", schema: "ApprovalResponse"},
		errors: []apiError{
			{http.StatusNotFound, "no approval has this id, it is another user's, or the caller is not an admin under user isolation (resolving is then admin only)"},
			{http.StatusConflict, "the approval is not pending: Approval is already 'X' and cannot be resolved"},
			eValidation,
		},
	},
	{
		method: "DELETE", path: "/approvals/{approval_id}", id: "delete_approval",
		summary: "Delete an approval",
		ok:      apiResponse{status: 204, description: "Deleted."},
		errors:  []apiError{{http.StatusNotFound, "no approval has this id, it is another user's, or the caller is not an admin under user isolation (deleting is then admin only)"}},
	},
}

// serviceAccountAPIRoutes documents /service-accounts
// (serviceaccounts.go).
var serviceAccountAPIRoutes = []apiRoute{
	{
		method: "POST", path: "/service-accounts", id: "create_service_account",
		summary: "Mint a service account and its token",
		description: "The token (agno_pat_…) is in this answer only; the server keeps its SHA-256. It is sent as " +
			"`Authorization: Bearer agno_pat_…` in every auth mode and grants only the account's scopes. The caller owns the account.",
		body: &apiBody{schema: "ServiceAccountCreate", required: true, description: "The account; name is required."},
		ok:   apiResponse{status: 201, description: "The account and, this once, its token.", schema: "ServiceAccountCreateResponse"},
		errors: []apiError{
			{http.StatusBadRequest, "a scope is unknown, or privileged (write, delete, service_accounts, admin) without allow_privileged_scopes"},
			{http.StatusUnauthorized, "the caller is anonymous on a server without authentication: minting takes a credential"},
			{http.StatusForbidden, "the caller does not hold a scope it grants, or has no user identity to own the account"},
			{http.StatusConflict, "an unrevoked account has this name: revoke it first to rotate"},
			eValidation,
		},
	},
	{
		method: "GET", path: "/service-accounts", id: "list_service_accounts",
		summary:     "List service accounts, one page at a time",
		description: "A non-admin sees only the accounts they own. The tokens are never shown again.",
		query: []apiParam{
			{name: "include_revoked", typ: "boolean", def: true, description: "List revoked accounts too."},
			{name: "limit", typ: "integer", def: 20, description: "Page size, 1 to 100 (more is a 422)."},
			qPage,
			{name: "sort_by", typ: "string", def: "created_at", enum: serviceAccountSortColumns, description: "Sort key."},
			qSortOrder,
		},
		ok:     apiResponse{status: 200, description: "A page of accounts.", schema: "ServiceAccountPage"},
		errors: []apiError{eValidation},
	},
	{
		method: "DELETE", path: "/service-accounts/{account_id}", id: "revoke_service_account",
		summary:     "Revoke a service account",
		description: "Its token is refused from then on: at once by this server, within the token cache's TTL by others sharing the database. Revoking a revoked account changes nothing.",
		ok:          apiResponse{status: 204, description: "Revoked."},
		errors:      []apiError{{http.StatusNotFound, "no account has this id, or it is another user's"}},
	},
}

// apiSchemas are the document's components.schemas. Bodies the routes
// return are described by the fields clients read; every object may carry
// more. Like apiRoutes, they are built on first use.
var apiSchemas = sync.OnceValue(func() map[string]any {
	return map[string]any{
		"Error": obj("An error. Every error answer has a detail: a message, or for 422 a list of issues. Typed errors add error_id and error_type.",
			props{
				"detail":     map[string]any{"oneOf": []any{str("What went wrong and how to fix it."), arrayOf(ref("ValidationIssue"))}},
				"error_id":   str("A stable id of the error kind, such as migration_required_error or session_busy."),
				"error_type": str("Same as error_id."),
			}, "detail"),
		"ValidationIssue": obj("One problem of a request, in FastAPI's form.", props{
			"loc":  map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": `Where: ["body", "message"] or ["query", "session_id"].`},
			"msg":  str("What is wrong."),
			"type": str("missing, value_error, enum…"),
		}, "loc", "msg", "type"),
		"Empty":   map[string]any{"type": "object", "description": "An empty object."},
		"OpenAPI": map[string]any{"type": "object", "description": "An OpenAPI 3.1 document."},
		"Root": obj("The server's name and its entry points.", props{
			"name": str("The AgentOS name."), "id": str("The AgentOS id."), "version": str("The server version."),
			"health": str("The health route."), "info": str("The info route."), "docs": str("The interactive API explorer."),
			"openapi": str("This document."),
		}, "name"),
		"Health": obj("Liveness.", props{
			"status": str(`Always "ok".`), "instantiated_at": integer("When the server started, epoch seconds."),
		}, "status"),
		"Info": obj("The server's identity, readable without credentials.", props{
			"os_id": str("The AgentOS id."), "name": str("The AgentOS name."), "os_version": str("The server version."),
			"version":      str("Same as os_version."),
			"agno_version": map[string]any{"type": []string{"string", "null"}, "description": "Always null: this server is not Agno."},
			"agent_count":  integer("How many agents it serves."), "team_count": integer("How many teams it serves."),
			"workflow_count": integer("How many workflows it serves."),
			"mcp": obj("Whether the server serves MCP, and where.", props{
				"enabled": map[string]any{"type": "boolean"}, "path": map[string]any{"type": []string{"string", "null"}, "description": "The MCP route; null when MCP is not served."},
				"oauth": map[string]any{"type": []string{"object", "null"}, "description": "Always null: MCP clients authenticate with the REST bearer."},
			}),
			"auth_mode": map[string]any{"type": "string", "enum": []string{"none", "security_key", "jwt"}},
		}, "os_id", "name", "os_version", "auth_mode"),
		"ModelRef": obj("A model an agent uses.", props{
			"id": str("The model id."), "provider": str("The provider, such as OpenAI."),
		}, "id", "provider"),
		"DomainSection": obj("Where a domain (sessions, memory, metrics…) keeps its data.", props{
			"display_name": str("The domain's name in a UI."),
			"dbs": arrayOf(obj("A database of the domain.", props{
				"db_id":         str("The database id, to pass back as db_id."),
				"domain_config": map[string]any{"type": "object"},
				"tables":        arrayOf(str("A table name, to pass back as table.")),
			})),
		}),
		"Config": obj("What the AgentOS serves.", props{
			"os_id": str("The AgentOS id."), "name": str("The AgentOS name."), "description": str("What the AgentOS is for."),
			"available_models": arrayOf(ref("ModelRef")),
			"os_database":      map[string]any{"type": []string{"string", "null"}, "description": "The id of the AgentOS database."},
			"databases":        arrayOf(str("A database id (db_id).")),
			"chat":             map[string]any{"type": []string{"object", "null"}}, "manifest": map[string]any{"type": []string{"object", "null"}},
			"session": ref("DomainSection"), "memory": ref("DomainSection"), "metrics": ref("DomainSection"),
			"learning": map[string]any{"type": []string{"object", "null"}}, "knowledge": map[string]any{"type": "object"},
			"evals": map[string]any{"type": []string{"object", "null"}}, "traces": map[string]any{"type": []string{"object", "null"}},
			"agents": arrayOf(ref("Agent")),
			"teams":  arrayOf(ref("Team")), "workflows": arrayOf(ref("Workflow")),
			"interfaces": arrayOf(map[string]any{"type": "object"}),
		}, "os_id", "agents"),
		"Agent": obj("An agent as clients list it.", props{
			"id": str("The agent id, used in paths."), "name": str("The display name."), "description": str("What the agent does."),
			"db_id": str(`The database holding the agent's sessions; "" when it keeps none.`),
			"model": obj("The agent's model.", props{
				"name": str("The model id."), "model": str("The model id."), "provider": str("The provider, such as OpenAI."),
			}),
			"instructions": str("The agent's system instructions."),
		}, "id", "name"),
		"Workflow": obj("A workflow as clients list it (Agno's WorkflowResponse): steps that run agents, teams and functions in order.", props{
			"id": str("The workflow id, used in paths."), "name": str("The display name."), "description": map[string]any{"type": []string{"string", "null"}, "description": "What the workflow does."},
			"db_id":        map[string]any{"type": []string{"string", "null"}, "description": "The database holding the workflow's sessions."},
			"input_schema": map[string]any{"type": []string{"object", "null"}, "description": "The JSON Schema a run's input must meet."},
			"steps": arrayOf(map[string]any{"type": "object", "description": "A step dict: type (Function, Step, Steps, Loop, Parallel, Condition, Router), name, step_id, " +
				"description, its agent_id, team_id or workflow_id, max_retries, skip_on_failure, human_review, and the steps inside a composite step."}),
			"workflow_agent": map[string]any{"type": "boolean"}, "is_factory": map[string]any{"type": "boolean"}, "is_component": map[string]any{"type": "boolean"},
		}, "id", "name", "steps"),
		"Team": obj("A team as clients list it (Agno's TeamResponse): a leader model that delegates to its members.", props{
			"id": str("The team id, used in paths."), "name": str("The display name."), "description": str("What the team does."),
			"role":  str("The team's role, as a leader whose member it is sees it."),
			"mode":  map[string]any{"type": "string", "enum": []string{"coordinate", "route", "broadcast", "tasks"}, "description": "How the leader works with the members."},
			"db_id": str(`The database holding the team's sessions; "" when it keeps none.`),
			"model": obj("The leader's model.", props{
				"name": str("The model id."), "model": str("The model id."), "provider": str("The provider, such as OpenAI."),
			}),
			"instructions": str("The leader's instructions."),
			"members": arrayOf(map[string]any{"oneOf": []any{ref("Agent"), ref("Team")},
				"description": "A member: an agent, or a team (rendered as a Team, recursively)."}),
			"tools":             map[string]any{"type": "object", "description": "{tools: [{name, description}]}: the leader's tools, its delegation tool first."},
			"sessions":          map[string]any{"type": "object", "description": "Where and how sessions are kept: session_table, add_history_to_context, num_history_runs (settings left at their defaults are left out)."},
			"response_settings": map[string]any{"type": "object", "description": "respond_directly, delegate_to_all_members, determine_input_for_members, store_member_responses, output_schema_name, when not the defaults."},
			"streaming":         map[string]any{"type": "object", "description": "{stream_member_events}: whether the members' events are passed on in the team's stream."},
		}, "id", "name", "members"),
		"RunOutput": obj("A run: its identity, input, answer, tools, metrics and status. With stream=true the same run arrives as SSE frames instead (event: RunStarted … RunCompleted).",
			props{
				"run_id": str("The run id."), "session_id": str("The session id."), "agent_id": str("The agent id (an agent's run)."),
				"agent_name": str("The agent's name."), "team_id": str("The team id (a team's run)."), "team_name": str("The team's name."),
				"parent_run_id": str("The run this one is a part of: a team member's run names its team's run."),
				"user_id":       str("The user the run belongs to."),
				"run_input":     str("The user's message as text."),
				"content":       map[string]any{"description": "The answer: text, or a JSON value for structured output."},
				"content_type":  str(`"str", or the output schema's name.`),
				"model":         str("The model id."), "model_provider": str("The model provider."),
				"status":       map[string]any{"type": "string", "enum": []string{"PENDING", "RUNNING", "COMPLETED", "PAUSED", "CANCELLED", "ERROR"}},
				"tools":        arrayOf(map[string]any{"type": "object", "description": "A tool execution: tool_call_id, tool_name, tool_args, result…"}),
				"requirements": arrayOf(map[string]any{"type": "object", "description": "What a PAUSED run waits for; resolve them with /continue."}),
				"messages":     arrayOf(map[string]any{"type": "object"}),
				"metrics":      map[string]any{"type": "object", "description": "Token counts and timings."},
				"metadata":     map[string]any{"type": "object"}, "session_state": map[string]any{"type": "object"},
				"created_at": integer("When the run started, epoch seconds."),
			}, "run_id", "status"),
		"Checkpoint": obj("A place a run can be continued from: continuing keeps messages[:message_index].", props{
			"checkpoint_id": str("The message index, as a string."), "run_id": str("The run id."), "session_id": str("The session id."),
			"message_index": integer("How many messages are kept."), "continue_from": integer("The same, as /continue takes it."),
			"status": str("The checkpoint's status, or the run's."), "reason": map[string]any{"type": "string", "enum": []string{"checkpoint", "end", "snapshot"}},
			"created_at": integer("When the checkpoint was made, epoch seconds."), "message_id": str("The last kept message's id."),
			"message_role": str("Its role."), "message_preview": str("Its first 120 characters."), "is_latest": map[string]any{"type": "boolean"},
		}, "checkpoint_id", "message_index", "reason"),
		"Checkpoints": obj("A run's checkpoints.", props{
			"run_id": str("The run id."), "session_id": str("The session id."), "checkpoints": arrayOf(ref("Checkpoint")),
		}, "run_id", "checkpoints"),
		"CheckpointSnapshot": obj("One checkpoint and the run as of it.", props{
			"checkpoint": ref("Checkpoint"), "snapshot": ref("RunOutput"),
		}, "checkpoint", "snapshot"),
		"MigrationResult": obj("What a migration did.", props{
			"message": str("A one-line summary."),
			"tables":  map[string]any{"description": "Per table: table, from, to, action (created, migrated, up_to_date, skipped, failed), steps, duration_ms."},
			"failed":  map[string]any{"type": "object", "description": "207 only: database id → what failed."},
			"skipped": arrayOf(str("A database id not migrated (remote databases).")),
		}, "message"),
		"ForkedSession": obj("A forked session.", props{
			"session_id": str("The new session's id."), "forked_from_session_id": str("The session it copies."),
		}, "session_id", "forked_from_session_id"),
		"Session": obj("A session (a conversation).", props{
			"session_id": str("The session id."), "session_name": str("Its name (the first message, unless renamed)."),
			"session_type": str("agent, team or workflow."), "user_id": str("The user it belongs to."),
			"agent_id": str("The agent of an agent session."), "team_id": str("The team of a team session."), "workflow_id": str("The workflow of a workflow session."),
			"session_state": map[string]any{"type": "object"}, "metadata": map[string]any{"type": "object"},
			"session_summary": map[string]any{"type": "object"}, "metrics": map[string]any{"type": "object"},
			"total_tokens": integer("Tokens used by the session's runs."),
			"created_at":   integer("Epoch seconds."), "updated_at": integer("Epoch seconds."),
		}, "session_id"),
		"SessionPage": page("Session", "A page of sessions."),
		"PageMeta": obj("Where a page is.", props{
			"page": integer("This page, from 1."), "limit": integer("The page size."),
			"total_pages": integer("How many pages there are."), "total_count": integer("How many items there are."),
			"search_time_ms": map[string]any{"type": "number", "description": "How long the query took."},
		}, "page", "limit", "total_pages", "total_count"),
		"CreateSession": obj("A new session.", props{
			"session_id": str("Its id; a new one is made when left out."), "session_name": str("Its name."),
			"session_type": map[string]any{"type": "string", "enum": []string{"agent", "team", "workflow"}, "description": "Its kind, when the type query parameter is not sent."},
			"component_id": str("The agent, team or workflow, by its kind."),
			"user_id":      str("The user it belongs to."), "agent_id": str("The agent (for an agent session)."),
			"team_id": str("The team."), "workflow_id": str("The workflow."),
			"session_state": map[string]any{"type": "object"}, "metadata": map[string]any{"type": "object"},
		}),
		"UpdateSession": obj("Fields of a session to change.", props{
			"session_name": str(`The new name ("" removes it; name is accepted too).`), "session_state": map[string]any{"type": "object"},
			"metadata": map[string]any{"type": "object"}, "summary": map[string]any{"type": "object"},
		}),
		"RenameSession": obj("A new name.", props{"session_name": str("The new name.")}, "session_name"),
		"DeleteSessions": obj("Sessions to delete.", props{
			"session_ids":   arrayOf(str("A session id.")),
			"session_types": arrayOf(str("The kind of each session: agent, team or workflow.")),
		}, "session_ids"),
		"Memory": obj("A user memory.", props{
			"memory_id": str("The memory id."), "memory": str("The remembered fact."),
			"topics": arrayOf(str("A topic.")), "user_id": str("The user it is about."),
			"agent_id": str("The agent that wrote it."), "team_id": str("The team that wrote it."),
			"created_at": integer("Epoch seconds."), "updated_at": integer("Epoch seconds."),
		}, "memory_id", "memory", "topics"),
		"MemoryInput": obj("A memory to store.", props{
			"memory":  map[string]any{"type": "string", "minLength": 1, "maxLength": 5000, "description": "The fact to remember."},
			"user_id": str("The user it is about."), "topics": arrayOf(str("A topic.")),
		}, "memory"),
		"MemoryUpdate": obj("Fields of a memory to change.", props{
			"memory":  map[string]any{"type": "string", "minLength": 1, "maxLength": 5000, "description": "The new text."},
			"topics":  arrayOf(str("A topic.")),
			"user_id": str("The user the memory belongs to."),
		}),
		"MemoryPage": page("Memory", "A page of memories."),
		"DeleteMemories": obj("Memories to delete.", props{
			"memory_ids": arrayOf(str("A memory id.")), "user_id": str("Only delete memories of this user."),
		}, "memory_ids"),
		"Topic": str("A memory topic."),
		"UserMemoryStats": obj("One user's memories.", props{
			"user_id": str("The user."), "total_memories": integer("How many memories they have."),
			"last_memory_updated_at": integer("When one last changed, epoch seconds."),
		}, "user_id", "total_memories"),
		"UserMemoryStatsPage": page("UserMemoryStats", "A page of per-user memory counts."),
		"TraceSummary": obj("A trace (Agno's TraceSummary).", props{
			"trace_id": str("32 hex digits."), "name": str("The name of its highest-level span."), "status": str("OK or ERROR."),
			"duration": str(`"150ms" or "1.50s".`), "start_time": str("ISO-8601."), "end_time": str("ISO-8601."),
			"total_spans": integer("Its spans."), "error_count": integer("Its failed spans."), "input": str("The root span's input."),
			"run_id": str("The run."), "session_id": str("The session."), "user_id": str("The user."), "agent_id": str("The agent."),
			"team_id": str("The team."), "workflow_id": str("The workflow."), "created_at": str("When it was first written, ISO-8601."),
		}, "trace_id", "name", "status", "duration", "start_time", "end_time", "total_spans", "error_count", "created_at"),
		"TraceSummaryPage": page("TraceSummary", "A page of traces."),
		"TraceNode": obj("A span and its children (Agno's TraceNode).", props{
			"id": str("The span id."), "name": str("The span's name."), "type": str("AGENT, TEAM, WORKFLOW, LLM, TOOL, CHAIN or UNKNOWN."),
			"duration": str(`"150ms" or "1.50s".`), "start_time": str("ISO-8601."), "end_time": str("ISO-8601."), "status": str("OK, ERROR or UNSET."),
			"input": str("input.value."), "output": str("output.value."), "error": str("The error, when it failed."),
			"spans": arrayOf(ref("TraceNode")), "step_type": str("A workflow step's type."),
			"metadata": map[string]any{"type": "object", "description": "By type: run_id; model, input_tokens, output_tokens; tool_name, parameters."},
		}, "id", "name", "type", "duration", "start_time", "end_time", "status"),
		"TraceDetail": obj("A trace with its span tree (Agno's TraceDetail).", props{
			"trace_id": str("32 hex digits."), "name": str("The name of its highest-level span."), "status": str("OK or ERROR."),
			"duration": str(`"150ms" or "1.50s".`), "output": str("The run's answer."), "error": str("The run's error."),
			"tree": arrayOf(ref("TraceNode")),
		}, "trace_id", "name", "status", "tree"),
		"TraceDetailPage": page("TraceDetail", "A page of traces with their trees."),
		"TraceSessionStats": obj("A session's traces.", props{
			"session_id": str("The session."), "total_traces": integer("Its traces."), "first_trace_at": str("ISO-8601."), "last_trace_at": str("ISO-8601."),
		}, "session_id", "total_traces"),
		"TraceSessionStatsPage": page("TraceSessionStats", "A page of per-session counts."),
		"TraceFilterSchema": obj("The fields a search filter names.", props{
			"fields": arrayOf(map[string]any{"type": "object"}), "logical_operators": arrayOf(str("AND or OR.")),
		}, "fields", "logical_operators"),
		"TraceSearch": obj("POST /traces/search's body.", props{
			"filter":   map[string]any{"type": "object", "description": "A filter expression: {op, key, value}, {op: IN, key, values}, {op: AND|OR, conditions}, {op: NOT, condition}."},
			"group_by": str("run (default) or session."), "page": integer("From 1."), "limit": integer("1 to 100; 20 by default."),
		}),
		"DayMetrics": obj("One day's usage.", props{
			"id": str("The day's id."), "date": str("The day, YYYY-MM-DD (UTC)."), "aggregation_period": str(`"daily"`),
			"agent_runs_count": integer("Agent runs that day."), "agent_sessions_count": integer("Agent sessions created that day."),
			"team_runs_count": integer("Team runs that day."), "team_sessions_count": integer("Team sessions created that day."),
			"workflow_runs_count": integer("Workflow runs that day."), "workflow_sessions_count": integer("Workflow sessions created that day."),
			"users_count": integer("Distinct users that day."), "completed": map[string]any{"type": "boolean", "description": "Whether the day is over."},
			"created_at":    integer("Epoch seconds."),
			"token_metrics": map[string]any{"type": "object", "description": "Token totals."},
			"model_metrics": arrayOf(map[string]any{"type": "object", "description": "Per model: model_id, model_provider, count."}),
			"updated_at":    integer("When the day was computed, epoch seconds."),
		}, "date"),
		"Metrics": obj("Usage metrics.", props{
			"metrics": arrayOf(ref("DayMetrics")), "updated_at": integer("When the metrics were computed, epoch seconds."),
		}, "metrics"),
		"Job": obj("A background run on the durable queue.", props{
			"id": str("The run id."), "agent_id": str("The agent."), "session_id": str("The session."), "user_id": str("The run's user."),
			"status":          map[string]any{"type": "string", "enum": []string{"queued", "running", "paused", "completed", "failed", "cancelled"}, "description": "The job's state on the queue."},
			"run_status":      map[string]any{"type": "string", "enum": []string{"PENDING", "RUNNING", "COMPLETED", "PAUSED", "CANCELLED", "ERROR"}, "description": "The run row's status."},
			"attempts":        integer("How many times the queue started the run, requeues included."),
			"created_at":      integer("When the job was queued, epoch seconds."),
			"updated_at":      integer("When the job last changed, epoch seconds."),
			"started_at":      integer("When the current attempt started, epoch seconds."),
			"completed_at":    integer("When the job ended, epoch seconds."),
			"executor_id":     str("The server process that last executed it."),
			"error":           str("Why a failed job failed."),
			"idempotency_key": str("The Idempotency-Key it was submitted with."),
		}, "id", "status", "attempts"),
		"JobPage": page("Job", "A page of jobs."),
		"QueueStats": obj("The durable queue's jobs, counted.", props{
			"counts":                    map[string]any{"type": "object", "additionalProperties": map[string]any{"type": "integer"}, "description": "Jobs in each state: queued, running, paused, completed, failed, cancelled (zeros included)."},
			"oldest_queued_age_seconds": map[string]any{"type": []string{"integer", "null"}, "description": "How long the oldest queued job has waited; null when none waits."},
		}, "counts", "oldest_queued_age_seconds"),
		"RefreshStatus": obj("The metrics refresh.", props{
			"status": str(`"idle"`), "started_at": map[string]any{"type": []string{"integer", "null"}},
			"finished_at": map[string]any{"type": []string{"integer", "null"}}, "error": map[string]any{"type": []string{"string", "null"}},
		}, "status"),

		// Schedules (schedules.go).
		"ScheduleResponse": obj("A schedule (Agno's ScheduleResponse). Times are epoch seconds.", props{
			"id": str("The schedule id."), "user_id": orNull("string", "The owner; null for an unowned schedule."),
			"name": str("Unique per owner."), "description": orNull("string", "What it is for."),
			"method": str("The HTTP method it calls with."), "endpoint": str("The path of this server it calls."),
			"payload":   map[string]any{"type": []string{"object", "null"}, "description": "A run endpoint's form fields, or any other endpoint's JSON body."},
			"cron_expr": str("When it fires: five fields or a descriptor."), "timezone": str("The IANA time zone the cron reads in."),
			"timeout_seconds": integer("How long an attempt may take."), "max_retries": integer("Attempts after a failed one."),
			"retry_delay_seconds": integer("The wait before a retry."), "enabled": map[string]any{"type": "boolean"},
			"next_run_at":     orNull("integer", "When it fires next; null when disabled."),
			"managed_by":      orNull("string", "What made it (scheduler_tools for an agent's toolkit); null when made over REST."),
			"target_type":     orNull("string", "The kind of component its provenance names: agent, team or workflow."),
			"target_id":       orNull("string", "The component its provenance names."),
			"disabled_reason": orNull("string", "Why the server disabled it (endpoint_drift:…, target_archived:…)."),
			"created_at":      integer("When it was created."), "updated_at": orNull("integer", "When it last changed."),
		}, "id", "user_id", "name", "description", "method", "endpoint", "payload", "cron_expr", "timezone", "timeout_seconds", "max_retries",
			"retry_delay_seconds", "enabled", "next_run_at", "managed_by", "target_type", "target_id", "disabled_reason", "created_at", "updated_at"),
		"SchedulePage": page("ScheduleResponse", "A page of schedules."),
		"ScheduleCreate": obj("A new schedule (Agno's ScheduleCreate).", props{
			"name":                map[string]any{"type": "string", "maxLength": 255, "pattern": "^[a-zA-Z0-9][a-zA-Z0-9 ._-]*$", "description": "Unique per owner."},
			"cron_expr":           map[string]any{"type": "string", "maxLength": 128, "description": "Five fields (minute hour day-of-month month day-of-week) or a descriptor (@hourly, @daily, @every 10m)."},
			"endpoint":            map[string]any{"type": "string", "maxLength": 512, "description": "A path of this server: starts with /, no ://, no whitespace. A run endpoint is POST /agents/{id}/runs (/teams/…, /workflows/…)."},
			"method":              map[string]any{"type": "string", "enum": scheduleMethods, "default": "POST", "description": "Upper-cased."},
			"description":         map[string]any{"type": "string", "maxLength": 1024},
			"payload":             map[string]any{"type": "object", "description": "A run endpoint's form fields (message, session_id, metadata…), or any other endpoint's JSON body."},
			"timezone":            map[string]any{"type": "string", "default": "UTC", "description": "An IANA time zone."},
			"timeout_seconds":     map[string]any{"type": "integer", "minimum": 1, "maximum": 86400, "default": 3600},
			"max_retries":         map[string]any{"type": "integer", "minimum": 0, "maximum": 10, "default": 0},
			"retry_delay_seconds": map[string]any{"type": "integer", "minimum": 1, "maximum": 3600, "default": 60},
			"enabled":             map[string]any{"type": "boolean", "default": true},
		}, "name", "cron_expr", "endpoint"),
		"ScheduleUpdate": func() map[string]any {
			s := obj("Fields of a schedule to change; any other key is a 422, and so is null but for description and payload.", props{
				"name":                map[string]any{"type": "string", "maxLength": 255, "pattern": "^[a-zA-Z0-9][a-zA-Z0-9 ._-]*$"},
				"description":         map[string]any{"type": []string{"string", "null"}, "maxLength": 1024, "description": "null or \"\" removes it."},
				"method":              map[string]any{"type": "string", "enum": scheduleMethods},
				"endpoint":            map[string]any{"type": "string", "maxLength": 512},
				"payload":             map[string]any{"type": []string{"object", "null"}},
				"cron_expr":           map[string]any{"type": "string", "maxLength": 128},
				"timezone":            str("An IANA time zone."),
				"timeout_seconds":     map[string]any{"type": "integer", "minimum": 1, "maximum": 86400},
				"max_retries":         map[string]any{"type": "integer", "minimum": 0, "maximum": 10},
				"retry_delay_seconds": map[string]any{"type": "integer", "minimum": 1, "maximum": 3600},
				"enabled":             map[string]any{"type": "boolean"},
			})
			s["additionalProperties"] = false
			return s
		}(),
		"ScheduleStateResponse": obj("A schedule's state after enable or disable (Agno's ScheduleStateResponse).", props{
			"id": str("The schedule id."), "name": str("Its name."), "enabled": map[string]any{"type": "boolean"},
			"next_run_at": orNull("integer", "When it fires next, epoch seconds."), "updated_at": orNull("integer", "When it last changed, epoch seconds."),
		}, "id", "name", "enabled", "next_run_at", "updated_at"),
		"ScheduleRunResponse": obj("One attempt of a schedule (Agno's ScheduleRunResponse). Times are epoch seconds.", props{
			"id": str("The attempt id."), "schedule_id": str("Its schedule."), "user_id": orNull("string", "The schedule's owner."),
			"attempt":      integer("1 for a fire, 2 and on for its retries."),
			"triggered_at": orNull("integer", "When it started."), "completed_at": orNull("integer", "When it ended; null while running."),
			"status": map[string]any{"type": "string", "enum": []string{storage.ScheduleRunRunning, storage.ScheduleRunSuccess, storage.ScheduleRunFailed,
				storage.ScheduleRunPaused, storage.ScheduleRunCancelled}, "description": "running until the run ends: COMPLETED is success, PAUSED paused, CANCELLED cancelled, ERROR or a timeout failed."},
			"status_code": orNull("integer", "The HTTP status the endpoint answered."),
			"run_id":      orNull("string", "The run it started (a run endpoint)."), "session_id": orNull("string", "That run's session."),
			"error":        orNull("string", "Why it failed."),
			"input":        map[string]any{"type": []string{"object", "null"}, "description": "The payload it was called with."},
			"output":       map[string]any{"type": []string{"object", "null"}, "description": "{content, content_type}: the run's answer."},
			"requirements": map[string]any{"type": []string{"array", "null"}, "description": "A paused run's requirements."},
			"created_at":   integer("When it was written."),
		}, "id", "schedule_id", "user_id", "attempt", "triggered_at", "completed_at", "status", "status_code", "run_id", "session_id", "error",
			"input", "output", "requirements", "created_at"),
		"ScheduleRunPage": page("ScheduleRunResponse", "A page of attempts."),

		// Approvals (approvals.go).
		"ApprovalResponse": obj("An admin approval (Agno's ApprovalResponse): every column of agno_approvals. Times are epoch seconds.", props{
			"id": str("The approval id."), "run_id": str("The paused run."), "session_id": str("Its session."),
			"status":        map[string]any{"type": "string", "enum": approvalStatuses, "description": "pending until resolved; expired once past expires_at."},
			"source_type":   str("The kind of run: agent, team or workflow."),
			"approval_type": map[string]any{"type": []string{"string", "null"}, "enum": []any{"required", "audit", nil}},
			"pause_type":    orNull("string", "confirmation, user_input or external_execution."),
			"tool_name":     orNull("string", "The first call that waits for approval."),
			"tool_args":     map[string]any{"type": []string{"object", "null"}, "description": "Its arguments."},
			"expires_at":    orNull("integer", "When a pending approval expires; null: never."),
			"agent_id":      orNull("string", "The agent of an agent's run."), "team_id": orNull("string", "The team of a team's run."),
			"workflow_id": orNull("string", "The workflow of a workflow's run."), "user_id": orNull("string", "The run's user."),
			"schedule_id": orNull("string", "The schedule that started the run."), "schedule_run_id": orNull("string", "The schedule's attempt."),
			"source_name":     orNull("string", "The name of the agent, team or workflow."),
			"requirements":    map[string]any{"type": []string{"array", "null"}, "description": "The paused run's requirements."},
			"context":         map[string]any{"type": []string{"object", "null"}, "description": "{tool_names, source_name}."},
			"resolution_data": map[string]any{"type": []string{"object", "null"}, "description": "What the resolver sent: values for user input, result for an external execution."},
			"resolved_by":     orNull("string", "Who resolved it."), "resolved_at": orNull("integer", "When."),
			"created_at": integer("When it was recorded."), "updated_at": orNull("integer", "When it last changed."),
			"run_status": orNull("string", "The run's status (PAUSED, RUNNING, COMPLETED…): whether it was continued."),
		}, "id", "run_id", "session_id", "status", "source_type", "created_at"),
		"ApprovalPage": page("ApprovalResponse", "A page of approvals."),
		"ApprovalStatus": obj("An approval's status, for polling.", props{
			"approval_id": str("The approval id."),
			"status":      map[string]any{"type": "string", "enum": approvalStatuses},
			"run_id":      str("The paused run."), "resolved_at": orNull("integer", "When it was resolved, epoch seconds."),
			"resolved_by": orNull("string", "Who resolved it."),
		}, "approval_id", "status", "run_id", "resolved_at", "resolved_by"),
		"ApprovalCount": obj("How many approvals are pending.", props{"count": integer("The pending approvals.")}, "count"),
		"ApprovalResolve": obj("A decision on an approval.", props{
			"status":          map[string]any{"type": "string", "enum": []string{storage.ApprovalApproved, storage.ApprovalRejected}},
			"resolved_by":     map[string]any{"type": "string", "maxLength": maxResolvedByChars, "description": "Who decides; the caller's subject replaces it when there is one."},
			"resolution_data": map[string]any{"type": "object", "description": "values: the user input of a call that asks for it; result: the result of an external execution."},
		}, "status"),

		// Service accounts (serviceaccounts.go).
		"ServiceAccountCreate": obj("A new service account.", props{
			"name": map[string]any{"type": "string", "pattern": serviceAccountNamePattern, "description": "Unique among unrevoked accounts."},
			"scopes": map[string]any{"type": "array", "minItems": 1, "items": ref("ScopeGrant"),
				"description": "The scopes to grant; left out: " + strings.Join(defaultServiceAccountScopes, ", ") + "."},
			"expires_in_days":         map[string]any{"type": "integer", "minimum": 1, "maximum": maxExpiresInDays, "default": defaultExpiresInDays},
			"never_expires":           map[string]any{"type": "boolean", "default": false, "description": "A token only revocation ends."},
			"allow_privileged_scopes": map[string]any{"type": "boolean", "default": false, "description": "Needed to grant write, delete, service_accounts or admin scopes."},
		}, "name"),
		"ScopeGrant": obj("A scope to grant.", props{
			"scope":  str("resource:action, resource:<id>:action, resource:*:action, or the admin scope."),
			"effect": map[string]any{"type": "string", "enum": []string{"allow"}, "default": "allow"},
		}, "scope"),
		"ServiceAccountScope": obj("A granted scope, split (Agno's ScopeSchema).", props{
			"id": map[string]any{"type": "null"}, "raw": str("The scope as granted."), "namespace": str("Its resource."),
			"sub_namespace": orNull("string", "Its resource id, if any."), "permission": orNull("string", "Its action; null for a scope without one."),
			"value": map[string]any{"type": "string", "enum": []string{"allow"}},
		}, "id", "raw", "namespace", "sub_namespace", "permission", "value"),
		"ServiceAccountResponse": obj("A service account (Agno's ServiceAccountResponse). Times are epoch seconds.", props{
			"id": str("The account id."), "name": str("Its name."), "principal": str("sa:<name>: the caller its token authenticates."),
			"user_id": orNull("string", "Who owns it: whoever minted it."), "token_prefix": str("The token's first 16 characters."),
			"scopes":     arrayOf(ref("ServiceAccountScope")),
			"created_at": integer("When it was minted."), "expires_at": orNull("integer", "When its token expires; null: never."),
			"last_used_at": orNull("integer", "When its token was last used (written at most once a minute)."),
			"revoked_at":   orNull("integer", "When it was revoked."), "created_by": orNull("string", "Who minted it."),
		}, "id", "name", "principal", "user_id", "token_prefix", "scopes", "created_at", "expires_at", "last_used_at", "revoked_at", "created_by"),
		"ServiceAccountCreateResponse": map[string]any{
			"description": "A new service account and its token, shown this once.",
			"allOf": []any{ref("ServiceAccountResponse"), obj("", props{
				"token": str("agno_pat_…: send it as `Authorization: Bearer <token>`."),
			}, "token")},
		},
		"ServiceAccountPage": page("ServiceAccountResponse", "A page of service accounts."),
	}
})

// props are an object schema's properties.
type props map[string]any

func obj(description string, properties props, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": map[string]any(properties)}
	if description != "" {
		s["description"] = description
	}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func str(description string) map[string]any {
	return map[string]any{"type": "string", "description": description}
}

func integer(description string) map[string]any {
	return map[string]any{"type": "integer", "description": description}
}

// orNull is a schema of typ, or null.
func orNull(typ, description string) map[string]any {
	return map[string]any{"type": []string{typ, "null"}, "description": description}
}

func arrayOf(items any) map[string]any { return map[string]any{"type": "array", "items": items} }

func ref(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func page(item, description string) map[string]any {
	return obj(description, props{"data": arrayOf(ref(item)), "meta": ref("PageMeta")}, "data", "meta")
}

// wildcardPattern finds a pattern's {name}, {name...} and {$}.
var wildcardPattern = regexp.MustCompile(`\{([A-Za-z_][A-Za-z0-9_]*|\$)(\.\.\.)?\}`)

// openAPIPath turns a ServeMux path into an OpenAPI path: /{$} is /, and
// {name...} is {name}.
func (r apiRoute) openAPIPath() string {
	return wildcardPattern.ReplaceAllStringFunc(r.path, func(m string) string {
		if m == "{$}" {
			return ""
		}
		return strings.Replace(m, "...", "", 1)
	})
}

// pathParams are the names of the path's wildcards.
func (r apiRoute) pathParams() []string {
	var names []string
	for _, m := range wildcardPattern.FindAllStringSubmatch(r.path, -1) {
		if m[1] != "$" {
			names = append(names, m[1])
		}
	}
	return names
}

// pathParamDescriptions describe the path wildcards.
var pathParamDescriptions = map[string]string{
	"agent_id":    "The agent's id (see GET /agents).",
	"team_id":     "The team's id (see GET /teams).",
	"run_id":      "The run's id.",
	"session_id":  "The session's id.",
	"memory_id":   "The memory's id.",
	"job_id":      "The job's id: the run id of a background run.",
	"schedule_id": "The schedule's id.",
	"approval_id": "The approval's id.",
	"account_id":  "The service account's id.",
}

// sampleRequest is a request the route's pattern matches, for
// [http.ServeMux.Handler].
func (r apiRoute) sampleRequest() *http.Request {
	return &http.Request{Method: r.method, Host: "agnogo", URL: &url.URL{Path: r.samplePath()}, Header: http.Header{}}
}

// samplePath is a path the route's pattern matches.
func (r apiRoute) samplePath() string {
	return wildcardPattern.ReplaceAllStringFunc(r.path, func(m string) string {
		switch {
		case m == "{$}":
			return ""
		case strings.HasSuffix(m, "...}"):
			return "x/y"
		}
		return "x"
	})
}

// mounted returns the routes of apiRoutes that mux serves: those mounted
// with their own pattern, and those of an OS-database feature whose 503
// stub serves their path ([mountFeature]).
func mounted(mux *http.ServeMux) []apiRoute {
	var out []apiRoute
	for _, r := range apiRoutes() {
		_, pattern := mux.Handler(r.sampleRequest())
		if pattern == r.method+" "+r.path || r.osdb && strings.TrimSuffix(pattern, "/") == "/"+r.firstSegment() {
			out = append(out, r)
		}
	}
	return out
}

// firstSegment is the first segment of the route's path: "schedules".
func (r apiRoute) firstSegment() string {
	first, _, _ := strings.Cut(strings.TrimPrefix(r.path, "/"), "/")
	return first
}

// openAPIDocument renders routes as an OpenAPI 3.1 document.
func (o *OS) openAPIDocument(routes []apiRoute) map[string]any {
	paths := map[string]any{}
	var tags []string
	for _, r := range routes {
		if !slices.Contains(tags, r.tag) {
			tags = append(tags, r.tag)
		}
		item, _ := paths[r.openAPIPath()].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[r.openAPIPath()] = item
		}
		item[strings.ToLower(r.method)] = r.operation()
	}
	tagList := make([]any, 0, len(tags))
	for _, t := range tags {
		tagList = append(tagList, map[string]any{"name": t})
	}
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":   o.cfg.Name,
			"version": o.cfg.Version,
			"description": "The AgentOS API of " + o.cfg.Name + " (os_id " + o.cfg.ID + "), served by agnogo. " +
				"Runs are created and continued with form fields and answered as JSON or Server-Sent Events; the rest is JSON. " +
				"Every error body has a detail. When the server has a security key or JWT verification configured, " +
				"every route but /, /health, /info, /docs and /openapi.json needs `Authorization: Bearer <token>`. " +
				"CORS preflights (OPTIONS) never need credentials.",
		},
		"tags":  tagList,
		"paths": paths,
		"components": map[string]any{
			"schemas": apiSchemas(),
			"securitySchemes": map[string]any{
				"bearerAuth": map[string]any{
					"type": "http", "scheme": "bearer",
					"description": "The security key, or a JWT, as `Authorization: Bearer <token>`; needed only when the server is configured with one.",
				},
			},
		},
	}
}

// operation renders one route as an OpenAPI operation.
func (r apiRoute) operation() map[string]any {
	op := map[string]any{
		"operationId": r.id,
		"summary":     r.summary,
		"tags":        []string{r.tag},
		"responses":   r.responses(),
	}
	if r.description != "" {
		op["description"] = r.description
	}
	if r.open {
		op["security"] = []any{}
	} else {
		op["security"] = []any{map[string]any{"bearerAuth": []string{}}}
	}
	var params []any
	for _, name := range r.pathParams() {
		params = append(params, map[string]any{
			"name": name, "in": "path", "required": true,
			"description": pathParamDescriptions[name], "schema": map[string]any{"type": "string"},
		})
	}
	for _, q := range r.query {
		p := map[string]any{"name": q.name, "in": "query", "schema": q.schema()}
		if q.description != "" {
			p["description"] = q.description
		}
		if q.required {
			p["required"] = true
		}
		params = append(params, p)
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	switch {
	case len(r.form) > 0:
		properties := map[string]any{}
		var required []string
		for _, f := range r.form {
			properties[f.name] = f.schema()
			if f.required {
				required = append(required, f.name)
			}
		}
		schema := map[string]any{"type": "object", "properties": properties, "additionalProperties": true}
		if len(required) > 0 {
			schema["required"] = required
		}
		op["requestBody"] = map[string]any{
			"required": true,
			"content": map[string]any{
				"multipart/form-data":               map[string]any{"schema": schema},
				"application/x-www-form-urlencoded": map[string]any{"schema": schema},
			},
		}
	case r.body != nil:
		op["requestBody"] = map[string]any{
			"required":    r.body.required,
			"description": r.body.description,
			"content":     map[string]any{"application/json": map[string]any{"schema": ref(r.body.schema)}},
		}
	}
	return op
}

// schema is a parameter's JSON Schema. Form fields holding JSON are strings
// with a contentMediaType.
func (p apiParam) schema() map[string]any {
	s := map[string]any{}
	switch p.typ {
	case "object", "array":
		s["type"] = "string"
		s["contentMediaType"] = "application/json"
		s["description"] = p.description
	case "files":
		s["type"] = "array"
		s["items"] = map[string]any{"type": "string", "contentMediaType": "application/octet-stream"}
		s["description"] = p.description
	default:
		s["type"] = p.typ
		if p.description != "" {
			s["description"] = p.description
		}
	}
	if p.def != nil {
		s["default"] = p.def
	}
	if len(p.enum) > 0 {
		s["enum"] = p.enum
	}
	return s
}

// errorList is the route's error answers: its own, 401 and 403 when it is
// protected, 503 while the database is away when it reads the database,
// and 500.
func (r apiRoute) errorList() []apiError {
	errs := slices.Clone(r.errors)
	if slices.Contains(errs, eNoStore) {
		errs = append(errs, apiError{http.StatusServiceUnavailable, "the database is unavailable right now (restarting or unreachable); retry after Retry-After seconds"})
	}
	if !r.open {
		errs = append(errs,
			apiError{http.StatusUnauthorized, "credentials are required and missing or invalid"},
			apiError{http.StatusForbidden, "the caller's scopes do not allow this"})
	}
	errs = append(errs, apiError{http.StatusInternalServerError, "the server failed; the detail names only the error's type (error_id migration_required_error: run agnogo migrate)"})
	slices.SortStableFunc(errs, func(a, b apiError) int { return a.status - b.status })
	return errs
}

// responses renders the route's answers.
func (r apiRoute) responses() map[string]any {
	out := map[string]any{}
	ok := map[string]any{"description": r.ok.description}
	content := map[string]any{}
	switch {
	case r.ok.contentType != "":
		content[r.ok.contentType] = map[string]any{"schema": map[string]any{"type": "string"}}
	case r.ok.schema != "":
		var schema any = ref(r.ok.schema)
		if r.ok.array {
			schema = arrayOf(schema)
		}
		content["application/json"] = map[string]any{"schema": schema}
	}
	if r.ok.sse {
		content["text/event-stream"] = map[string]any{
			"schema": map[string]any{
				"type":        "string",
				"description": "Server-Sent Events: for each run event, `event: <Name>` then `data: <compact JSON>` and a blank line. RunStarted first; RunCompleted, RunError, RunCancelled or RunPaused last.",
			},
		}
	}
	if len(content) > 0 {
		ok["content"] = content
	}
	out[fmt.Sprint(r.ok.status)] = ok
	for _, e := range r.errorList() {
		key := fmt.Sprint(e.status)
		if prev, ok := out[key].(map[string]any); ok {
			prev["description"] = prev["description"].(string) + "; " + e.when
			continue
		}
		out[key] = map[string]any{
			"description": e.when,
			"content":     map[string]any{"application/json": map[string]any{"schema": ref("Error")}},
		}
	}
	return out
}

// docsRoutes mounts /openapi.json and /docs. Both describe the routes of
// apiRoutes that mux serves, worked out on first use (so that routes mounted
// after this call are included).
func (o *OS) docsRoutes(mux *http.ServeMux) {
	var (
		once     sync.Once
		document []byte
		page     []byte
		buildErr error
	)
	build := func() {
		routes := mounted(mux)
		document, buildErr = json.MarshalIndent(o.openAPIDocument(routes), "", "  ")
		if buildErr != nil {
			return
		}
		page = docsPage(o.docsView(routes))
	}
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		once.Do(build)
		if buildErr != nil {
			o.internalError(w, r, buildErr)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(document) // a failed write means the client left
	})
	explorer := apidocs.Handler(apidocs.Config{Title: o.cfg.Name + " API", SpecURL: "/openapi.json", Prefix: "/docs"})
	mux.Handle("GET /docs", explorer)
	mux.Handle("GET /docs/assets/{file}", explorer)
	mux.HandleFunc("GET /redoc", func(w http.ResponseWriter, r *http.Request) {
		once.Do(build)
		if buildErr != nil {
			o.internalError(w, r, buildErr)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page) // a failed write means the client left
	})
}

// docsView is what the /redoc page shows.
type docsView struct {
	Name, ID, Version string
	Groups            []docsGroup
}

type docsGroup struct {
	Tag    string
	Routes []docsRoute
}

type docsRoute struct {
	Method, Path, Anchor, Summary, Description string
	Open                                       bool
	Params                                     []docsParam
	Body                                       string
	Responses                                  []docsResponse
}

type docsParam struct {
	Name, In, Type, Default, Description string
	Required                             bool
}

type docsResponse struct {
	Status int
	What   string
}

func (o *OS) docsView(routes []apiRoute) docsView {
	view := docsView{Name: o.cfg.Name, ID: o.cfg.ID, Version: o.cfg.Version}
	for _, r := range routes {
		if len(view.Groups) == 0 || view.Groups[len(view.Groups)-1].Tag != r.tag {
			view.Groups = append(view.Groups, docsGroup{Tag: r.tag})
		}
		d := docsRoute{
			Method: r.method, Path: r.openAPIPath(), Anchor: r.id,
			Summary: r.summary, Description: r.description, Open: r.open,
		}
		for _, name := range r.pathParams() {
			d.Params = append(d.Params, docsParam{Name: name, In: "path", Type: "string", Required: true, Description: pathParamDescriptions[name]})
		}
		for _, q := range r.query {
			d.Params = append(d.Params, q.view("query"))
		}
		for _, f := range r.form {
			d.Params = append(d.Params, f.view("form"))
		}
		if r.body != nil {
			d.Body = "JSON " + r.body.schema + ": " + schemaFields(r.body.schema)
		}
		what := r.ok.description
		if r.ok.schema != "" {
			what += " (" + r.ok.schema
			if r.ok.array {
				what += "[]"
			}
			what += ")"
		}
		d.Responses = append(d.Responses, docsResponse{Status: r.ok.status, What: what})
		for _, e := range r.errorList() {
			d.Responses = append(d.Responses, docsResponse{Status: e.status, What: e.when})
		}
		g := &view.Groups[len(view.Groups)-1]
		g.Routes = append(g.Routes, d)
	}
	return view
}

func (p apiParam) view(in string) docsParam {
	v := docsParam{Name: p.name, In: in, Type: p.typ, Required: p.required, Description: p.description}
	if p.typ == "object" || p.typ == "array" {
		v.Type = "JSON " + p.typ
	}
	if p.def != nil {
		v.Default = fmt.Sprint(p.def)
	}
	if len(p.enum) > 0 {
		v.Description = strings.TrimSpace(v.Description + " One of " + strings.Join(p.enum, ", ") + ".")
	}
	return v
}

// schemaFields lists an object schema's fields, required ones marked.
func schemaFields(name string) string {
	s, _ := apiSchemas()[name].(map[string]any)
	properties, _ := s["properties"].(map[string]any)
	required, _ := s["required"].([]string)
	fields := make([]string, 0, len(properties))
	for field := range properties {
		if slices.Contains(required, field) {
			field += " (required)"
		}
		fields = append(fields, field)
	}
	slices.Sort(fields)
	return strings.Join(fields, ", ")
}

// docsPage renders the /redoc page: plain HTML and inline CSS, nothing
// fetched.
//
// The page is written by hand rather than with html/template: a template
// anywhere in the binary makes the linker keep every exported method of
// every type (cmd/agnogo's TestBinaryLinksNoTemplates). Each value is escaped
// as html/template escaped it, text and attributes with [escapeHTML], the
// fragment of a link with [escapeURLComponent].
func docsPage(view docsView) []byte {
	var b strings.Builder
	name := escapeHTML(view.Name)
	b.WriteString(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>` + name + ` API</title>
<style>
body { font-family: system-ui, sans-serif; margin: 2rem auto; max-width: 72rem; padding: 0 1rem; color: #1b1b1b; line-height: 1.45; }
h1 { margin-bottom: .2rem; } h2 { margin-top: 2.2rem; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0 1rem; font-size: .92rem; }
th, td { border: 1px solid #ddd; padding: .3rem .5rem; text-align: left; vertical-align: top; }
th { background: #f5f5f5; }
code { font-family: ui-monospace, monospace; font-size: .9em; }
.method { font-family: ui-monospace, monospace; font-weight: bold; }
.GET { color: #0a6b2d; } .POST { color: #0b57a4; } .PATCH { color: #8a5a00; } .DELETE { color: #b3261e; } .PUT { color: #6b3fa0; }
.open { color: #555; font-style: italic; }
section.route { margin: 1.4rem 0; }
section.route h3 { font-size: 1.05rem; margin-bottom: .2rem; }
</style>
</head>
<body>
<h1>` + name + ` API</h1>
<p>os_id <code>` + escapeHTML(view.ID) + `</code> · version <code>` + escapeHTML(view.Version) + `</code> · the same routes as an OpenAPI 3.1 document: <a href="/openapi.json">/openapi.json</a></p>
<p>Runs are created and continued with form fields (<code>multipart/form-data</code> or <code>application/x-www-form-urlencoded</code>) and answered as JSON or as Server-Sent Events; everything else is JSON.
Errors answer <code>{"detail": "…"}</code> (422: a list of <code>{loc, msg, type}</code>; typed errors add <code>error_id</code> and <code>error_type</code>).
When the server has a security key or JWT verification configured, routes not marked <span class="open">open</span> need <code>Authorization: Bearer &lt;token&gt;</code>.</p>
<pre><code>curl -F message=hello -F stream=false http://HOST:PORT/agents/AGENT_ID/runs</code></pre>

<h2>Routes</h2>
<table>
<tr><th>Method</th><th>Path</th><th>Summary</th><th>Auth</th></tr>`)
	for _, g := range view.Groups {
		for _, r := range g.Routes {
			auth := "bearer"
			if r.Open {
				auth = `<span class="open">open</span>`
			}
			method := escapeHTML(r.Method)
			fmt.Fprintf(&b, "\n<tr><td class=\"method %s\">%s</td><td><a href=\"#%s\"><code>%s</code></a></td><td>%s</td><td>%s</td></tr>",
				method, method, escapeURLComponent(r.Anchor), escapeHTML(r.Path), escapeHTML(r.Summary), auth)
		}
	}
	b.WriteString("\n</table>\n")
	for _, g := range view.Groups {
		b.WriteString("\n<h2>" + escapeHTML(g.Tag) + "</h2>")
		for _, r := range g.Routes {
			writeDocsRoute(&b, r)
		}
		b.WriteString("\n")
	}
	b.WriteString("\n</body>\n</html>\n")
	return []byte(b.String())
}

// writeDocsRoute writes the section of the /redoc page about one route.
func writeDocsRoute(b *strings.Builder, r docsRoute) {
	method := escapeHTML(r.Method)
	fmt.Fprintf(b, "\n<section class=\"route\" id=\"%s\">\n<h3><span class=\"method %s\">%s</span> <code>%s</code> — %s</h3>",
		escapeHTML(r.Anchor), method, method, escapeHTML(r.Path), escapeHTML(r.Summary))
	if r.Description != "" {
		b.WriteString("<p>" + escapeHTML(r.Description) + "</p>")
	}
	if len(r.Params) > 0 {
		b.WriteString("\n<table>\n<tr><th>Parameter</th><th>In</th><th>Type</th><th>Default</th><th>Description</th></tr>")
		for _, p := range r.Params {
			required, def := "", ""
			if p.Required {
				required = " <strong>required</strong>"
			}
			if p.Default != "" {
				def = "<code>" + escapeHTML(p.Default) + "</code>"
			}
			fmt.Fprintf(b, "\n<tr><td><code>%s</code>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td></tr>",
				escapeHTML(p.Name), required, escapeHTML(p.In), escapeHTML(p.Type), def, escapeHTML(p.Description))
		}
		b.WriteString("\n</table>")
	}
	if r.Body != "" {
		b.WriteString("<p>Request body: " + escapeHTML(r.Body) + "</p>")
	}
	b.WriteString("\n<table>\n<tr><th>Status</th><th>When</th></tr>")
	for _, resp := range r.Responses {
		fmt.Fprintf(b, "\n<tr><td>%d</td><td>%s</td></tr>", resp.Status, escapeHTML(resp.What))
	}
	b.WriteString("\n</table>\n</section>")
}

// escapeHTML escapes s for HTML text or a quoted attribute value, as the
// /docs page does ([apidocs.EscapeHTML]).
func escapeHTML(s string) string { return apidocs.EscapeHTML(s) }

// escapeURLComponent percent-encodes (lowercase hex, as html/template did)
// every byte of s but RFC 3986's unreserved characters, for a URL's query
// or fragment. The result needs no further HTML escaping.
func escapeURLComponent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02x", c)
	}
	return b.String()
}
