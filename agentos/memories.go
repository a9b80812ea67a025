package agentos

import (
	"cmp"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agnogo/agnogo/storage"
)

// memoryRoutes mounts the user-memory routes (agentos-api.md §9).
func (o *OS) memoryRoutes(mux *http.ServeMux) { o.mount(mux, o.memoryEndpoints()) }

// memoryEndpoints lists the memory routes with the scope each needs.
func (o *OS) memoryEndpoints() []endpoint {
	return []endpoint{
		{"POST /memories", "memories", "write", "", o.handleCreateMemory},
		{"GET /memories", "memories", "read", "", o.handleListMemories},
		{"DELETE /memories", "memories", "delete", "", o.handleDeleteMemories},
		{"GET /memories/{memory_id}", "memories", "read", "memory_id", o.handleGetMemory},
		{"PATCH /memories/{memory_id}", "memories", "write", "memory_id", o.handleUpdateMemory},
		{"DELETE /memories/{memory_id}", "memories", "delete", "memory_id", o.handleDeleteMemory},
		{"GET /memory_topics", "memories", "read", "", o.handleMemoryTopics},
		{"GET /user_memory_stats", "memories", "read", "", o.handleUserMemoryStats},
	}
}

// maxMemoryChars bounds a memory's text, in characters, as Agno's
// UserMemoryCreateSchema does.
const maxMemoryChars = 5000

// deleteChunk is how many memory ids one bulk delete statement takes.
const deleteChunk = 500

// memorySortColumns are the sort_by values GET /memories accepts.
var memorySortColumns = []string{"updated_at", "created_at", "memory_id"}

// userMemorySchema is a memory as the API returns it (Agno's
// UserMemorySchema). Timestamps are epoch seconds (agentos-api.md §1).
type userMemorySchema struct {
	MemoryID  string   `json:"memory_id"`
	Memory    string   `json:"memory"`
	Topics    []string `json:"topics"`
	AgentID   *string  `json:"agent_id"`
	TeamID    *string  `json:"team_id"`
	UserID    *string  `json:"user_id"`
	CreatedAt int64    `json:"created_at"`
	UpdatedAt int64    `json:"updated_at"`
}

func memorySchema(m *storage.Memory) userMemorySchema {
	return userMemorySchema{
		MemoryID: m.MemoryID, Memory: m.Memory, Topics: orEmpty(m.Topics),
		AgentID: nullIfEmpty(m.AgentID), TeamID: nullIfEmpty(m.TeamID), UserID: nullIfEmpty(m.UserID),
		CreatedAt: m.CreatedAt, UpdatedAt: cmp.Or(m.UpdatedAt, m.CreatedAt),
	}
}

// nullIfEmpty is s, or JSON null when empty.
func nullIfEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// orEmpty is list, or an empty list (JSON []) when nil.
func orEmpty(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}

// userStatsSchema is one user's line of GET /user_memory_stats.
type userStatsSchema struct {
	UserID              string `json:"user_id"`
	TotalMemories       int    `json:"total_memories"`
	LastMemoryUpdatedAt int64  `json:"last_memory_updated_at"`
}

// memoryText reads and checks the memory field: 1..5000 characters.
func memoryText(body *jsonBody, required bool) (string, bool) {
	if !body.has("memory") {
		if required {
			body.issue(missingField("memory"))
		}
		return "", false
	}
	before := len(body.issues)
	text := body.str("memory")
	if len(body.issues) > before {
		return "", false
	}
	switch n := utf8.RuneCountInString(text); {
	case n < 1:
		body.invalid("memory", "String should have at least 1 character", "string_too_short")
	case n > maxMemoryChars:
		body.invalid("memory", fmt.Sprintf("String should have at most %d characters", maxMemoryChars), "string_too_long")
	}
	return text, true
}

func (o *OS) handleCreateMemory(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSONObject(w, r, true)
	if !ok {
		return
	}
	text, _ := memoryText(body, true)
	topics := body.strings("topics")
	requestedUser := body.str("user_id")
	if body.failed(w) {
		return
	}
	userID := o.userScope(r, requestedUser)
	if userID == "" {
		writeError(w, http.StatusBadRequest, "User ID is required")
		return
	}
	stored, err := o.cfg.Store.UpsertMemory(r.Context(), &storage.Memory{
		MemoryID: newID(), Memory: text, Topics: orEmpty(topics), UserID: userID,
	})
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	// Agno answers 200, not 201, for a created memory.
	writeJSON(w, http.StatusOK, memorySchema(stored))
}

