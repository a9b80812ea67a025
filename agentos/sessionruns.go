package agentos

import (
	"context"

	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/storage"
)

// withoutMembersInFlight leaves out of a session's runs the member runs of
// a team run that has not ended (PENDING or RUNNING), and the runs under
// those (a nested team's members). Agno puts a team's member runs into the
// session when it saves the team's run, at its end or when it pauses, so
// a client never sees them beside a team run in flight; agnogo saves each
// run as it starts, and a client that re-reads the session then (agent-ui
// does so as soon as the stream names a new session) would show a
// member's task as the user's next message and its reply in place of the
// team's. A parent outside the page is read from the store; one that cannot
// be read hides nothing. The second result counts the runs left out.
func (o *OS) withoutMembersInFlight(ctx context.Context, records []storage.RunRecord, userID string) ([]storage.RunRecord, int) {
	runs := make(map[string]*run.Output, len(records))
	for _, rec := range records {
		if rec.Run != nil {
			runs[rec.Run.RunID] = rec.Run
		}
	}
	hidden := map[string]bool{}
	var underRunInFlight func(out *run.Output, depth int) bool
	underRunInFlight = func(out *run.Output, depth int) bool {
		if out.ParentRunID == "" || depth > 16 {
			return false
		}
		if h, ok := hidden[out.RunID]; ok {
			return h
		}
		parent, ok := runs[out.ParentRunID]
		if !ok {
			if rec, err := o.cfg.Store.GetRun(ctx, out.ParentRunID, userID); err == nil {
				parent = rec.Run
			}
			runs[out.ParentRunID] = parent
		}
		h := parent != nil && (parent.Status == run.StatusPending || parent.Status == run.StatusRunning || underRunInFlight(parent, depth+1))
		hidden[out.RunID] = h
		return h
	}
	kept := records[:0:0]
	for _, rec := range records {
		if rec.Run != nil && underRunInFlight(rec.Run, 0) {
			continue
		}
		kept = append(kept, rec)
	}
	return kept, len(records) - len(kept)
}
