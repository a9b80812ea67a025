package runhost

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"time"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// Rows a run has outside its execution. A background run's row is written
// PENDING when it is accepted (RecordPending) and, when it ends without its
// runner writing its end — it could not start, was cancelled while it
// waited, its worker was lost, or its attempts ran out — its final status is
// written by Settle. Inside an execution the host writes the rows (see
// [Host]); these are the only other writers of run rows.

// PendingRun is the PENDING row of an accepted run, with the session to
// create when it is new.
func PendingRun(runner run.Runner, in *run.Input, now time.Time) (*storage.Session, storage.RunRecord) {
	session := storage.NewSession(runner.Kind(), runner.ID(), in.SessionID, in.UserID)
	out := &run.Output{RunID: in.RunID, SessionID: in.SessionID, UserID: in.UserID, ParentRunID: in.ParentRunID,
		Input: in, Status: run.StatusPending, Metadata: in.Metadata, CreatedAt: now.Unix()}
	out.SetRunner(runner.Kind(), runner.ID(), runner.Name())
	return session, storage.RunRecord{SessionID: in.SessionID, UserID: in.UserID, Run: out}
}

// RecordPending writes an accepted run's PENDING row, creating its session
// when it is new, in one transaction ([storage.RunStore.RecordPendingRun]):
// two acceptances racing on a new session create it once, and a session of
// another user is refused with an error wrapping [storage.ErrNotFound].
func RecordPending(ctx context.Context, store storage.Store, runner run.Runner, in *run.Input, now time.Time) error {
	session, rec := PendingRun(runner, in, now)
	if err := store.RecordPendingRun(ctx, session, rec); err != nil {
		return fmt.Errorf("record run %s: %w", in.RunID, err)
	}
	in.Accepted = true
	return nil
}

// Settle writes status, with message as its content, onto a run's row
// that is not final yet — PENDING, RUNNING, or PAUSED (a paused run can
// still be cancelled or fail). It is the one final write of a run that
// ended without its runner writing its end. over reports a row that was
// final already; stored is then its status.
func Settle(ctx context.Context, store storage.Store, runID, userID string, status run.Status, message string) (stored run.Status, over bool, err error) {
	rec, err := store.GetRun(ctx, runID, userID)
	if err != nil {
		return status, false, fmt.Errorf("settle run %s: %w", runID, err)
	}
	if rec.Run.Status.Terminal() && rec.Run.Status != run.StatusPaused {
		return rec.Run.Status, true, nil
	}
	rec.Run.Status = status
	rec.Run.Content, rec.Run.ContentType = message, "str"
	if _, err := store.UpsertRun(ctx, rec); err != nil {
		return status, false, fmt.Errorf("settle run %s: %w", runID, err)
	}
	if approvals, ok := store.(storage.ApprovalStore); ok && len(ApprovalIDs(rec.Run)) > 0 {
		// The run's approvals follow it; the run is settled either way.
		if err := approvals.SetApprovalRunStatus(ctx, runID, string(status), 0); err != nil {
			slog.WarnContext(ctx, "recording a settled run's status on its approvals failed", "run_id", runID, "status", status, "error", err)
		}
	}
	return status, false, nil
}

// StartedAtKey is the run metadata key holding when a run accepted before it
// ran (a background run) started executing, in epoch seconds: its
// created_at stays the time it was accepted. A run executed again (another
// attempt of a queued run) gets the time of that execution.
const StartedAtKey = "started_at"

// StartedAt returns when a run started executing: metadata.started_at when
// the run has it, else its created_at.
func StartedAt(out *run.Output) int64 {
	switch v := out.Metadata[StartedAtKey].(type) {
	case int64:
		return v
	case int:
		return int64(v)
	case float64:
		return int64(v)
	case json.Number:
		if n, err := v.Int64(); err == nil {
			return n
		}
	}
	return out.CreatedAt
}

// keepAcceptance gives a new run whose row was written before it started —
// a background run, accepted PENDING ([run.Input.Accepted]), or a queued
// run executed again — the created_at of that row, the time it was
// accepted, and records when this execution started as
// metadata.started_at; a paused run replayed to its pause keeps the start
// it has. A run without a row (one that starts as it is requested) is left
// as it is, and so is one whose row cannot be read: its saves report the
// store's failure.
func (h *Host) keepAcceptance(ctx context.Context, exec run.Execution, r *Run) {
	if _, fresh := r.spec.First.(*run.RunStarted); !fresh || h.cfg.Store == nil {
		return
	}
	out := r.out
	if !exec.Queued && (out.Input == nil || !out.Input.Accepted) && r.spec.Row == RowAbsent {
		return
	}
	rec, err := h.cfg.Store.GetRun(ctx, out.RunID, out.UserID)
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			h.cfg.Logger.WarnContext(ctx, "reading a starting run's row failed; its created_at is its start", "run_id", out.RunID, "error", err)
		}
		return
	}
	r.stored = true
	// The row's own created_at: an update never changes it, while the run
	// it holds may be one an earlier execution saved with its start.
	accepted := cmp.Or(rec.CreatedAt, rec.Run.CreatedAt)
	if accepted == 0 {
		return
	}
	started := cmp.Or(out.CreatedAt, h.cfg.Now().Unix())
	out.CreatedAt = accepted
	if rec.Run.Status == run.StatusPaused {
		return
	}
	metadata := maps.Clone(out.Metadata) // the input's map, which its caller may still hold
	if metadata == nil {
		metadata = map[string]any{}
	}
	metadata[StartedAtKey] = started
	out.Metadata = metadata
}
