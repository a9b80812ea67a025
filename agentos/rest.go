package agentos

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agnogo/agnogo/storage"
)

// Request plumbing shared by the run, session, memory and metrics routes: a route table with the scope each route needs, FastAPI-style
// query and JSON body validation (422 with a list of issues), and the
// paginated envelope.

// endpoint is one JSON route and the RBAC scope it needs.
type endpoint struct {
	pattern  string           // method and path, as http.ServeMux takes them
	resource string           // RBAC resource (auth-and-isolation.md §4), e.g. "sessions"
	action   string           // read, write or delete
	idParam  string           // the path wildcard naming the resource acted on; "" for collections
	handle   http.HandlerFunc // runs once the caller is authorized and a store is configured
}

// mount registers endpoints on mux. Each checks, in order, the caller's
// scope for the resource (403), that a store is configured (503) and that
// db_id, when sent, names it (404), before its handler runs.
func (o *OS) mount(mux *http.ServeMux, endpoints []endpoint) { o.mountWith(mux, endpoints, true) }

// mountWith is mount; without requireStore the handlers run with no store
// configured (and check for one themselves where they need it).
func (o *OS) mountWith(mux *http.ServeMux, endpoints []endpoint, requireStore bool) {
	for _, ep := range endpoints {
		mux.HandleFunc(ep.pattern, func(w http.ResponseWriter, r *http.Request) {
			var id string
			if ep.idParam != "" {
				id = r.PathValue(ep.idParam)
			}
			if !o.authorize(w, r, ep.resource, id, ep.action) || (requireStore && !o.needStore(w)) {
				return
			}
			if dbID := r.URL.Query().Get("db_id"); dbID != "" && dbID != o.cfg.DBID {
				writeError(w, http.StatusNotFound, fmt.Sprintf("Database with id '%s' not found", dbID))
				return
			}
			ep.handle(w, r)
		})
	}
}

// queryReader reads query parameters, collecting FastAPI-style issues for
// values that do not parse.
type queryReader struct {
	values url.Values
	issues []validationIssue
}

func newQueryReader(r *http.Request) *queryReader { return &queryReader{values: r.URL.Query()} }

// str returns a parameter's first value, or "".
func (q *queryReader) str(name string) string { return q.values.Get(name) }

// integer reads an integer parameter of at least min, with a default.
func (q *queryReader) integer(name string, def, min int) int {
	raw := strings.TrimSpace(q.values.Get(name))
	if raw == "" {
		return def
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", name}, Msg: "Input should be a valid integer, unable to parse string as an integer", Type: "int_parsing"})
		return def
	}
	if n < min {
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", name}, Msg: fmt.Sprintf("Input should be greater than or equal to %d", min), Type: "greater_than_equal"})
		return def
	}
	return n
}

// epoch reads an epoch-seconds parameter; 0 when absent.
func (q *queryReader) epoch(name string) int64 { return int64(q.integer(name, 0, 0)) }

// enum reads a parameter that must be one of allowed, with a default.
func (q *queryReader) enum(name, def string, allowed ...string) string {
	raw := q.values.Get(name)
	if raw == "" {
		return def
	}
	if !slices.Contains(allowed, raw) {
		q.issues = append(q.issues, enumIssue([]string{"query", name}, allowed))
		return def
	}
	return raw
}

// sessionType reads type (or its alias session_type); it defaults to agent,
// and sent reports whether the caller chose it.
func (q *queryReader) sessionType() (t storage.SessionType, sent bool) {
	name := "type"
	if q.values.Get(name) == "" && q.values.Get("session_type") != "" {
		name = "session_type"
	}
	sent = q.values.Get(name) != ""
	return storage.SessionType(q.enum(name, string(storage.SessionTypeAgent), sessionTypes...)), sent
}

// sortOrder reads sort_order (asc or desc; default desc).
func (q *queryReader) sortOrder() storage.SortOrder {
	return storage.SortOrder(q.enum("sort_order", string(storage.SortDesc), string(storage.SortAsc), string(storage.SortDesc)))
}

// maxPageLimit is the largest limit a listing takes: one page never holds
// more rows than this, however large the table.
const maxPageLimit = 1000

// pagination reads limit (default 20, 1 to [maxPageLimit]) and page
// (default 1, at least 0), as Agno's list routes declare them.
func (q *queryReader) pagination() pageParams { return q.paginationFrom(20) }

