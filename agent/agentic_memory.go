package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/agnogo/agnogo/storage"
	"github.com/agnogo/agnogo/tool"
)

// AgenticMemoryToolName is the tool [Config.EnableAgenticMemory] gives the
// model, named as Agno names it.
const AgenticMemoryToolName = "update_user_memory"

// The actions of the update_user_memory tool.
const (
	memoryActionAdd    = "add"
	memoryActionUpdate = "update"
	memoryActionDelete = "delete"
	memoryActionList   = "list"
	memoryActionClear  = "clear"
)

// agenticMemoryDescription tells the model what the tool is for and when to
// call it; it stands in for the guidance Agno adds to the system message.
const agenticMemoryDescription = "Manage your long-term memories about the user you are talking to. " +
	"When the user tells you something worth remembering across conversations (name, preferences, goals, " +
	"circumstances), call it with the fact as one short third-person sentence in memory (and one or two lowercase " +
	"topics): action add is the default. Use update or delete with a memory_id (add and list return them) when a " +
	"fact changed or the user asks you to forget it, list to see what you remember, and clear only when the user asks " +
	"you to forget everything. Tell the user what you remembered or forgot."

// agenticMemoryParameters is the tool's parameters schema.
var agenticMemoryParameters = json.RawMessage(`{"type":"object","properties":{` +
	`"action":{"type":"string","enum":["add","update","delete","list","clear"],"description":"what to do; defaults to add"},` +
	`"memory":{"type":"string","description":"the fact, as one short third-person sentence (add, update)"},` +
	`"topics":{"type":"array","items":{"type":"string"},"description":"one or two lowercase topics (add, update)"},` +
	`"memory_id":{"type":"string","description":"the memory to update or delete"}},"additionalProperties":false}`)

// memoryToolArgs are the arguments of update_user_memory.
type memoryToolArgs struct {
	Action   string   `json:"action"`
	Memory   string   `json:"memory"`
	Topics   []string `json:"topics"`
	MemoryID string   `json:"memory_id"`
}

// memoryToolEntry is a memory as the tool reports it to the model.
type memoryToolEntry struct {
	MemoryID string   `json:"memory_id"`
	Memory   string   `json:"memory"`
	Topics   []string `json:"topics,omitempty"`
}

// memoryToolResult is what one call of update_user_memory did.
type memoryToolResult struct {
	Status   string            `json:"status"`
	MemoryID string            `json:"memory_id,omitempty"`
	Memory   string            `json:"memory,omitempty"`
	Topics   []string          `json:"topics,omitempty"`
	Deleted  *int              `json:"deleted,omitempty"`
	Memories []memoryToolEntry `json:"memories,omitempty"`
}

// agenticMemoryTool builds update_user_memory. Each call acts on the
// memories of the run's user, read from ctx, in one store operation, with
// no model call: the model's arguments are the memory.
func (a *Agent) agenticMemoryTool() (tool.Tool, error) {
	return tool.Func(tool.Config{Name: AgenticMemoryToolName, Description: agenticMemoryDescription}, agenticMemoryParameters,
		func(ctx context.Context, raw json.RawMessage) (string, error) {
			var args memoryToolArgs
			if err := json.Unmarshal(raw, &args); err != nil {
				return "", fmt.Errorf("%s: %w", AgenticMemoryToolName, err)
			}
			userID, _ := ctx.Value(userKey{}).(string)
			if userID == "" {
				return "", errors.New("this run has no user id, so there is no user to remember anything about; nothing was stored")
			}
			result, err := a.applyMemoryAction(ctx, userID, args)
			if err != nil {
				return "", err
			}
			encoded, err := json.Marshal(result)
			if err != nil {
				return "", fmt.Errorf("%s: %w", AgenticMemoryToolName, err)
			}
			return string(encoded), nil
		})
}

