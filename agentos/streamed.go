package agentos

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/agnogo/agnogo/eventlog"
	"github.com/agnogo/agnogo/run"
)

// A run in flight is listed, and read, with the content it has streamed so
// far. Its row holds no answer until the run ends (a row is saved as the run
// starts and after each tool batch, not per token), so a client that
// re-reads a session's runs while a reply streams — the Agno chat UI does
// as soon as RunStarted names a new session, and rebuilds the chat from
// what it gets — would otherwise be handed a reply with less text than it
// has already shown. The text is the RunContent deltas in the run's event
// stream, wherever the run executes: this process's event log, or the
// durable queue's stream for a run another replica executes.

// withStreamed returns out as a client should see it: unchanged for a run
// that is over or has not started, and for one RUNNING a copy whose content
// is the text streamed so far when that is longer than what the row holds.
func (o *OS) withStreamed(ctx context.Context, out *run.Output) *run.Output {
	if out == nil || out.Status != run.StatusRunning {
		return out // over, or not started (a PENDING run has streamed nothing yet)
	}
	stored, _ := out.Content.(string)
	if out.Content != nil && stored == "" {
		return out // a structured answer is not built from deltas
	}
	text, ok := streamedText(out.RunID, o.streamedEntries(ctx, out))
	if !ok || len(text) <= len(stored) {
		return out
	}
	view := *out
	view.Content, view.ContentType = text, "str"
	return &view
}

// streamedEntries is what the run has streamed so far, wherever it
// executes.
func (o *OS) streamedEntries(ctx context.Context, out *run.Output) []eventlog.Entry {
	entries, _ := o.events.Snapshot(ctx, out.RunID, -1)
	return entries
}

// streamedText joins the text deltas of run runID's own RunContent (or
// TeamRunContent) entries in order, as a client appending them has them;
// false when there are none. The deltas of a team's members, passed on in
// its stream, are not the team's answer.
func streamedText(runID string, entries []eventlog.Entry) (string, bool) {
	var text strings.Builder
	found := false
	for _, entry := range entries {
		if entry.Name != run.EventRunContent && entry.Name != run.TeamEventName(run.EventRunContent) {
			continue
		}
		var delta struct {
			RunID   string `json:"run_id"`
			Content any    `json:"content"`
		}
		if json.Unmarshal(entry.Data, &delta) != nil || (delta.RunID != "" && delta.RunID != runID) {
			continue
		}
		if s, ok := delta.Content.(string); ok && s != "" {
			text.WriteString(s)
			found = true
		}
	}
	return text.String(), found
}