func (o *OS) handleListMemories(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	q := newQueryReader(r)
	page := q.pagination()
	sortBy := q.enum("sort_by", "updated_at", memorySortColumns...)
	sortOrder := q.sortOrder()
	if q.failed(w) {
		return
	}
	memories, total, err := o.cfg.Store.ListMemories(r.Context(), storage.MemoryQuery{
		UserID:    o.userScope(r, q.str("user_id")),
		AgentID:   q.str("agent_id"),
		TeamID:    q.str("team_id"),
		Topics:    topicsParam(q.values["topics"]),
		Search:    q.str("search_content"),
		SortBy:    sortBy,
		SortOrder: sortOrder,
		Page:      page.store(),
	})
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	items := make([]userMemorySchema, 0, len(memories))
	for _, m := range memories {
		items = append(items, memorySchema(m))
	}
	writeJSON(w, http.StatusOK, paginate(items, page, total, started))
}

// topicsParam reads the topics filter: comma-separated, as Agno's
// parse_topics takes it, and also repeatable.
func topicsParam(values []string) []string {
	var topics []string
	for _, v := range values {
		for topic := range strings.SplitSeq(v, ",") {
			if topic = strings.TrimSpace(topic); topic != "" {
				topics = append(topics, topic)
			}
		}
	}
	return topics
}

func (o *OS) handleGetMemory(w http.ResponseWriter, r *http.Request) {
	memoryID := r.PathValue("memory_id")
	m, err := o.cfg.Store.GetMemory(r.Context(), memoryID, o.userScope(r, r.URL.Query().Get("user_id")))
	if err != nil {
		o.writeMemoryError(w, r, memoryID, err)
		return
	}
	writeJSON(w, http.StatusOK, memorySchema(m))
}

// handleUpdateMemory changes a memory's text and topics. Unlike Agno, whose
// PATCH upserts a whole memory (creating it when the id is unknown), a
// missing memory is a 404 and an absent field is left as it was.
func (o *OS) handleUpdateMemory(w http.ResponseWriter, r *http.Request) {
	body, ok := readJSONObject(w, r, true)
	if !ok {
		return
	}
	text, setText := memoryText(body, false)
	topics, setTopics := body.strings("topics"), body.has("topics")
	requestedUser := cmp.Or(body.str("user_id"), r.URL.Query().Get("user_id"))
	if body.failed(w) {
		return
	}
	memoryID := r.PathValue("memory_id")
	ctx := r.Context()
	m, err := o.cfg.Store.GetMemory(ctx, memoryID, o.userScope(r, requestedUser))
	if err != nil {
		o.writeMemoryError(w, r, memoryID, err)
		return
	}
	if setText {
		m.Memory = text
	}
	if setTopics {
		m.Topics = orEmpty(topics)
	}
	m.UpdatedAt = 0 // the store stamps the update
	stored, err := o.cfg.Store.UpsertMemory(ctx, m)
	if err != nil {
		o.writeMemoryError(w, r, memoryID, err)
		return
	}
	writeJSON(w, http.StatusOK, memorySchema(stored))
}

