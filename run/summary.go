package run

import (
	"encoding/json"
	"time"
)

// SessionSummary is a model-written summary of a session, carried by the
// [SessionSummaryCompleted] event (Agno's session.summary.SessionSummary).
type SessionSummary struct {
	Summary string   `json:"summary"`
	Topics  []string `json:"topics,omitempty"`
	// UpdatedAt is written as Python's isoformat; zero means unset.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
}

// MarshalJSON writes updated_at the way Python's isoformat does.
func (s SessionSummary) MarshalJSON() ([]byte, error) {
	type plain SessionSummary
	aux := struct {
		plain
		UpdatedAt string `json:"updated_at,omitempty"`
	}{plain: plain(s)}
	if !s.UpdatedAt.IsZero() {
		aux.UpdatedAt = formatPythonISO(s.UpdatedAt)
	}
	return marshalJSON(aux)
}

// UnmarshalJSON reads updated_at from an ISO 8601 string.
func (s *SessionSummary) UnmarshalJSON(data []byte) error {
	type plain SessionSummary
	aux := struct {
		*plain
		UpdatedAt string `json:"updated_at"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(data, &aux); err != nil {
		return err
	}
	s.UpdatedAt = time.Time{}
	if aux.UpdatedAt != "" {
		parsed, err := parsePythonISO(aux.UpdatedAt)
		if err != nil {
			return err
		}
		s.UpdatedAt = parsed
	}
	return nil
}