// paginationFrom is [queryReader.pagination] with another default limit.
func (q *queryReader) paginationFrom(defaultLimit int) pageParams {
	p := pageParams{Limit: q.integer("limit", defaultLimit, 1), Page: q.integer("page", 1, 0)}
	if p.Limit > maxPageLimit {
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", "limit"},
			Msg: fmt.Sprintf("Input should be less than or equal to %d", maxPageLimit), Type: "less_than_equal"})
	}
	// The store's offset is (page-1)*limit; refuse pages whose offset would
	// overflow rather than let it wrap into a negative OFFSET.
	if p.Page > 1 && p.Limit > math.MaxInt32/(p.Page-1) {
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", "page"}, Msg: "page × limit must be at most 2147483647", Type: "value_error"})
	}
	if p.Limit > maxPageLimit {
		// One issue for the limit: a caller checking it again (the queue's
		// route does) finds it in range.
		p.Limit = defaultLimit
	}
	return p
}

// date reads a YYYY-MM-DD parameter as midnight UTC; ok is false when absent.
func (q *queryReader) date(name string) (day time.Time, ok bool) {
	raw := strings.TrimSpace(q.values.Get(name))
	if raw == "" {
		return time.Time{}, false
	}
	day, err := time.Parse(time.DateOnly, raw)
	if err != nil {
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", name}, Msg: "Input should be a valid date in the format YYYY-MM-DD", Type: "date_from_datetime_parsing"})
		return time.Time{}, false
	}
	return day, true
}

// failed answers 422 with the collected issues, if any.
func (q *queryReader) failed(w http.ResponseWriter) bool {
	if len(q.issues) == 0 {
		return false
	}
	writeValidation(w, q.issues...)
	return true
}

// enumIssue is the 422 issue of a value outside allowed.
func enumIssue(loc, allowed []string) validationIssue {
	quoted := make([]string, len(allowed))
	for i, a := range allowed {
		quoted[i] = "'" + a + "'"
	}
	msg := "Input should be " + quoted[0]
	if n := len(quoted); n > 1 {
		msg = "Input should be " + strings.Join(quoted[:n-1], ", ") + " or " + quoted[n-1]
	}
	return validationIssue{Loc: loc, Msg: msg, Type: "enum"}
}

// maxJSONBodyBytes bounds a JSON request body; session state can be large.
const maxJSONBodyBytes = 8 << 20

// readBody reads a request body up to maxJSONBodyBytes, answering 413 when
// it is larger.
func readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxJSONBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", tooLarge.Limit))
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, "unreadable request body")
		return nil, false
	}
	if p := jsonTextProblem(data); p != "" {
		writeValidation(w, textIssue([]string{"body"}, p))
		return nil, false
	}
	return data, true
}

// jsonBody is a JSON object request body whose fields are read one by one,
// collecting FastAPI-style issues. A null field counts as absent, as
// Pydantic's Optional fields take it.
type jsonBody struct {
	fields map[string]json.RawMessage
	issues []validationIssue
}

// readJSONObject reads the request body as a JSON object. An empty body is
// an empty object unless required. It answers 422 (or 413) and returns false
// when the body is not a JSON object.
func readJSONObject(w http.ResponseWriter, r *http.Request, required bool) (*jsonBody, bool) {
	data, ok := readBody(w, r)
	if !ok {
		return nil, false
	}
	return parseJSONObject(w, data, required)
}

// parseJSONObject is readJSONObject for a body already read.
func parseJSONObject(w http.ResponseWriter, data []byte, required bool) (*jsonBody, bool) {
	body := &jsonBody{fields: map[string]json.RawMessage{}}
	switch {
	case len(bytes.TrimSpace(data)) == 0 && required:
		writeValidation(w, validationIssue{Loc: []string{"body"}, Msg: "Field required", Type: "missing"})
		return nil, false
	case len(bytes.TrimSpace(data)) == 0:
		return body, true
	case !json.Valid(data):
		writeValidation(w, validationIssue{Loc: []string{"body"}, Msg: "JSON decode error", Type: "json_invalid"})
		return nil, false
	}
	if err := json.Unmarshal(data, &body.fields); err != nil || body.fields == nil {
		writeValidation(w, validationIssue{Loc: []string{"body"}, Msg: "Input should be a valid dictionary or object to extract fields from", Type: "model_attributes_type"})
		return nil, false
	}
	return body, true
}