func (o *OS) handleDeleteMemory(w http.ResponseWriter, r *http.Request) {
	memoryID := r.PathValue("memory_id")
	deleted, err := o.cfg.Store.DeleteMemories(r.Context(), []string{memoryID}, o.userScope(r, r.URL.Query().Get("user_id")))
	if err == nil && deleted == 0 {
		err = storage.ErrNotFound
	}
	if err != nil {
		o.writeMemoryError(w, r, memoryID, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleDeleteMemories deletes memories by id: the body is Agno's
// DeleteMemoriesRequest {"memory_ids": [...], "user_id": ...} or a bare
// list of ids. Ids that are unknown, or not the caller's, are skipped.
func (o *OS) handleDeleteMemories(w http.ResponseWriter, r *http.Request) {
	data, ok := readBody(w, r)
	if !ok {
		return
	}
	var ids []string
	requestedUser := r.URL.Query().Get("user_id")
	if trimmed := strings.TrimSpace(string(data)); strings.HasPrefix(trimmed, "[") {
		list, msg := decodeStringList([]byte(trimmed))
		switch {
		case msg != "":
			writeValidation(w, validationIssue{Loc: []string{"body"}, Msg: msg, Type: "list_type"})
			return
		case len(list) == 0:
			writeValidation(w, validationIssue{Loc: []string{"body"}, Msg: "List should have at least 1 item after validation, not 0", Type: "too_short"})
			return
		}
		ids = list
	} else {
		body, ok := parseJSONObject(w, data, true)
		if !ok {
			return
		}
		ids = body.requiredList("memory_ids")
		requestedUser = cmp.Or(body.str("user_id"), requestedUser)
		if body.failed(w) {
			return
		}
	}
	userID := o.userScope(r, requestedUser)
	// In chunks, so a long list never exceeds a driver's bound-parameter limit.
	for chunk := range slices.Chunk(ids, deleteChunk) {
		if _, err := o.cfg.Store.DeleteMemories(r.Context(), chunk, userID); err != nil {
			o.writeStoreError(w, r, err)
			return
		}
	}
	w.WriteHeader(http.StatusNoContent)
}

// handleMemoryTopics lists the distinct topics of the caller's memories,
// sorted. The store has no topics query, so the scope's memories are read
// whole; it is the admin view of one database, not a hot path.
func (o *OS) handleMemoryTopics(w http.ResponseWriter, r *http.Request) {
	memories, _, err := o.cfg.Store.ListMemories(r.Context(), storage.MemoryQuery{UserID: o.userScope(r, r.URL.Query().Get("user_id"))})
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	topics := []string{}
	for _, m := range memories {
		topics = append(topics, m.Topics...)
	}
	slices.Sort(topics)
	writeJSON(w, http.StatusOK, slices.Compact(topics))
}

// handleUserMemoryStats counts memories per user, the most recently
// updated user first, one page at a time. Like the topics, it is computed
// from the scope's memories, as the store has no grouping query; memories
// without a user are not counted.
func (o *OS) handleUserMemoryStats(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	q := newQueryReader(r)
	page := q.pagination()
	if q.failed(w) {
		return
	}
	memories, _, err := o.cfg.Store.ListMemories(r.Context(), storage.MemoryQuery{UserID: o.userScope(r, q.str("user_id"))})
	if err != nil {
		o.writeStoreError(w, r, err)
		return
	}
	byUser := map[string]*userStatsSchema{}
	var stats []userStatsSchema
	for _, m := range memories {
		if m.UserID == "" {
			continue
		}
		s, ok := byUser[m.UserID]
		if !ok {
			s = &userStatsSchema{UserID: m.UserID}
			byUser[m.UserID] = s
		}
		s.TotalMemories++
		s.LastMemoryUpdatedAt = max(s.LastMemoryUpdatedAt, cmp.Or(m.UpdatedAt, m.CreatedAt))
	}
	for _, s := range byUser {
		stats = append(stats, *s)
	}
	slices.SortFunc(stats, func(a, b userStatsSchema) int {
		return cmp.Or(cmp.Compare(b.LastMemoryUpdatedAt, a.LastMemoryUpdatedAt), cmp.Compare(a.UserID, b.UserID))
	})
	total := len(stats)
	from, end := total, total
	if skipped := max(page.Page, 1) - 1; skipped <= total/page.Limit {
		from = skipped * page.Limit
	}
	if page.Limit < end-from {
		end = from + page.Limit
	}
	writeJSON(w, http.StatusOK, paginate(stats[from:end], page, total, started))
}

// writeMemoryError answers a failed memory call, wording not-found as Agno
// does.
func (o *OS) writeMemoryError(w http.ResponseWriter, r *http.Request, memoryID string, err error) {
	if errors.Is(err, storage.ErrNotFound) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Memory with ID %s not found", memoryID))
		return
	}
	o.writeStoreError(w, r, err)
}