// applyMemoryAction carries out one update_user_memory call for userID.
func (a *Agent) applyMemoryAction(ctx context.Context, userID string, args memoryToolArgs) (*memoryToolResult, error) {
	text := strings.TrimSpace(args.Memory)
	switch action := strings.ToLower(strings.TrimSpace(args.Action)); action {
	case "", memoryActionAdd:
		if text == "" {
			return nil, errors.New("add needs the fact to remember in memory")
		}
		return a.addMemory(ctx, userID, text, args.Topics)
	case memoryActionUpdate:
		if args.MemoryID == "" || text == "" {
			return nil, errors.New("update needs the memory_id of the memory to change and its new text in memory")
		}
		existing, err := a.cfg.Store.GetMemory(ctx, args.MemoryID, userID)
		if errors.Is(err, storage.ErrNotFound) {
			return nil, fmt.Errorf("no memory %q of this user: call with action list to see the memory ids", args.MemoryID)
		}
		if err != nil {
			return nil, fmt.Errorf("read memory %s: %w", args.MemoryID, err)
		}
		existing.Memory = text
		if args.Topics != nil {
			existing.Topics = args.Topics
		}
		existing.UpdatedAt = 0 // the store stamps it
		stored, err := a.cfg.Store.UpsertMemory(ctx, existing)
		if err != nil {
			return nil, fmt.Errorf("update memory %s: %w", args.MemoryID, err)
		}
		return &memoryToolResult{Status: "updated", MemoryID: stored.MemoryID, Memory: stored.Memory, Topics: stored.Topics}, nil
	case memoryActionDelete:
		if args.MemoryID == "" {
			return nil, errors.New("delete needs the memory_id of the memory to forget")
		}
		deleted, err := a.cfg.Store.DeleteMemories(ctx, []string{args.MemoryID}, userID)
		if err != nil {
			return nil, fmt.Errorf("delete memory %s: %w", args.MemoryID, err)
		}
		if deleted == 0 {
			return nil, fmt.Errorf("no memory %q of this user: call with action list to see the memory ids", args.MemoryID)
		}
		return &memoryToolResult{Status: "deleted", MemoryID: args.MemoryID}, nil
	case memoryActionList:
		memories, err := a.userMemories(ctx, userID)
		if err != nil {
			return nil, err
		}
		entries := make([]memoryToolEntry, len(memories))
		for i, m := range memories {
			entries[i] = memoryToolEntry{MemoryID: m.MemoryID, Memory: m.Memory, Topics: m.Topics}
		}
		return &memoryToolResult{Status: "listed", Memories: entries}, nil
	case memoryActionClear:
		return a.clearMemories(ctx, userID)
	default:
		return nil, fmt.Errorf("unknown action %q: use add, update, delete, list or clear", action)
	}
}

// addMemory stores a new memory of userID, unless the user has one with the
// same text already (whose id it then reports).
func (a *Agent) addMemory(ctx context.Context, userID, text string, topics []string) (*memoryToolResult, error) {
	existing, _, err := a.cfg.Store.ListMemories(ctx, storage.MemoryQuery{UserID: userID, Search: text, Page: storage.Page{Limit: memoryLimit}})
	if err != nil {
		return nil, fmt.Errorf("read memories of %s: %w", userID, err)
	}
	for _, m := range existing {
		if strings.EqualFold(strings.TrimSpace(m.Memory), text) {
			return &memoryToolResult{Status: "already remembered", MemoryID: m.MemoryID, Memory: m.Memory, Topics: m.Topics}, nil
		}
	}
	stored, err := a.cfg.Store.UpsertMemory(ctx, &storage.Memory{MemoryID: a.cfg.NewID(), Memory: text, AgentID: a.cfg.ID,
		UserID: userID, Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("store memory: %w", err)
	}
	return &memoryToolResult{Status: "added", MemoryID: stored.MemoryID, Memory: stored.Memory, Topics: stored.Topics}, nil
}

// clearMemories deletes every memory of userID, a page at a time.
func (a *Agent) clearMemories(ctx context.Context, userID string) (*memoryToolResult, error) {
	total := 0
	for {
		memories, _, err := a.cfg.Store.ListMemories(ctx, storage.MemoryQuery{UserID: userID, Page: storage.Page{Limit: 100}})
		if err != nil {
			return nil, fmt.Errorf("read memories of %s: %w", userID, err)
		}
		if len(memories) == 0 {
			return &memoryToolResult{Status: "cleared", Deleted: &total}, nil
		}
		ids := make([]string, len(memories))
		for i, m := range memories {
			ids[i] = m.MemoryID
		}
		deleted, err := a.cfg.Store.DeleteMemories(ctx, ids, userID)
		if err != nil {
			return nil, fmt.Errorf("delete memories of %s: %w", userID, err)
		}
		total += deleted
		if deleted == 0 {
			return nil, fmt.Errorf("delete memories of %s: the store deleted none of %d", userID, len(ids))
		}
	}
}