// raw returns a field's JSON, unless it is absent or null.
func (b *jsonBody) raw(name string) (json.RawMessage, bool) {
	v, ok := b.fields[name]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

// has reports whether a field was sent (and is not null).
func (b *jsonBody) has(name string) bool {
	_, ok := b.raw(name)
	return ok
}

func (b *jsonBody) issue(i validationIssue) { b.issues = append(b.issues, i) }

func (b *jsonBody) invalid(name, msg, kind string) {
	b.issue(validationIssue{Loc: []string{"body", name}, Msg: msg, Type: kind})
}

// str reads a string field; "" when absent.
func (b *jsonBody) str(name string) string {
	v, ok := b.raw(name)
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		b.invalid(name, "Input should be a valid string", "string_type")
	}
	return s
}

// required reads a string field that must be sent and not blank.
func (b *jsonBody) required(name string) string {
	if !b.has(name) {
		b.issue(missingField(name))
		return ""
	}
	before := len(b.issues)
	s := b.str(name)
	if len(b.issues) == before && strings.TrimSpace(s) == "" {
		b.invalid(name, "String should have at least 1 character", "string_too_short")
	}
	return s
}

// enum reads a string field that must be one of allowed.
func (b *jsonBody) enum(name string, allowed ...string) string {
	s := b.str(name)
	if s != "" && !slices.Contains(allowed, s) {
		b.issue(enumIssue([]string{"body", name}, allowed))
		return ""
	}
	return s
}

// object reads a JSON object field; nil when absent.
func (b *jsonBody) object(name string) map[string]any {
	v, ok := b.raw(name)
	if !ok {
		return nil
	}
	var obj map[string]any
	if json.Unmarshal(v, &obj) != nil {
		b.invalid(name, "Input should be a valid dictionary", "dict_type")
		return nil
	}
	return obj
}

// strings reads a list-of-strings field; nil when absent.
func (b *jsonBody) strings(name string) []string {
	v, ok := b.raw(name)
	if !ok {
		return nil
	}
	list, msg := decodeStringList(v)
	if msg != "" {
		b.invalid(name, msg, "list_type")
		return nil
	}
	return list
}

// requiredList reads a list-of-strings field that must hold at least one id.
func (b *jsonBody) requiredList(name string) []string {
	if !b.has(name) {
		b.issue(missingField(name))
		return nil
	}
	list := b.strings(name)
	if list != nil && len(list) == 0 {
		b.invalid(name, "List should have at least 1 item after validation, not 0", "too_short")
	}
	return list
}

// decodeStringList decodes a JSON list of strings, or says what is wrong.
func decodeStringList(v json.RawMessage) ([]string, string) {
	list := []string{}
	if json.Unmarshal(v, &list) != nil {
		return nil, "Input should be a valid list of strings"
	}
	return list, ""
}

// failed answers 422 with the collected issues, if any.
func (b *jsonBody) failed(w http.ResponseWriter) bool {
	if len(b.issues) == 0 {
		return false
	}
	writeValidation(w, b.issues...)
	return true
}

// pageParams are a listing's limit and page, as the caller sent them.
type pageParams struct {
	Limit, Page int
}

// store is the page as storage counts it: page 0 is the first page.
func (p pageParams) store() storage.Page { return storage.Page{Limit: p.Limit, Page: max(p.Page, 1)} }

// paginationInfo is the meta of a paginated response.
type paginationInfo struct {
	Page       int     `json:"page"`
	Limit      int     `json:"limit"`
	TotalPages int     `json:"total_pages"`
	TotalCount int     `json:"total_count"`
	SearchTime float64 `json:"search_time_ms"`
}

// paginatedResponse is Agno's PaginatedResponse[T].
type paginatedResponse[T any] struct {
	Data []T            `json:"data"`
	Meta paginationInfo `json:"meta"`
}

// paginate wraps one page of a listing; total_pages is ceil(total/limit).
func paginate[T any](data []T, p pageParams, total int, started time.Time) paginatedResponse[T] {
	if data == nil {
		data = []T{}
	}
	pages := 0
	if p.Limit > 0 {
		pages = (total + p.Limit - 1) / p.Limit
	}
	elapsed := math.Round(float64(time.Since(started).Microseconds())/10) / 100
	return paginatedResponse[T]{Data: data, Meta: paginationInfo{Page: p.Page, Limit: p.Limit, TotalPages: pages, TotalCount: total, SearchTime: elapsed}}
}
