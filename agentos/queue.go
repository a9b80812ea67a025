package agentos

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/agnogo/agnogo/durable"
	"github.com/agnogo/agnogo/storage"
)

// The durable queue's operations routes (agentos-api.md §11): list, read,
// count and requeue background runs. They are admin only, and answer 503
// when the server has no durable queue.

// queueDisabledDetail is the 503 detail of the queue routes without a queue.
const queueDisabledDetail = "the durable queue is not enabled; set queue.durable: true"

// queueRoutes mounts the queue operations routes.
func (o *OS) queueRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /queue/jobs", o.queueAdmin(o.handleListJobs))
	mux.HandleFunc("GET /queue/jobs/{job_id}", o.queueAdmin(o.handleGetJob))
	mux.HandleFunc("POST /queue/jobs/{job_id}/requeue", o.queueAdmin(o.handleRequeueJob))
	mux.HandleFunc("GET /queue/stats", o.queueAdmin(o.handleQueueStats))
}

// queueAdmin lets only admins through (the route map already refuses other
// callers; this keeps the rule next to the routes), then needs a queue.
func (o *OS) queueAdmin(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !principalFrom(r.Context()).Admin {
			writeError(w, http.StatusForbidden, "Insufficient permissions: missing scope "+o.auth.adminScope()+" (this route is admin only)")
			return
		}
		if o.cfg.Queue == nil {
			writeError(w, http.StatusServiceUnavailable, queueDisabledDetail)
			return
		}
		next(w, r)
	}
}

func (o *OS) handleListJobs(w http.ResponseWriter, r *http.Request) {
	q := newQueryReader(r)
	statuses := q.jobStatuses()
	p := q.pagination()
	if p.Limit > durable.MaxJobsPageSize {
		q.issues = append(q.issues, validationIssue{Loc: []string{"query", "limit"},
			Msg: fmt.Sprintf("Input should be less than or equal to %d", durable.MaxJobsPageSize), Type: "less_than_equal"})
	}
	q.enum("sort_by", "created_at", "created_at")
	order := q.sortOrder()
	if q.failed(w) {
		return
	}
	started := time.Now()
	jobs, total, err := o.cfg.Queue.Jobs(r.Context(), durable.JobQuery{Statuses: statuses, Limit: p.Limit, Page: p.Page,
		SortDesc: order == storage.SortDesc})
	if err != nil {
		o.writeQueueError(w, r, "", err)
		return
	}
	writeJSON(w, http.StatusOK, paginate(jobs, p, total, started))
}

func (o *OS) handleGetJob(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("job_id")
	job, err := o.cfg.Queue.Job(r.Context(), id)
	if err != nil {
		o.writeQueueError(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, job)
}

func (o *OS) handleRequeueJob(w http.ResponseWriter, r *http.Request) {
	q := newQueryReader(r)
	force := q.boolean("force")
	// A cancellation is the job's own state here, and a requeue clears it:
	// clear_cancellation is accepted for Agno's clients and changes nothing.
	q.boolean("clear_cancellation")
	if q.failed(w) {
		return
	}
	id := r.PathValue("job_id")
	job, err := o.cfg.Queue.Requeue(r.Context(), id, durable.RequeueOptions{Force: force})
	if err != nil {
		o.writeQueueError(w, r, id, err)
		return
	}
	writeJSON(w, http.StatusOK, job)
}

func (o *OS) handleQueueStats(w http.ResponseWriter, r *http.Request) {
	stats, err := o.cfg.Queue.Stats(r.Context())
	if err != nil {
		o.writeQueueError(w, r, "", err)
		return
	}
	writeJSON(w, http.StatusOK, stats)
}

// writeQueueError maps a queue error to its status: an unknown job 404, a
// job that cannot be requeued 400, one that ended too recently 409 (with
// Retry-After), a bad filter 400; anything else is 500.
func (o *OS) writeQueueError(w http.ResponseWriter, r *http.Request, id string, err error) {
	var tooSoon *durable.RequeueTooSoonError
	switch {
	case errors.Is(err, storage.ErrNotFound):
		writeError(w, http.StatusNotFound, fmt.Sprintf("Job %s not found", id))
	case errors.As(err, &tooSoon):
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(tooSoon.Wait.Seconds()))))
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, durable.ErrRequeueTooSoon):
		writeError(w, http.StatusConflict, err.Error())
	case errors.Is(err, durable.ErrNotRequeueable), errors.Is(err, storage.ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error())
	default:
		o.internalError(w, r, err)
	}
}

// jobStatuses reads status, repeatable (status=failed&status=cancelled) or
// comma-separated; each value must be a job status.
func (q *queryReader) jobStatuses() []durable.JobStatus {
	var statuses []durable.JobStatus
	allowed := make([]string, 0, len(durable.JobStatuses()))
	for _, s := range durable.JobStatuses() {
		allowed = append(allowed, string(s))
	}
	index := 0
	for _, raw := range q.values["status"] {
		for value := range strings.SplitSeq(raw, ",") {
			value = strings.TrimSpace(value)
			if value == "" {
				continue
			}
			status, err := durable.ParseJobStatus(value)
			if err != nil {
				issue := enumIssue([]string{"query", "status", strconv.Itoa(index)}, allowed)
				issue.Msg += fmt.Sprintf(", not %q", value)
				q.issues = append(q.issues, issue)
			} else {
				statuses = append(statuses, status)
			}
			index++
		}
	}
	return statuses
}

// boolean reads a true/false query parameter; false when absent.
func (q *queryReader) boolean(name string) bool {
	raw := strings.TrimSpace(q.values.Get(name))
	switch strings.ToLower(raw) {
	case "", "false", "0", "no", "off":
		return false
	case "true", "1", "yes", "on":
		return true
	}
	q.issues = append(q.issues, validationIssue{Loc: []string{"query", name},
		Msg: fmt.Sprintf("Input should be a valid boolean, unable to interpret %q", raw), Type: "bool_parsing"})
	return false
}
