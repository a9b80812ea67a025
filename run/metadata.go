package run

import (
	"encoding/json"
	"fmt"
)

// Keys agnogo and Agno use in [Output.Metadata].
const (
	// MetadataAttempts holds a run's attempt history, a list of [Attempt].
	MetadataAttempts = "attempts"
	// MetadataWarnings holds the warnings of a run that still completed, a list
	// of [Warning].
	MetadataWarnings = "warnings"
)

// Attempt is one entry of metadata["attempts"], written when a run needed more
// than one attempt (agent, model or external-agent retries, or a durable-queue
// re-attempt). The list is oldest first.
type Attempt struct {
	// Attempt is the 1-based attempt number.
	Attempt int `json:"attempt"`
	// Error is the failure message; nil (JSON null) for the attempt that succeeded.
	Error *string `json:"error"`
	// StartedAt and EndedAt are epoch seconds.
	StartedAt int64 `json:"started_at"`
	EndedAt   int64 `json:"ended_at"`
}

// Failed reports whether the attempt ended in an error.
func (a Attempt) Failed() bool { return a.Error != nil }

// Warning is one entry of metadata["warnings"]: something went wrong that did
// not fail the run, e.g. {type: "transcript_persistence_failed"}.
type Warning struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Error   string `json:"error,omitempty"`
}

// Attempts returns the run's attempt history, oldest first; nil when none was
// recorded. The list may hold [Attempt] values or, after a JSON round trip,
// plain maps; both are read.
func (o *Output) Attempts() ([]Attempt, error) {
	return metadataList[Attempt](o.Metadata, MetadataAttempts)
}

// AppendAttempt adds one entry to the run's attempt history.
func (o *Output) AppendAttempt(attempt Attempt) error {
	return appendMetadataList(o, MetadataAttempts, attempt)
}

// Warnings returns the run's warnings, oldest first; nil when there are none.
func (o *Output) Warnings() ([]Warning, error) {
	return metadataList[Warning](o.Metadata, MetadataWarnings)
}

// AppendWarning adds one warning to the run.
func (o *Output) AppendWarning(warning Warning) error {
	return appendMetadataList(o, MetadataWarnings, warning)
}

// metadataList reads metadata[key] as a list of T, whatever form it is held in.
func metadataList[T any](metadata map[string]any, key string) ([]T, error) {
	value, ok := metadata[key]
	if !ok || value == nil {
		return nil, nil
	}
	if list, ok := value.([]T); ok {
		return append([]T(nil), list...), nil
	}
	encoded, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("read run metadata %q: %w", key, err)
	}
	var list []T
	if err := json.Unmarshal(encoded, &list); err != nil {
		return nil, fmt.Errorf("read run metadata %q: %w", key, err)
	}
	return list, nil
}

// appendMetadataList appends item to metadata[key], storing the list as []T.
func appendMetadataList[T any](o *Output, key string, item T) error {
	list, err := metadataList[T](o.Metadata, key)
	if err != nil {
		return err
	}
	if o.Metadata == nil {
		o.Metadata = map[string]any{}
	}
	o.Metadata[key] = append(list, item)
	return nil
}
