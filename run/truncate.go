package run

import "strings"

// Cutting a run's conversation short, as continue_from, forks and checkpoint
// snapshots do (runtime.md §12): the cut never separates a tool call from its
// results, and tools and requirements of dropped messages go with them.

// SafeCut moves a cut at k (keep messages[:k]) down until no tool call is
// separated from its results: the kept messages never end with an assistant
// turn whose tool results were dropped, nor with part of a turn's results.
// k is clamped to [0, len(messages)].
func SafeCut(messages []*Message, k int) int {
	k = max(0, min(k, len(messages)))
	for k > 0 {
		if prev := messages[k-1]; prev.Role == RoleAssistant && len(prev.ToolCalls) > 0 {
			k--
			continue
		}
		if k < len(messages) && messages[k].Role == RoleTool {
			k--
			continue
		}
		break
	}
	return k
}

// KeptTools returns the tool executions whose calls survive in messages,
// with the calls those calls made of other tools (a CodeMode program's,
// whose ids are the making call's id, a dot and a number).
func KeptTools(tools []*ToolExecution, messages []*Message) []*ToolExecution {
	calls := map[string]bool{}
	for _, msg := range messages {
		for _, call := range msg.ToolCalls {
			calls[call.ID] = true
		}
	}
	var kept []*ToolExecution
	for _, t := range tools {
		id := t.ToolCallID
		if dot := strings.LastIndexByte(id, '.'); !calls[id] && dot > 0 {
			id = id[:dot]
		}
		if calls[id] {
			kept = append(kept, t)
		}
	}
	return kept
}

// KeptRequirements returns the requirements whose tools survive in tools,
// relinked to those tools. The requirements are updated in place.
func KeptRequirements(reqs []*Requirement, tools []*ToolExecution) []*Requirement {
	byID := map[string]*ToolExecution{}
	children := map[string]bool{}
	for _, t := range tools {
		byID[t.ToolCallID] = t
		if t.ChildRunID != "" {
			children[t.ChildRunID] = true
		}
	}
	var kept []*Requirement
	for _, r := range reqs {
		if r.ToolExecution == nil {
			continue
		}
		if r.MemberRunID != "" {
			// A member's requirement stays with the call that delegated to
			// the member; its tool is the member's.
			if children[r.MemberRunID] {
				kept = append(kept, r)
			}
			continue
		}
		if t, ok := byID[r.ToolExecution.ToolCallID]; ok {
			r.ToolExecution = t
			kept = append(kept, r)
		}
	}
	return kept
}

// Snapshot returns a copy of the run as of message k: its messages cut at
// [SafeCut], the tools and requirements of dropped messages pruned, and
// LastCheckpointAtMessageIndex set to the cut. o is not modified.
func (o *Output) Snapshot(k int) *Output {
	snap := *o
	cut := SafeCut(o.Messages, k)
	snap.Messages = make([]*Message, cut)
	for i, msg := range o.Messages[:cut] {
		copied := *msg
		snap.Messages[i] = &copied
	}
	snap.LastCheckpointAtMessageIndex = &cut
	snap.Tools = KeptTools(o.Tools, snap.Messages)
	reqs := make([]*Requirement, 0, len(o.Requirements))
	for _, r := range o.Requirements {
		if r != nil {
			copied := *r
			reqs = append(reqs, &copied)
		}
	}
	snap.Requirements = KeptRequirements(reqs, snap.Tools)
	return &snap
}
