package storage

// ToolResult is one offloaded tool result (a row of agno_tool_results).
type ToolResult struct {
	// ResultID is derived from (session, run, tool call).
	ResultID string `json:"result_id"`
	// Namespace groups results; agnogo uses the session id.
	Namespace string `json:"namespace"`
	// Path names the result within its namespace.
	Path       string `json:"path"`
	SessionID  string `json:"session_id,omitempty"`
	RunID      string `json:"run_id,omitempty"`
	ToolCallID string `json:"tool_call_id,omitempty"`
	ToolName   string `json:"tool_name,omitempty"`
	// ArgsHash fingerprints the call's arguments.
	ArgsHash    string `json:"args_hash,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	SizeBytes   int64  `json:"size_bytes"`
	LineCount   int64  `json:"line_count"`
	// Preview is the head of the result shown in the envelope.
	Preview string `json:"preview,omitempty"`
	UserID  string `json:"user_id,omitempty"`
	// CreatedAt and ExpiresAt are epoch seconds; ExpiresAt 0 never expires.
	CreatedAt int64 `json:"created_at"`
	ExpiresAt int64 `json:"expires_at,omitempty"`
	// Content is the whole result.
	Content string `json:"-"`
}
