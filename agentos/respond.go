package agentos

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/agnogo/agnogo/storage"
)

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // a failed write means the client left
}

// errorBody is AgentOS's error body.
type errorBody struct {
	Detail    any    `json:"detail"`
	ErrorID   string `json:"error_id,omitempty"`
	ErrorType string `json:"error_type,omitempty"`
}

// writeError answers with {"detail": detail}.
func writeError(w http.ResponseWriter, status int, detail string) {
	writeJSON(w, status, errorBody{Detail: detail})
}

// validationIssue is one entry of a 422 body, in FastAPI's form.
type validationIssue struct {
	Loc  []string `json:"loc"`
	Msg  string   `json:"msg"`
	Type string   `json:"type"`
}

// writeValidation answers 422 with FastAPI's list of issues.
func writeValidation(w http.ResponseWriter, issues ...validationIssue) {
	writeJSON(w, http.StatusUnprocessableEntity, errorBody{Detail: issues})
}

// missingField is the 422 issue for a required form field.
func missingField(field string) validationIssue {
	return validationIssue{Loc: []string{"body", field}, Msg: "Field required", Type: "missing"}
}

// invalidField is the 422 issue for a form field that does not parse.
func invalidField(field, msg string) validationIssue {
	return validationIssue{Loc: []string{"body", field}, Msg: msg, Type: "value_error"}
}

// writeStoreError maps a storage error to its status: not found 404, invalid
// 400, conflict 409, a database failing transiently 503, anything else 500
// without internals (the cause is logged; see [OS.internalError]).
func (o *OS) writeStoreError(w http.ResponseWriter, r *http.Request, err error) {
	var migration *storage.MigrationRequiredError
	switch {
	case errors.Is(err, storage.ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error())
	case errors.Is(err, storage.ErrConflict):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, storage.ErrInvalidText):
		writeError(w, http.StatusUnprocessableEntity, err.Error())
	case errors.Is(err, storage.ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	case errors.As(err, &migration):
		writeJSON(w, http.StatusInternalServerError, errorBody{Detail: migration.Error(), ErrorID: "migration_required_error", ErrorType: "migration_required_error"})
	default:
		o.internalError(w, r, err)
	}
}

// internalError answers 500 without echoing err: the body names an error
// id, and the log has the error under that id. A database that failed
// transiently (a restart, a dropped connection: [storage.Transient]) is
// answered 503 with Retry-After instead, since the same request may well
// succeed a moment later.
func (o *OS) internalError(w http.ResponseWriter, r *http.Request, err error) {
	id := newID()
	if storage.Transient(err) {
		o.log.WarnContext(r.Context(), "request failed: the database is unavailable", slog.String("error_id", id), slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.Any("error", err))
		w.Header().Set("Retry-After", strconv.Itoa(databaseRetryAfter))
		writeJSON(w, http.StatusServiceUnavailable, errorBody{Detail: databaseUnavailableDetail, ErrorID: id})
		return
	}
	o.log.ErrorContext(r.Context(), "request failed", slog.String("error_id", id), slog.String("method", r.Method),
		slog.String("path", r.URL.Path), slog.Any("error", err))
	writeJSON(w, http.StatusInternalServerError, errorBody{Detail: "Internal server error", ErrorID: id})
}

// The answer to a request the database failed transiently: what it says,
// and the seconds after which to try again.
const (
	databaseUnavailableDetail = "The database is unavailable right now (restarting or unreachable); try again in a moment"
	databaseRetryAfter        = 1
)
