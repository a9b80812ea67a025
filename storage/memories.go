package storage

// Memory is one row of agno_memories: something learned about a user.
type Memory struct {
	MemoryID string `json:"memory_id"`
	// Memory is the remembered fact. Stored as JSON so Agno's rows read back.
	Memory   string   `json:"memory"`
	Input    string   `json:"input,omitempty"`
	AgentID  string   `json:"agent_id,omitempty"`
	TeamID   string   `json:"team_id,omitempty"`
	UserID   string   `json:"user_id,omitempty"`
	Topics   []string `json:"topics,omitempty"`
	Feedback string   `json:"feedback,omitempty"`
	// CreatedAt and UpdatedAt are epoch seconds, set by the store when zero.
	CreatedAt int64 `json:"created_at"`
	UpdatedAt int64 `json:"updated_at"`
}

// MemoryQuery filters, sorts and pages [MemoryStore.ListMemories].
type MemoryQuery struct {
	// UserID scopes the listing to one user.
	UserID  string
	AgentID string
	TeamID  string
	// Topics keeps memories that carry any of these topics.
	Topics []string
	// Search keeps memories whose text contains this, case-insensitively.
	Search string
	// SortBy is created_at, updated_at or memory_id. Defaults to updated_at.
	SortBy string
	// SortOrder defaults to desc.
	SortOrder SortOrder
	Page
}
