package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/model"
	"github.com/agnogo/agnogo/run"
	"github.com/agnogo/agnogo/runhost"
	"github.com/agnogo/agnogo/storage"
)

// memoryLimit caps how many of a user's memories are read into a prompt.
const memoryLimit = 50

const memoryInstructions = `You maintain long-term memories about a user for an assistant.
Read the user's latest message and the existing memories. Return the new, durable facts worth remembering about the user
(name, preferences, goals, circumstances) as short third-person sentences, each with one or two lowercase topics.
Do not repeat an existing memory. Return {"memories": []} when there is nothing new.`

var memorySchema = json.RawMessage(`{"type":"object","properties":{"memories":{"type":"array","items":{"type":"object","properties":{"memory":{"type":"string"},"topics":{"type":"array","items":{"type":"string"}}},"required":["memory","topics"],"additionalProperties":false}}},"required":["memories"],"additionalProperties":false}`)

type extractedMemories struct {
	Memories []struct {
		Memory string   `json:"memory"`
		Topics []string `json:"topics"`
	} `json:"memories"`
}

// userMemories reads the user's memories for the system message.
func (a *Agent) userMemories(ctx context.Context, userID string) ([]*storage.Memory, error) {
	memories, err := runhost.Read(ctx, a.host, "memories", userID, func(ctx context.Context) ([]*storage.Memory, error) {
		memories, _, err := a.cfg.Store.ListMemories(ctx, storage.MemoryQuery{UserID: userID, SortBy: "updated_at", SortOrder: storage.SortDesc,
			Page: storage.Page{Limit: memoryLimit}})
		return memories, err
	})
	if err != nil {
		return nil, fmt.Errorf("read memories of %s: %w", userID, err)
	}
	return memories, nil
}

func memoriesPrompt(memories []*storage.Memory) string {
	var b strings.Builder
	b.WriteString("You know these facts about the user:\n")
	for _, m := range memories {
		b.WriteString("- ")
		b.WriteString(m.Memory)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// updateMemories asks the memory model what the run taught about the user
// and stores the new memories. A failure is logged and recorded as a warning
// on the run; it never fails the run.
func (a *Agent) updateMemories(ctx context.Context, st *runState, input string) {
	userID := st.out.UserID
	if !a.cfg.UpdateMemoryOnRun || a.cfg.Store == nil || userID == "" || strings.TrimSpace(input) == "" {
		return
	}
	st.r.Emit(&run.MemoryUpdateStarted{})
	added, err := a.extractMemories(ctx, st, userID, input)
	if err != nil {
		a.cfg.Logger.WarnContext(ctx, "updating memories failed", "run_id", st.out.RunID, "error", err)
		_ = st.out.AppendWarning(run.Warning{Type: "memory_update_failed", Message: "the user's memories were not updated", Error: err.Error()})
	}
	memories := make([]any, len(added))
	for i, m := range added {
		memories[i] = m
	}
	st.r.Emit(&run.MemoryUpdateCompleted{Memories: memories})
}

func (a *Agent) extractMemories(ctx context.Context, st *runState, userID, input string) ([]*storage.Memory, error) {
	existing, err := a.userMemories(ctx, userID)
	if err != nil {
		return nil, err
	}
	prompt := "Existing memories:\n(none)"
	if len(existing) > 0 {
		prompt = "Existing memories:\n" + strings.TrimPrefix(memoriesPrompt(existing), "You know these facts about the user:\n")
	}
	now := a.cfg.Now()
	memoryModel := a.cfg.MemoryModel
	if memoryModel == nil {
		memoryModel = a.cfg.Model
	}
	resp, err := memoryModel.Invoke(ctx, &model.Request{
		Messages: []*run.Message{
			a.newMessage(run.RoleSystem, memoryInstructions+"\n\n"+prompt, now),
			a.newMessage(run.RoleUser, input, now),
		},
		ResponseFormat: &model.ResponseFormat{Name: "memories", Schema: memorySchema, Strict: true},
	})
	if err != nil {
		return nil, fmt.Errorf("memory model: %w", err)
	}
	info := memoryModel.Info()
	usage := run.ModelMetrics{Metrics: resp.Usage, ID: info.ID, Provider: info.Provider}
	if usage.Cost == nil {
		usage.Cost = a.cfg.Prices.cost(info.ID, resp.Usage)
	}
	st.out.Metrics.AddModelUsage(run.ModelTypeMemoryModel, usage)
	var extracted extractedMemories
	if err := json.Unmarshal([]byte(extractJSON(resp.Content)), &extracted); err != nil {
		return nil, fmt.Errorf("memory model answered something other than the memories object: %w", err)
	}
	known := map[string]bool{}
	for _, m := range existing {
		known[strings.ToLower(strings.TrimSpace(m.Memory))] = true
	}
	var added []*storage.Memory
	for _, item := range extracted.Memories {
		text := strings.TrimSpace(item.Memory)
		if text == "" || known[strings.ToLower(text)] {
			continue
		}
		known[strings.ToLower(text)] = true
		stored, err := a.cfg.Store.UpsertMemory(ctx, &storage.Memory{MemoryID: a.cfg.NewID(), Memory: text, Input: input,
			AgentID: a.cfg.ID, UserID: userID, Topics: item.Topics})
		if err != nil {
			return added, fmt.Errorf("store memory: %w", err)
		}
		added = append(added, stored)
	}
	return added, nil
}
